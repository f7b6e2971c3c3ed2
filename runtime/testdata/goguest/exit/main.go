// Command exit is a runtime test fixture: it calls os.Exit(3) in Call, which ends the call with guest_exit.
package main

import (
	"encoding/json"
	"os"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "exit",
		Description: "Runtime test fixture: it calls os.Exit(3) in Call, which ends the call with guest_exit.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	os.Exit(3)
	return nil, nil
}
