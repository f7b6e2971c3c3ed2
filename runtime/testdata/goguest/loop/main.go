// Command loop is a runtime test fixture: it spins forever in Call; only the deadline (or fuel) stops it.
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "loop",
		Description: "Runtime test fixture: it spins forever in Call; only the deadline (or fuel) stops it.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	for {
		spins++
	}
}

// spins is global so that the loop has an effect the compiler must keep.
var spins uint64
