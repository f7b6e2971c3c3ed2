package runtime

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/runtime/internal/extism"
	"github.com/warden-run/warden/tool"
)

// FuzzExtismResponse feeds a plugin's call output (both shapes return an
// MCP CallToolResult) through the conversion to the native shape and the
// native response checks. Whatever the plugin returns, the host answers
// with a Result of a valid kind, a success only with valid content, and
// never panics.
func FuzzExtismResponse(f *testing.F) {
	for _, seed := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"no"}],"isError":true}`,
		`{"content":[],"structuredContent":{"text":"x"}}`,
		`{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"_meta":{"a":1}}`,
		`{"content":null}`, `{"content":{}}`, `{"isError":"yes"}`, `[]`, `null`, ``, `{`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///a","text":"t"}}]}`,
		`{"content":[{"type":"text"}],"isError":true,"structuredContent":[1]}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	schemas := map[bool]*Tool{}
	for _, withOutput := range []bool{false, true} {
		d := tool.Descriptor{Name: "fuzz", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}
		if withOutput {
			d.OutputSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)
		}
		s, err := schema.CompileDescriptor(&d)
		if err != nil {
			f.Fatal(err)
		}
		schemas[withOutput] = &Tool{Descriptor: d, schemas: s}
	}
	denial := tool.Errorf(tool.KindDenied, "read \"x\": not granted")
	f.Fuzz(func(t *testing.T, out []byte, withOutput bool) {
		for _, d := range []*tool.Error{nil, denial} {
			raw, respErr := extism.NativeResponse(out, 1<<16, "fuzz", d)
			if respErr == nil && !json.Valid(raw) {
				t.Fatalf("converted response is not JSON: %q", raw)
			}
			res := schemas[withOutput].decodeResponse(raw, respErr)
			switch {
			case res == nil:
				t.Fatal("nil result")
			case res.IsError:
				if res.Error == nil || !res.Error.Kind.Valid() {
					t.Fatalf("error result without a valid kind: %+v", res)
				}
				var reported struct{ Error *tool.Error }
				if d != nil && respErr == nil && json.Unmarshal(raw, &reported) == nil && reported.Error != nil &&
					res.Error.Kind != tool.KindDenied {
					t.Fatalf("a failure the plugin reports after a denial must be denied: %+v", res.Error)
				}
			default:
				for i := range res.Content {
					if err := res.Content[i].Validate(); err != nil {
						t.Fatalf("success with invalid content %d: %v", i, err)
					}
				}
			}
		}
	})
}
