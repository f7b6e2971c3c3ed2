package warden

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/tool"
)

// wireResult is what encodeResult marshals through encoding/json; the fast
// path must produce exactly its bytes.
func marshalWire(r *tool.Result) ([]byte, error) {
	wire := struct {
		Content           []tool.Content  `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		Details           json.RawMessage `json:"details,omitempty"`
		NextCursor        string          `json:"nextCursor,omitempty"`
	}{r.Content, r.StructuredContent, r.Details, r.NextCursor}
	if wire.Content == nil {
		wire.Content = []tool.Content{}
	}
	return json.Marshal(wire)
}

var wireStrings = []string{
	"", "hello", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnew\nline\rcr",
	"\b\f\x00\x01\x1f\x7f", "ü😀 ünïcödé", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate",
	"ends in \xe2\x82", "\ufffd replacement",
}

func checkResult(t *testing.T, r *tool.Result) {
	t.Helper()
	want, wantErr := marshalWire(r)
	got, ok := appendResult(nil, r)
	if wantErr != nil {
		if ok {
			t.Fatalf("fast path encoded what encoding/json refuses (%v): %s", wantErr, got)
		}
		return
	}
	if !ok {
		t.Fatalf("fast path declined a result encoding/json encodes: %s", want)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("fast path differs:\ngot  %s\nwant %s", got, want)
	}
}

func TestAppendResultMatchesEncodingJSON(t *testing.T) {
	size := int64(3)
	for _, s := range wireStrings {
		checkResult(t, &tool.Result{Content: []tool.Content{tool.TextContent(s)}, NextCursor: s})
		checkResult(t, &tool.Result{Content: []tool.Content{{Type: s}}})
	}
	for _, r := range []*tool.Result{
		{},
		{Content: []tool.Content{}},
		{Content: []tool.Content{tool.TextContent("a"), tool.TextContent("")}, StructuredContent: json.RawMessage(` { "a" : [1, 2] } `)},
		{Content: []tool.Content{{Type: tool.ContentImage, Data: "aGk=", MimeType: "image/png"}, {Type: "resource_link", URI: "file:///x", Name: "x", Size: &size}}},
		{Content: []tool.Content{tool.TextContent("x")}, Details: json.RawMessage(`{"k":"<v>"}`)},
		{StructuredContent: json.RawMessage(`{"a":`)},      // invalid: encoding/json refuses
		{Details: json.RawMessage(`nope`)},                 // invalid
		{StructuredContent: json.RawMessage(`{"a":1} {}`)}, // trailing value
	} {
		checkResult(t, r)
	}
}

func FuzzAppendResult(f *testing.F) {
	for _, s := range wireStrings {
		f.Add(s, s, []byte(`{"a":1}`))
	}
	f.Add("x", "", []byte(` [1, {"b": "\u00e9"}] `))
	f.Fuzz(func(t *testing.T, text, cursor string, raw []byte) {
		checkResult(t, &tool.Result{Content: []tool.Content{tool.TextContent(text), {Type: text}}, StructuredContent: raw, NextCursor: cursor})
	})
}

func checkRequest(t *testing.T, b []byte) {
	t.Helper()
	var got tool.Request
	if !decodeRequest(b, &got) {
		return // encoding/json decides
	}
	var want tool.Request
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json: %v", b, err)
	}
	if got.Tool != want.Tool || got.CallID != want.CallID || got.Cursor != want.Cursor || !bytes.Equal(got.Arguments, want.Arguments) {
		t.Fatalf("%q:\nfast %+v\njson %+v", b, got, want)
	}
}

func TestDecodeRequestMatchesEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		fast bool // whether the fast path takes it
	}{
		{`{"tool":"echo","callId":"c-1","arguments":{"text":"hi \"there\" \\ }"}}`, true},
		{` { "arguments" : [1, {"a": [true, null, -1.5e3]}] , "tool" : "t" , "cursor" : "abc" } `, true},
		{`{"tool":"a","arguments":{}}`, true},
		{`{}`, true},
		{`{"tool":"a","tool":"b","arguments":1}`, true},
		{`{"tool":"ü😀","arguments":"x"}`, true},
		{`{"tool":"esc\"aped","arguments":{}}`, false},
		{`{"Tool":"a","arguments":{}}`, false},
		{`{"tool":"a","extra":1,"arguments":{}}`, false},
		{`{"tool":"a","arguments":{"x":1}`, false},
		{`{"tool":"a","arguments":{"x" 1}}`, false},
		{`{"tool":"a","arguments":{}} x`, false},
		{`{"tool":"a",}`, false},
		{`{"arguments":a}`, false},
		{`{"arguments":{"a":tru}}`, false},
		{`{"arguments":["\x"]}`, false},
		{`{"tool":"bad` + "\xff" + `","arguments":{}}`, false},
		{`[]`, false},
		{``, false},
	} {
		var req tool.Request
		if got := decodeRequest([]byte(tc.in), &req); got != tc.fast {
			t.Errorf("decodeRequest(%s) = %v, want %v", tc.in, got, tc.fast)
		}
		checkRequest(t, []byte(tc.in))
	}
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"tool":"echo","callId":"c-1","arguments":{"text":"hi"}}`))
	f.Add([]byte(`{"arguments":[1,[2,{"a":"\"}"}]],"tool":"t","cursor":"c"}`))
	f.Add([]byte(`{"tool":"t","arguments":nul}`))
	f.Fuzz(func(t *testing.T, b []byte) { checkRequest(t, b) })
}

func BenchmarkWire(b *testing.B) {
	req := []byte(`{"tool":"echo","callId":"c-1","arguments":{"text":"hello"}}`)
	res := &tool.Result{Content: []tool.Content{tool.TextContent("hello")}, StructuredContent: json.RawMessage(`{"text":"hello"}`)}
	b.Run("path=fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r tool.Request
			decodeRequest(req, &r)
			appendResult(make([]byte, 0, 256), res)
		}
	})
	b.Run("path=encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r tool.Request
			_ = json.Unmarshal(req, &r)
			_, _ = marshalWire(res)
		}
	})
}
