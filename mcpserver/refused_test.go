package mcpserver

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// refusingTools is a fakeTools that also refuses tools, as the app does for
// name collisions.
type refusingTools struct {
	*fakeTools
	refusals []Refusal
}

func (r *refusingTools) options(opts Options) Options {
	opts.Refused = r.Refused
	return opts
}

func (r *refusingTools) Refused() []Refusal { return r.refusals }

// TestRefusedInListAndHealthz: the refusals reach a client on every
// tools/list page, over every transport, and /healthz lists them ([] when
// there are none).
func TestRefusedInListAndHealthz(t *testing.T) {
	refusal := Refusal{Tool: "echo", Module: "aaa-evil", Modules: []string{"aaa-evil", "echo"}, Reason: "tool \"echo\" of module aaa-evil is refused"}
	tools := &refusingTools{fakeTools: newFakeTools(desc("a"), desc("b"), desc("echo")), refusals: []Refusal{refusal}}
	s, _ := newServer(t, tools, Options{PageSize: 2})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cs := connect(t, s, tr, nil)
			pages, cursor := 0, ""
			for {
				res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				raw, _ := json.Marshal(res.Meta[tool.MetaRefused])
				var got []Refusal
				if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 || got[0].Module != "aaa-evil" || got[0].Reason != refusal.Reason {
					t.Fatalf("page %d: _meta %s = %s", pages, tool.MetaRefused, raw)
				}
				if cursor = res.NextCursor; cursor == "" {
					break
				}
			}
			if pages != 2 {
				t.Fatalf("%d pages", pages)
			}
		})
	}

	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	health := func() map[string]any {
		resp, err := hs.Client().Get(hs.URL + PathHealthz)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := health(); len(h["refused"].([]any)) != 1 || h["status"] != "ok" {
		t.Fatalf("/healthz = %v", h)
	}
	tools.refusals = nil
	if h := health(); h["refused"] == nil || len(h["refused"].([]any)) != 0 {
		t.Fatalf("/healthz without refusals = %v", h)
	}
	// A Tools that refuses nothing has no _meta entry.
	plain, _ := newServer(t, newFakeTools(desc("a")), Options{})
	res, err := connect(t, plain, transports[0], nil).ListTools(context.Background(), nil)
	if err != nil || res.Meta[tool.MetaRefused] != nil {
		t.Fatalf("plain tools/list: %v %v", err, res.Meta)
	}
}
