// Command taskloop is an e2e fixture for MCP tasks: it runs `iterations`
// rounds of `work` fuel-metered steps each (and a sleep of `sleep_ms`, for
// a call that must outlast a timeout), reporting after every round its
// progress as "iteration i of n", and returns how many rounds it ran. A
// test reads how far it got from the task's status message.
package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "taskloop",
		Description: "E2E fixture: counted rounds of fuel-metered work, reporting progress after each; may run as an MCP task.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"iterations":{"type":"integer","minimum":1},"work":{"type":"integer","minimum":0},"sleep_ms":{"type":"integer","minimum":0}},"required":["iterations"]}`),
		Execution:   &tool.Execution{TaskSupport: tool.TaskOptional},
	}
}

type args struct {
	Iterations int `json:"iterations"`
	Work       int `json:"work"`
	SleepMS    int `json:"sleep_ms"`
}

func (fixture) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[args](raw)
	if err != nil {
		return nil, err
	}
	for i := 1; i <= a.Iterations; i++ {
		for range a.Work {
			spins++
		}
		if a.SleepMS > 0 {
			time.Sleep(time.Duration(a.SleepMS) * time.Millisecond)
		}
		ctx.Progress(float64(i), float64(a.Iterations), fmt.Sprintf("iteration %d of %d", i, a.Iterations))
	}
	return warden.Text(fmt.Sprintf("ran %d iterations", a.Iterations)), nil
}

// spins is global so that the loop has an effect the compiler must keep.
var spins uint64
