// Command grow is a runtime test fixture: it allocates 1 MiB at a time, keeping everything, until memory runs out.
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
		Name:        "grow",
		Description: "Runtime test fixture: it allocates 1 MiB at a time, keeping everything, until memory runs out.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	for {
		hoard = append(hoard, make([]byte, 1<<20))
		hoard[len(hoard)-1][0] = 1 // touch it so the page is really used
	}
}

var hoard [][]byte
