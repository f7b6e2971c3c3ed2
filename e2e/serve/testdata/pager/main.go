// Command pager is an e2e fixture: a paginated tool. Called without a
// cursor it answers "page 1" with a next cursor holding "2"; called with a
// cursor it answers "page <cursor>". warden seals the cursor it hands out,
// so the replica test can check that a cursor one replica minted is
// accepted by another sharing server.state_key.
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
		Name:        "pager",
		Description: "E2E fixture: two pages, the second reached by a cursor.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Paginates:   true,
	}
}

func (fixture) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	if ctx.Cursor != "" {
		return warden.Text("page " + ctx.Cursor), nil
	}
	res := warden.Text("page 1")
	res.NextCursor = "2"
	return res, nil
}
