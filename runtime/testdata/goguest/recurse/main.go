// Command recurse is a runtime test fixture: it recurses without end, exhausting the stack or memory.
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
		Name:        "recurse",
		Description: "Runtime test fixture: it recurses without end, exhausting the stack or memory.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	return warden.Textf("%d", depth(0)), nil
}

// depth never returns; its frame is large enough to grow the stack fast.
func depth(n int) int {
	var pad [64]int
	pad[n%64] = n
	return depth(n+1) + pad[(n+1)%64]
}
