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
	name, ok := decodeRequest(b, &got)
	if !ok {
		return // encoding/json decides
	}
	got.Tool = string(name)
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
		if _, got := decodeRequest([]byte(tc.in), &req); got != tc.fast {
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

// checkScan asserts that scanValue accepts only what encoding/json accepts,
// and that in compact mode it accepts only what json.Compact followed by
// json.HTMLEscape leaves unchanged: appendRaw copies such a value verbatim.
func checkScan(t *testing.T, b []byte) {
	t.Helper()
	if end, ok := scanValue(b, 0, 0, false); ok {
		if !json.Valid(b[:end]) {
			t.Fatalf("scanValue accepted %q, which json.Valid refuses", b[:end])
		}
		if end < len(b) && !json.Valid(b) && skipSpace(b, end) == len(b) {
			t.Fatalf("scanValue(%q) = %d, json.Valid refuses the whole", b, end)
		}
	} else if json.Valid(b) && !bytes.ContainsAny(b, " \t\r\n") && bytes.Count(b, []byte("[")) < maxScanDepth && bytes.Count(b, []byte("{")) < maxScanDepth {
		t.Fatalf("scanValue refused %q, which json.Valid accepts", b)
	}
	end, ok := scanValue(b, 0, 0, true)
	if !ok || end != len(b) {
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		t.Fatalf("compact scan accepted %q, json.Compact: %v", b, err)
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, compact.Bytes())
	if !bytes.Equal(escaped.Bytes(), b) {
		t.Fatalf("compact scan accepted %q, which encoding/json writes as %q", b, escaped.Bytes())
	}
}

func TestScanValueMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e+10`, `-12.0E-3`, `true`, `false`, `null`,
		`{"a":[1,{"b":"\u00e9\"\\\/\b\f\n\r\t"}],"c":null}`, `{"a":"<"}`, `{"a":"\u003c"}`, `{"a":"` + "\u2028" + `"}`,
		`{"a":"` + "\xff\xc3" + `"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, `01`, `1.`, `.5`, `1e`, `-`, `+1`,
		`tru`, `nul`, `{"a" : 1}`, ` {}`, `{} `, `{"a":1,}`, `[1,]`, `{"a"}`, `{1:2}`, `"a` + "\x01" + `"`, `"`, `[`, `{"a":1}{}`,
	} {
		checkScan(t, []byte(s))
	}
	// What json.Marshal makes is compact and HTML-escaped: the fast path
	// must copy it without a scan by encoding/json.
	for _, s := range wireStrings {
		raw, err := json.Marshal(map[string]any{"text": s, s: []any{s, 1.5, true, nil, map[string]string{}}})
		if err != nil {
			t.Fatal(err)
		}
		if end, ok := scanValue(raw, 0, 0, true); !ok || end != len(raw) {
			t.Errorf("compact scan refused json.Marshal's %q", raw)
		}
		checkScan(t, raw)
		checkResult(t, &tool.Result{Content: []tool.Content{tool.TextContent(s)}, StructuredContent: raw, Details: raw})
	}
	deep := bytes.Repeat([]byte("["), maxScanDepth+2)
	deep = append(deep, bytes.Repeat([]byte("]"), maxScanDepth+2)...)
	if _, ok := scanValue(deep, 0, 0, true); ok {
		t.Error("scanValue accepted a value deeper than maxScanDepth")
	}
	checkResult(t, &tool.Result{StructuredContent: deep})
}

func FuzzScanValue(f *testing.F) {
	for _, s := range wireStrings {
		raw, _ := json.Marshal(map[string]string{"text": s})
		f.Add(raw)
		f.Add([]byte(`"` + s + `"`))
	}
	f.Add([]byte(`{"a":[1,-0.5e+3,{"b":"\u00e9\"\\"}],"c":null,"d":true}`))
	f.Add([]byte(` [1, {"b": "\u00e9"}] `))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkScan(t, b)
		checkResult(t, &tool.Result{Content: []tool.Content{tool.TextContent("x")}, StructuredContent: b, Details: b})
	})
}
