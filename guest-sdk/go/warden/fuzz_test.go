package warden

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/tool"
)

// FuzzDispatch feeds arbitrary request bytes (which come from the host, and
// through it from a client) to Dispatch: the response must always be one
// JSON object that is either a result or an error of a kind a guest may report.
func FuzzDispatch(f *testing.F) {
	f.Add([]byte(`{"tool":"t","arguments":{"n":1,"s":"x"},"callId":"c","cursor":"k"}`))
	f.Add([]byte(`{"tool":"t","arguments":null}`))
	f.Add([]byte(`{"tool":"t","arguments":{"detail_level":"full","offset":3,"limit":2}}`))
	f.Add([]byte(`{"tool":"other"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"tool":"t","arguments":{"n":"1e400"}}`))
	type args struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	r := NewRegistry(fnTool{name: "t", call: func(ctx *Context, raw json.RawMessage) (*tool.Result, error) {
		a, err := Args[args](raw)
		if err != nil {
			return nil, err
		}
		g, err := NewGuard(raw)
		if err != nil {
			return nil, err
		}
		page, overflow := Page(g, make([]int, a.N%1000), "h")
		if a.S == "panic" {
			panic(a.N)
		}
		return JSON(map[string]any{"n": len(page), "s": a.S, "cursor": ctx.Cursor, "overflow": overflow})
	}})
	f.Fuzz(func(t *testing.T, request []byte) {
		resp := r.Dispatch(request, nil)
		var out struct {
			Content *[]tool.Content `json:"content"`
			Error   *tool.Error     `json:"error"`
		}
		if err := json.Unmarshal(resp, &out); err != nil {
			t.Fatalf("response %q is not JSON: %v", resp, err)
		}
		if (out.Content == nil) == (out.Error == nil) {
			t.Fatalf("response %s is neither a result nor an error", resp)
		}
		if out.Error != nil && !guestKinds[out.Error.Kind] {
			t.Fatalf("kind %q may not come from a guest: %s", out.Error.Kind, resp)
		}
	})
}
