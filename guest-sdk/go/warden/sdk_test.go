package warden

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/tool"
)

// fnTool is a Tool made of functions, for table tests.
type fnTool struct {
	name     string
	call     func(ctx *Context, args json.RawMessage) (*tool.Result, error)
	validate func(args json.RawMessage) error
}

func (f fnTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{Name: f.name, Description: "test", InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func (f fnTool) Call(ctx *Context, args json.RawMessage) (*tool.Result, error) {
	return f.call(ctx, args)
}

type validatingTool struct{ fnTool }

func (v validatingTool) ValidateArgs(args json.RawMessage) error { return v.validate(args) }

func request(name, args string) []byte {
	return []byte(fmt.Sprintf(`{"tool":%q,"arguments":%s,"callId":"c-1","cursor":"cur"}`, name, args))
}

func TestDispatchResults(t *testing.T) {
	cases := []struct {
		name string
		call func(ctx *Context, args json.RawMessage) (*tool.Result, error)
		args string
		want string
	}{
		{"text", func(*Context, json.RawMessage) (*tool.Result, error) { return Text("hi"), nil }, `{}`,
			`{"content":[{"type":"text","text":"hi"}]}`},
		{"nil result", func(*Context, json.RawMessage) (*tool.Result, error) { return nil, nil }, `{}`,
			`{"content":[]}`},
		{"json", func(*Context, json.RawMessage) (*tool.Result, error) { return JSON(map[string]int{"n": 1}) }, `{}`,
			`{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1}}`},
		{"details and cursor", func(*Context, json.RawMessage) (*tool.Result, error) {
			r := WithDetails(Text("x"), map[string]int{"rows": 3})
			r.NextCursor = "next"
			return r, nil
		}, `{}`, `{"content":[{"type":"text","text":"x"}],"details":{"rows":3},"nextCursor":"next"}`},
		{"context fields", func(ctx *Context, args json.RawMessage) (*tool.Result, error) {
			return Textf("%s %s %s", ctx.CallID, ctx.Cursor, args), nil
		}, `{"a":1}`, `{"content":[{"type":"text","text":"c-1 cur {\"a\":1}"}]}`},
		{"null arguments become {}", func(_ *Context, args json.RawMessage) (*tool.Result, error) {
			return Text(string(args)), nil
		}, `null`, `{"content":[{"type":"text","text":"{}"}]}`},
		{"plain error", func(*Context, json.RawMessage) (*tool.Result, error) { return nil, errors.New("disk on fire") }, `{}`,
			`{"error":{"kind":"failed","message":"disk on fire"}}`},
		{"typed error", func(*Context, json.RawMessage) (*tool.Result, error) { return nil, NotFound("no %s", "file") }, `{}`,
			`{"error":{"kind":"not_found","message":"no file"}}`},
		{"wrapped typed error keeps kind and context", func(*Context, json.RawMessage) (*tool.Result, error) {
			return nil, fmt.Errorf("read config: %w", Denied("not granted"))
		}, `{}`, `{"error":{"kind":"denied","message":"read config: denied: not granted"}}`},
		{"host-only kind becomes failed", func(*Context, json.RawMessage) (*tool.Result, error) {
			return nil, tool.Errorf(tool.KindTimeout, "too slow")
		}, `{}`, `{"error":{"kind":"failed","message":"timeout: too slow"}}`},
		{"error with details", func(*Context, json.RawMessage) (*tool.Result, error) {
			return nil, ErrorWithDetails(InvalidArguments("bad"), map[string]string{"field": "x"})
		}, `{}`, `{"error":{"kind":"invalid_arguments","message":"bad"},"details":{"field":"x"}}`},
		{"isError result", func(*Context, json.RawMessage) (*tool.Result, error) {
			r := Text("it broke")
			r.IsError = true
			return r, nil
		}, `{}`, `{"error":{"kind":"failed","message":"it broke"}}`},
		{"result carrying an error", func(*Context, json.RawMessage) (*tool.Result, error) {
			return WithDetails(&tool.Result{Error: Cancelled("stopped")}, 1), nil
		}, `{}`, `{"error":{"kind":"cancelled","message":"stopped"},"details":1}`},
		{"unencodable result", func(*Context, json.RawMessage) (*tool.Result, error) {
			return &tool.Result{StructuredContent: json.RawMessage(`{bad`)}, nil
		}, `{}`, `{"error":{"kind":"failed","message":"encode result: json: error calling MarshalJSON for type json.RawMessage: invalid character 'b' looking for beginning of object key string"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewRegistry(fnTool{name: "t", call: c.call})
			if got := string(r.Dispatch(request("t", c.args), nil)); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestDispatchPanic(t *testing.T) {
	r := NewRegistry(fnTool{name: "p", call: func(*Context, json.RawMessage) (*tool.Result, error) {
		panic(fmt.Sprintf("boom %d", 7))
	}}, fnTool{name: "ok", call: func(*Context, json.RawMessage) (*tool.Result, error) { return Text("ok"), nil }})
	var out struct {
		Error   tool.Error        `json:"error"`
		Details map[string]string `json:"details"`
	}
	if err := json.Unmarshal(r.Dispatch(request("p", `{}`), nil), &out); err != nil {
		t.Fatal(err)
	}
	if out.Error.Kind != tool.KindFailed || out.Error.Message != "panic: boom 7" {
		t.Errorf("error = %+v", out.Error)
	}
	if out.Details["panic"] != "boom 7" || !strings.Contains(out.Details["stack"], "TestDispatchPanic") {
		t.Errorf("details = %v", out.Details)
	}
	if got := string(r.Dispatch(request("ok", `{}`), nil)); got != `{"content":[{"type":"text","text":"ok"}]}` {
		t.Errorf("after a panic: %s", got)
	}
}

func TestDispatchBadRequests(t *testing.T) {
	r := NewRegistry(fnTool{name: "t", call: func(*Context, json.RawMessage) (*tool.Result, error) { return nil, nil }})
	for req, want := range map[string]string{
		`{"tool":"other","arguments":{}}`: `{"error":{"kind":"not_found","message":"this module has no tool \"other\""}}`,
		`{"tool":`:                        `{"error":{"kind":"failed","message":"decode request: unexpected end of JSON input"}}`,
		``:                                `{"error":{"kind":"failed","message":"decode request: unexpected end of JSON input"}}`,
	} {
		if got := string(r.Dispatch([]byte(req), nil)); got != want {
			t.Errorf("%q: got %s, want %s", req, got, want)
		}
	}
}

func TestArgsValidator(t *testing.T) {
	called := 0
	mk := func(err error) Tool {
		return validatingTool{fnTool{name: "v",
			call:     func(*Context, json.RawMessage) (*tool.Result, error) { called++; return Text("ran"), nil },
			validate: func(json.RawMessage) error { return err }}}
	}
	cases := []struct {
		err  error
		want string
	}{
		{errors.New("x must be even"), `{"error":{"kind":"invalid_arguments","message":"x must be even"}}`},
		{NotFound("no such repo"), `{"error":{"kind":"not_found","message":"no such repo"}}`},
		{nil, `{"content":[{"type":"text","text":"ran"}]}`},
	}
	for _, c := range cases {
		if got := string(NewRegistry(mk(c.err)).Dispatch(request("v", `{}`), nil)); got != c.want {
			t.Errorf("validator error %v: got %s, want %s", c.err, got, c.want)
		}
	}
	if called != 1 {
		t.Errorf("Call ran %d times; want once (only when validation passed)", called)
	}
}

func TestDescribe(t *testing.T) {
	if got := string(NewRegistry().Describe()); got != `{"tools":[]}` {
		t.Errorf("empty registry: %s", got)
	}
	r := NewRegistry(fnTool{name: "a"}, fnTool{name: "b"})
	want := `{"tools":[{"name":"a","description":"test","inputSchema":{"type":"object"}},{"name":"b","description":"test","inputSchema":{"type":"object"}}]}`
	if got := string(r.Describe()); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	defer func() {
		if p := recover(); p != `warden: tool "a" registered twice` {
			t.Fatalf("recovered %v", p)
		}
	}()
	NewRegistry(fnTool{name: "a"}, fnTool{name: "a"})
}

func TestArgs(t *testing.T) {
	type A struct {
		Name  string   `json:"name"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
		Inner struct {
			On bool `json:"on"`
		} `json:"inner"`
	}
	a, err := Args[A](json.RawMessage(`{"name":"n","count":2,"tags":["x"],"inner":{"on":true}}`))
	if err != nil || a.Name != "n" || a.Count != 2 || a.Tags[0] != "x" || !a.Inner.On {
		t.Fatalf("Args = %+v, %v", a, err)
	}
	if a, err := Args[A](nil); err != nil || a.Name != "" {
		t.Fatalf("empty args: %+v, %v", a, err)
	}
	for args, want := range map[string]string{
		`{"count":"two"}`:                `invalid_arguments: argument "count": expected integer, got JSON string`,
		`{"tags":"x"}`:                   `invalid_arguments: argument "tags": expected array, got JSON string`,
		`{"inner":{"on":1}}`:             `invalid_arguments: argument "inner.on": expected boolean, got JSON number`,
		`[1]`:                            `invalid_arguments: arguments: expected object, got JSON array`,
		`{"name":`:                       `invalid_arguments: arguments are not valid JSON (offset 8): unexpected end of JSON input`,
		`{"name":"a"}x`:                  `invalid_arguments: arguments are not valid JSON (offset 13): invalid character 'x' after top-level value`,
		`{"count":1.5}`:                  `invalid_arguments: argument "count": expected integer, got JSON number 1.5`,
		`{"count":99999999999999999999}`: `invalid_arguments: argument "count": expected integer, got JSON number 99999999999999999999`,
	} {
		_, err := Args[A](json.RawMessage(args))
		if err == nil || err.Error() != want || tool.KindOf(err) != tool.KindInvalidArguments {
			t.Errorf("%s: got %v, want %s", args, err, want)
		}
	}
}

// fakeHost records what a Context sends and answers capabilities from a map.
type fakeHost struct {
	logs     []string
	progress []tool.Progress
	replies  map[string]string
	requests map[string]string
}

func (f *fakeHost) Log(level Level, msg string) {
	f.logs = append(f.logs, fmt.Sprintf("%d %s", level, msg))
}
func (f *fakeHost) Progress(p tool.Progress) { f.progress = append(f.progress, p) }
func (f *fakeHost) Capability(name string, req []byte) []byte {
	if f.requests == nil {
		f.requests = map[string]string{}
	}
	f.requests[name] = string(req)
	return []byte(f.replies[name])
}

func TestHost(t *testing.T) {
	h := &fakeHost{replies: map[string]string{
		"fs":     `{"result":{"content":"package main"}}`,
		"env":    `{"error":{"kind":"denied","message":"HOME is not granted"}}`,
		"memory": `not json`,
		"lsp":    `{"result":"a string, not an object"}`,
		"net":    `{"error":{"message":"no kind"}}`,
	}}
	ctx := NewContext("c", "", h)
	var file struct{ Content string }
	if err := Host(ctx, "fs", map[string]string{"op": "read", "path": "main.go"}, &file); err != nil || file.Content != "package main" {
		t.Fatalf("fs: %+v, %v", file, err)
	}
	if h.requests["fs"] != `{"op":"read","path":"main.go"}` {
		t.Errorf("fs request = %s", h.requests["fs"])
	}
	for capability, want := range map[string]string{
		"env":    "denied: HOME is not granted",
		"memory": "failed: decode memory reply: invalid character 'o' in literal null (expecting 'u')",
		"lsp":    "failed: decode lsp result: json: cannot unmarshal string into Go value of type struct { Content string }",
		"net":    "failed: no kind",
		"gpu":    `failed: unknown host capability "gpu"`,
	} {
		err := Host(ctx, capability, map[string]string{}, &file)
		var te *tool.Error
		if !errors.As(err, &te) || err.Error() != want {
			t.Errorf("%s: got %v, want %s", capability, err, want)
		}
	}
	if err := Host(ctx, "fs", func() {}, nil); err == nil || tool.KindOf(err) != tool.KindFailed {
		t.Errorf("unencodable request: %v", err)
	}
	if err := Host(NewContext("", "", nil), "fs", 1, nil); err == nil || tool.KindOf(err) != tool.KindDenied {
		t.Errorf("no host: %v", err)
	}
}

func TestContextLogAndProgress(t *testing.T) {
	h := &fakeHost{}
	ctx := NewContext("c", "", h)
	ctx.Log(LevelWarning, "careful")
	ctx.Logf(LevelDebug, "n=%d", 3)
	ctx.Progress(0, 10, "start")
	ctx.Progress(0, 10, "again") // not increasing: dropped
	ctx.Progress(5, 10, "half")
	ctx.Progress(4, 10, "back") // dropped
	ctx.Progress(10, 10, "")
	if got := strings.Join(h.logs, "|"); got != "2 careful|0 n=3" {
		t.Errorf("logs = %s", got)
	}
	want := []tool.Progress{{Progress: 0, Total: 10, Message: "start"}, {Progress: 5, Total: 10, Message: "half"}, {Progress: 10, Total: 10}}
	if fmt.Sprint(h.progress) != fmt.Sprint(want) {
		t.Errorf("progress = %v, want %v", h.progress, want)
	}
}

func TestResultHelpers(t *testing.T) {
	enc := func(r *tool.Result) string { return string(encodeResult(nil, r)) }
	cases := map[string]struct{ got, want string }{
		"image": {enc(Image([]byte{1, 2}, "image/png")), `{"content":[{"type":"image","data":"AQI=","mimeType":"image/png"}]}`},
		"audio": {enc(Audio([]byte("a"), "audio/wav")), `{"content":[{"type":"audio","data":"YQ==","mimeType":"audio/wav"}]}`},
		"link":  {enc(ResourceLink("file:///a", "a")), `{"content":[{"type":"resource_link","uri":"file:///a","name":"a"}]}`},
		"embedded text": {enc(EmbeddedText("file:///a", "text/plain", "hello")),
			`{"content":[{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"hello"}}]}`},
		"embedded blob": {enc(EmbeddedBlob("file:///b", "application/octet-stream", []byte{0xff})),
			`{"content":[{"type":"resource","resource":{"uri":"file:///b","mimeType":"application/octet-stream","blob":"/w=="}}]}`},
		"several blocks": {enc(Result(TextBlock("a"), TextBlock("b"))), `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`},
		"bad details":    {enc(WithDetails(Text(""), func() {})), `{"content":[{"type":"text"}],"details":{"detailsError":"json: unsupported type: func()"}}`},
	}
	for name, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %s, want %s", name, c.got, c.want)
		}
	}
	for _, v := range []any{[]int{1}, "s", nil, func() {}} {
		if _, err := JSON(v); tool.KindOf(err) != tool.KindFailed {
			t.Errorf("JSON(%T) error = %v, want failed", v, err)
		}
	}
	r, err := WithStructured(Text("rendered"), struct{ A int }{1})
	if err != nil || string(r.StructuredContent) != `{"A":1}` || r.Content[0].Text != "rendered" {
		t.Errorf("WithStructured = %+v, %v", r, err)
	}
}

func TestBuffers(t *testing.T) {
	b := newBuffers()
	next := uint32(0)
	addr := func([]byte) uint32 { next += 0x100; return next }
	a1, buf1 := b.alloc(5, addr)
	copy(buf1, "hello")
	a2, buf2 := b.alloc(0, addr)
	if len(buf2) != 0 || a2 == a1 || a2 == 0 {
		t.Fatalf("alloc(0) = %#x, %d bytes", a2, len(buf2))
	}
	if a, buf := b.alloc(-1, addr); a != 0 || buf != nil {
		t.Fatalf("alloc(-1) = %#x", a)
	}
	if _, ok := b.take(a1, 6); ok {
		t.Fatal("took more bytes than were allocated")
	}
	if _, ok := b.take(a1+1, 1); ok {
		t.Fatal("took from the middle of a buffer")
	}
	got, ok := b.take(a1, 4)
	if !ok || string(got) != "hell" {
		t.Fatalf("take = %q, %v", got, ok)
	}
	if _, ok := b.take(a1, 4); ok {
		t.Fatal("took the same buffer twice")
	}
	if got, ok := b.take(0, 0); !ok || got != nil {
		t.Fatal("the empty range must be accepted")
	}
	b.respond([]byte("resp"))
	b.reset()
	if _, ok := b.take(a2, 0); ok || len(b.lent) != 0 || b.response != nil {
		t.Fatal("reset kept buffers")
	}
	// A response marked reusable lends its storage to the next one, once.
	resp := make([]byte, 3, 16)
	b.keep(b.respond(resp))
	b.reset()
	if spare := b.reuse(); len(spare) != 0 || cap(spare) != 16 || &spare[:1][0] != &resp[0] {
		t.Fatalf("reuse = len %d cap %d, want the kept storage, emptied", len(spare), cap(spare))
	}
	if spare := b.reuse(); spare != nil {
		t.Fatal("reused the same storage twice")
	}
	b.keep(make([]byte, maxSpare+1))
	if spare := b.reuse(); spare != nil {
		t.Fatal("kept a response over maxSpare")
	}
	if p, n := unpack(pack(0xdeadbeef, 0xffffffff)); p != 0xdeadbeef || n != 0xffffffff {
		t.Fatalf("unpack(pack) = %#x, %#x", p, n)
	}
}

func TestGuard(t *testing.T) {
	items := make([]int, 450)
	for i := range items {
		items[i] = i
	}
	type want struct {
		first, n int
		overflow string
	}
	cases := map[string]want{
		`{}`:                                   {0, 200, `{"shown":200,"total":450,"hint":"h"}`},
		`{"limit":10}`:                         {0, 10, `{"shown":10,"total":450,"hint":"h"}`},
		`{"limit":1000}`:                       {0, 200, `{"shown":200,"total":450,"hint":"h"}`},
		`{"detail_level":"full"}`:              {0, 50, `{"shown":50,"total":450,"hint":"h","next_offset":50}`},
		`{"detail_level":"full","offset":400}`: {400, 50, `{"shown":50,"total":450,"hint":"h"}`},
		`{"detail_level":"full","offset":440,"limit":5}`: {440, 5, `{"shown":5,"total":450,"hint":"h","next_offset":445}`},
		`{"detail_level":"full","offset":999}`:           {0, 0, `{"shown":0,"total":450,"hint":"h"}`},
		`{"detail_level":"full","limit":1000}`:           {0, 450, `null`},
		`{"detail_level":"compact","offset":7}`:          {0, 200, `{"shown":200,"total":450,"hint":"h"}`},
	}
	for args, w := range cases {
		g, err := NewGuard(json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		page, o := Page(g, items, "h")
		ob, _ := json.Marshal(o)
		if len(page) != w.n || (w.n > 0 && page[0] != w.first) || string(ob) != w.overflow {
			t.Errorf("%s: page %d items from %v, overflow %s; want %d from %d, %s", args, len(page), page[:min(1, len(page))], ob, w.n, w.first, w.overflow)
		}
	}
	g, _ := NewGuard(nil)
	if page, o := Page(g, []string{"a"}, "h"); len(page) != 1 || o != nil {
		t.Errorf("short list: %v %v", page, o)
	}
	for args, want := range map[string]string{
		`{"offset":-1}`:         `invalid_arguments: argument "offset": must not be negative, got -1`,
		`{"limit":0}`:           `invalid_arguments: argument "limit": must be at least 1, got 0`,
		`{"detail_level":true}`: `invalid_arguments: argument "detail_level": expected string, got JSON bool`,
	} {
		if _, err := NewGuard(json.RawMessage(args)); err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %s", args, err, want)
		}
	}
}

func TestWithPagination(t *testing.T) {
	s := WithPagination(json.RawMessage(`{"type":"object","properties":{"limit":{"type":"integer","maximum":5}},"required":["q"]}`))
	var got struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(s, &got); err != nil {
		t.Fatal(err)
	}
	if got.Properties["limit"]["maximum"] != 5.0 || got.Properties["offset"]["type"] != "integer" ||
		got.Properties["detail_level"]["type"] != "string" || got.Required[0] != "q" {
		t.Errorf("WithPagination = %s", s)
	}
	if _, err := schema.Compile(s); err != nil {
		t.Errorf("result is not a valid schema: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("WithPagination accepted a non-object")
		}
	}()
	WithPagination(json.RawMessage(`[]`))
}

// TestDispatchLookup: a tool is found by its exact name whether the
// registry compares names (a few tools) or hashes them (many), and an
// unknown name, escaped or not, is not_found naming it.
func TestDispatchLookup(t *testing.T) {
	for _, n := range []int{1, 8, 9, 20} {
		var tools []Tool
		for i := range n {
			name := fmt.Sprint("t", i)
			tools = append(tools, fnTool{name: name, call: func(*Context, json.RawMessage) (*tool.Result, error) { return Text(name), nil }})
		}
		r := NewRegistry(tools...)
		for _, c := range []struct{ request, want string }{
			{`{"tool":"t0"}`, `{"content":[{"type":"text","text":"t0"}]}`},
			{fmt.Sprintf(`{"tool":"t%d","arguments":{}}`, n-1), fmt.Sprintf(`{"content":[{"type":"text","text":"t%d"}]}`, n-1)},
			{`{"tool":"t\u0030"}`, `{"content":[{"type":"text","text":"t0"}]}`},
			{`{"tool":"T0"}`, `{"error":{"kind":"not_found","message":"this module has no tool \"T0\""}}`},
			{`{"tool":"t0 "}`, `{"error":{"kind":"not_found","message":"this module has no tool \"t0 \""}}`},
			{`{"tool":"\u003c"}`, `{"error":{"kind":"not_found","message":"this module has no tool \"\u003c\""}}`},
		} {
			if got := string(r.Dispatch([]byte(c.request), nil)); got != c.want {
				t.Errorf("%d tools, %s:\ngot  %s\nwant %s", n, c.request, got, c.want)
			}
		}
	}
}
