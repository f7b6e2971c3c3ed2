package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/tool"
)

// FuzzMapResult feeds guest-shaped result JSON (untrusted: a guest writes it)
// through the runtime's judgment and the mapping. It must never panic,
// mapping must send every block the judgment accepts, and what it sends must
// marshal into a valid MCP result whose failures carry a known kind.
func FuzzMapResult(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}],"structuredContent":{"a":1}}`,
		`{"content":[{"type":"audio","data":"UklGRg","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x","size":3}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"test://x","blob":"AAEC"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"test://x","text":"t","mimeType":"text/plain"}}],"nextCursor":"n"}`,
		`{"content":[],"isError":true,"error":{"kind":"trapped","message":"m","trap":"unreachable"}}`,
		`{"isError":true,"error":{"kind":"guest_exit","message":"m","exitCode":2}}`,
		`{"isError":true}`,
		`{"content":[{"type":"text","text":"x","annotations":{"audience":["user"],"priority":0.3}}]}`,
		`{"structuredContent":[1,2,3]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r tool.Result
		if err := json.Unmarshal(data, &r); err != nil {
			return
		}
		// The runtime judges every block first (tool.Content.Validate);
		// whatever it accepts, mapping must be able to send.
		for i := range r.Content {
			if r.Content[i].Validate() != nil {
				return
			}
		}
		out, err := mapResult(&r)
		if err != nil {
			if json.Valid(r.StructuredContent) || len(r.StructuredContent) == 0 {
				t.Fatalf("mapping refused content the runtime accepts: %v", err)
			}
			return
		}
		raw, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("accepted result does not marshal: %v", err)
		}
		if !json.Valid(raw) {
			t.Fatalf("invalid JSON: %s", raw)
		}
		if len(out.Content) != len(r.Content) && !out.IsError {
			t.Fatalf("%d blocks in, %d out", len(r.Content), len(out.Content))
		}
		if out.IsError {
			kind, _ := out.Meta[tool.MetaKind].(string)
			if !tool.Kind(kind).Valid() || len(out.Content) == 0 {
				t.Fatalf("error result without a valid kind or content: %s", raw)
			}
		}
	})
}
