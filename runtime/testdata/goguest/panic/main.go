// Command panic is a runtime test fixture: it panics in Call; the SDK turns that into a failed error.
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
		Name:        "panic",
		Description: "Runtime test fixture: it panics in Call; the SDK turns that into a failed error.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	panic("fixture panic")
}
