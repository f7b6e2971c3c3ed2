// Command busy is an e2e fixture: it reports progress 1 ("running") so that
// a test knows the guest is executing, then never returns by itself — it
// spins (mode "loop", the default) or sleeps (mode "sleep") until the host
// stops it.
package main

import (
	"encoding/json"
	"time"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "busy",
		Description: "E2E fixture: reports progress 1, then spins or sleeps until stopped.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{"enum":["loop","sleep"]}}}`),
	}
}

type args struct {
	Mode string `json:"mode"`
}

func (fixture) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[args](raw)
	if err != nil {
		return nil, err
	}
	ctx.Progress(1, 0, "running")
	if a.Mode == "sleep" {
		time.Sleep(time.Hour)
		return warden.Text("woke up"), nil
	}
	for {
		spins++
	}
}

// spins is global so that the loop has an effect the compiler must keep.
var spins uint64
