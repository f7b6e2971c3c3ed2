// Command sleep is a runtime test fixture: it sleeps for an hour; only the deadline stops it.
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
		Name:        "sleep",
		Description: "Runtime test fixture: it sleeps for an hour; only the deadline stops it.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	time.Sleep(time.Hour)
	return warden.Text("woke up"), nil
}
