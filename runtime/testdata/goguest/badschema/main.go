// Command badschema is a runtime test fixture: of its two tools, "badschema"
// declares an input schema whose root is not an object (so the host must
// reject it, naming the field) and "badschema_valid" is fine and must still
// load and answer "ok".
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(bad{}, valid{}) }

func main() {}

type bad struct{}

func (bad) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "badschema",
		Description: "Runtime test fixture: invalid inputSchema.",
		InputSchema: json.RawMessage(`{"type":"string"}`),
	}
}

func (bad) Call(*warden.Context, json.RawMessage) (*tool.Result, error) {
	return warden.Text("must never run"), nil
}

type valid struct{}

func (valid) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "badschema_valid",
		Description: "Runtime test fixture: the valid tool next to an invalid one.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (valid) Call(*warden.Context, json.RawMessage) (*tool.Result, error) {
	return warden.Text("ok"), nil
}
