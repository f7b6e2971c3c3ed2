package runtime

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/warden-run/warden/internal/testwasm"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
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
		s, err := d.Validate()
		if err != nil {
			f.Fatal(err)
		}
		schemas[withOutput] = &Tool{Descriptor: d, schemas: s}
	}
	denial := tool.Errorf(tool.KindDenied, "read \"x\": not granted")
	f.Fuzz(func(t *testing.T, out []byte, withOutput bool) {
		for _, d := range []*tool.Error{nil, denial} {
			raw, respErr := extismResponse(out, 1<<16, "fuzz", d)
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

// FuzzMoveImports: moving imports never panics on any bytes, and on a
// module it accepts changes exactly the moved imports' module names.
func FuzzMoveImports(f *testing.F) {
	for _, src := range []string{
		`(module (import "extism:host/env" "http_request" (func (param i64 i64) (result i64))) (import "extism:host/env" "alloc" (func (param i64) (result i64))))`,
		`(module (import "extism:host/env" "log_info" (func (param i64))) (import "m" "t" (table 1 funcref)) (import "m" "g" (global (mut i32))) (import "m" "mem" (memory 1 2)))`,
		`(module (import "extism:host/env" "config_get" (func (param i64) (result i64))) (import "extism:host/env" "config_get" (func (param i64) (result i64))))`,
		`(module)`,
	} {
		f.Add(testwasm.WATString(f, src))
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "ping.wat")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, err := moveImports(wasm, extismEnvModule, extismWardenModule, extismServed)
		if err != nil {
			return
		}
		before, err1 := moduleImports(wasm)
		after, err2 := moduleImports(out)
		if err1 != nil || err2 != nil || len(before) != len(after) {
			t.Fatalf("imports before %v (%v), after %v (%v)", before, err1, after, err2)
		}
		for i := range before {
			want := before[i]
			if want.Module == extismEnvModule && extismServed[want.Name] {
				want.Module = extismWardenModule
			}
			if after[i] != want {
				t.Fatalf("import %d: %+v, want %+v", i, after[i], want)
			}
		}
		if slices.EqualFunc(before, after, func(a, b wb.Import) bool { return a == b }) && !bytes.Equal(out, wasm) {
			t.Fatal("nothing moved, yet the bytes changed")
		}
	})
}

// FuzzLoggingMessage: any notify_logging_message payload is either refused
// or becomes a level and a valid message.
func FuzzLoggingMessage(f *testing.F) {
	for _, seed := range []string{
		`{"level":"warning","logger":"l","data":"careful"}`, `{"level":"nope","data":{"k":[1,2]}}`,
		`{"data":null}`, `{"level":1}`, `"x"`, ``, `{"level":"error","data":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		level, msg, err := loggingMessage(raw)
		if err != nil {
			return
		}
		if _, known := map[int]bool{-4: true, 0: true, 4: true, 8: true}[int(level)]; !known {
			t.Fatalf("level %v", level)
		}
		if utf8.Valid(raw) && !utf8.ValidString(msg) {
			t.Fatalf("valid input, invalid message %q", msg)
		}
	})
}
