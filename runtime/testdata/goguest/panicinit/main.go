// Command panicinit is a runtime test fixture: it panics while its package is
// initialized, so the module's _initialize export traps and it never loads.
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() {
	warden.Register(fixture{})
	panic("fixture panic during init")
}

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "panicinit",
		Description: "Runtime test fixture: never loads.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(*warden.Context, json.RawMessage) (*tool.Result, error) {
	return warden.Text("unreachable"), nil
}
