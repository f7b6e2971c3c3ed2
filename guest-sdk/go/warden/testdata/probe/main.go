// Command probe exercises every part of the SDK's ABI for wasm_test.go: logs,
// progress, each capability import (whose reply the host allocates through a
// re-entrant warden_alloc), panics and errors.
package main

import (
	"encoding/json"
	"runtime"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(probe{}, fail{}) }

func main() {}

type probe struct{}

func (probe) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "probe",
		Description: "Calls the host and reports what it got.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

type probeArgs struct {
	Capabilities []string `json:"capabilities"`
	Key          string   `json:"key"`
	GC           bool     `json:"gc"`
	Pad          int      `json:"pad"`
}

func (probe) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[probeArgs](args)
	if err != nil {
		return nil, err
	}
	ctx.Log(warden.LevelInfo, "probe "+ctx.CallID)
	ctx.Progress(1, 2, "half")
	ctx.Progress(1, 2, "dropped: not increasing")
	got := map[string]any{}
	for _, c := range a.Capabilities {
		var reply map[string]any
		err := warden.Host(ctx, c, map[string]string{"key": a.Key}, &reply)
		if a.GC {
			// Anything the host still uses must survive a collection.
			runtime.GC()
		}
		if err != nil {
			got[c] = map[string]any{"error": err.Error(), "kind": tool.KindOf(err)}
			continue
		}
		got[c] = reply
	}
	ctx.Progress(2, 2, "done")
	out := map[string]any{"got": got, "callId": ctx.CallID, "pad": strings.Repeat("x", a.Pad)}
	return warden.JSON(out)
}

type fail struct{}

func (fail) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "fail",
		Description: "Fails the way it is told to.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fail) Call(_ *warden.Context, args json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[struct{ How string }](args)
	if err != nil {
		return nil, err
	}
	switch a.How {
	case "panic":
		var m map[string]int
		m["x"] = 1 // a nil-map write: a runtime panic, not a call to panic()
	case "denied":
		return nil, warden.Denied("no access to %s", "secrets")
	}
	return nil, warden.Failed("told to fail: %q", a.How)
}
