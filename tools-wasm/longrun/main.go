// Command longrun is a tool that runs as long as it is asked to: it loops
// a given number of iterations of real work (mixing a 64-bit state), and
// reports progress every few iterations. It declares that it may run as an
// MCP task (execution.taskSupport optional), so a client that supports
// tasks can start it, follow its progress and cancel it (docs/tasks.md,
// where this file is the Go example). It is a test fixture, not a bundled
// tool: cmd/build-tools builds it only when named.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(longrun{}) }

// main is never called: the module is a reactor whose init registers the tool.
func main() {}

type longrun struct{}

type longrunArgs struct {
	// Iterations is how many times the work runs.
	Iterations int64 `json:"iterations"`
	// Every is how many iterations pass between two progress reports.
	Every int64 `json:"every"`
	// Rounds is the work of one iteration: rounds of mixing.
	Rounds int64 `json:"rounds"`
}

var yes = true

func (longrun) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "longrun",
		Title:       "Long run",
		Description: "Runs iterations rounds of work each and returns a checksum of it, reporting progress every few iterations. For trying out long-running calls and tasks.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"iterations":{"type":"integer","minimum":1,"maximum":1000000000,"description":"How many iterations to run."},
			"every":{"type":"integer","minimum":1,"description":"Iterations between two progress reports (default 1000)."},
			"rounds":{"type":"integer","minimum":1,"maximum":1000000,"description":"Rounds of work in one iteration (default 10000)."}},
			"required":["iterations"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"iterations":{"type":"integer"},"checksum":{"type":"string"}},"required":["iterations","checksum"]}`),
		Annotations:  &tool.Annotations{ReadOnlyHint: &yes, IdempotentHint: &yes},
		// The tool may run as a task: then the task budget applies
		// (tools.limits.longrun.task_timeout, task_fuel), not the
		// interactive timeout, and its progress is the task's status.
		Execution: &tool.Execution{TaskSupport: tool.TaskOptional},
	}
}

func (longrun) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[longrunArgs](raw)
	if err != nil {
		return nil, err
	}
	if a.Every == 0 {
		a.Every = 1000
	}
	if a.Rounds == 0 {
		a.Rounds = 10000
	}
	state := uint64(0x9e3779b97f4a7c15)
	for i := int64(1); i <= a.Iterations; i++ {
		state = work(state, a.Rounds)
		if i%a.Every == 0 || i == a.Iterations {
			ctx.Progress(float64(i), float64(a.Iterations), fmt.Sprintf("iteration %d of %d", i, a.Iterations))
		}
	}
	out := struct {
		Iterations int64  `json:"iterations"`
		Checksum   string `json:"checksum"`
	}{a.Iterations, fmt.Sprintf("%016x", state)}
	return warden.WithStructured(warden.Text(fmt.Sprintf("ran %d iterations; checksum %s", out.Iterations, out.Checksum)), out)
}

// work mixes state rounds times (xorshift64*): work the compiler cannot
// skip, whose every round costs fuel.
func work(state uint64, rounds int64) uint64 {
	for range rounds {
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		state *= 0x2545f4914f6cdd1d
	}
	return state
}
