// Command state is a runtime test fixture: it counts its calls in a package variable and returns the count. Under per-call isolation every call returns 1.
package main

import (
	"encoding/json"
	"strconv"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "state",
		Description: "Runtime test fixture: it counts its calls in a package variable and returns the count. Under per-call isolation every call returns 1.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	calls++
	return warden.WithStructured(warden.Text(strconv.Itoa(calls)), map[string]int{"calls": calls})
}

var calls int
