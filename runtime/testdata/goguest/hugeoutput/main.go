// Command hugeoutput is a runtime test fixture: it returns a 5 MiB text result, over the default output limit.
package main

import (
	"encoding/json"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "hugeoutput",
		Description: "Runtime test fixture: it returns a 5 MiB text result, over the default output limit.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	return warden.Text(strings.Repeat("y", 5<<20)), nil
}
