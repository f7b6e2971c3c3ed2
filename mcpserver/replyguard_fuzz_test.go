package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/tool"
)

// paramShape is a method's params with each "@" a slot for a fuzzed value.
type paramShape struct {
	method string
	call   bool // a request (answered), or a notification
	params string
}

// clientMethods are the params of every method a client sends a server,
// each string, id or number of them a slot. All the go-sdk serves are here
// but subscriptions/listen, a stream that is answered only once the client
// cancels it.
var clientMethods = []paramShape{
	{"initialize", true, `{"protocolVersion":@,"capabilities":{"roots":@},"clientInfo":{"name":@,"version":@}}`},
	{"ping", true, `{"_meta":{"progressToken":@}}`},
	{"tools/list", true, `{"cursor":@}`},
	{"tools/call", true, `{"name":@,"arguments":{"text":@}}`},
	{"tools/call", true, `{"name":"echo","arguments":@,"_meta":{"progressToken":@}}`},
	{"resources/list", true, `{"cursor":@}`},
	{"resources/templates/list", true, `{"cursor":@}`},
	{"resources/read", true, `{"uri":@}`},
	{"resources/read", true, `{"uri":"fx://item/"}`},
	{"resources/subscribe", true, `{"uri":@}`},
	{"resources/unsubscribe", true, `{"uri":@}`},
	{"prompts/list", true, `{"cursor":@}`},
	{"prompts/get", true, `{"name":@,"arguments":{"who":@}}`},
	{"prompts/get", true, `{"name":"greet","arguments":@}`},
	{"completion/complete", true, `{"ref":{"type":"ref/prompt","name":@},"argument":{"name":@,"value":@}}`},
	{"completion/complete", true, `{"ref":{"type":"ref/resource","uri":@},"argument":{"name":"id","value":@},"context":{"arguments":@}}`},
	{"completion/complete", true, `{"ref":@,"argument":@}`},
	{"logging/setLevel", true, `{"level":@}`},
	{"server/discover", true, `{"_meta":{"io.modelcontextprotocol/protocolVersion":@,"io.modelcontextprotocol/clientInfo":{"name":@,"version":"1"}}}`},
	{"notifications/initialized", false, `{"_meta":@}`},
	{"notifications/cancelled", false, `{"requestId":@,"reason":@}`},
	{"notifications/progress", false, `{"progressToken":@,"progress":@,"total":@,"message":@}`},
	{"notifications/roots/list_changed", false, `{"_meta":{"x":@}}`},
}

// fillings are the ways a fuzzed string fills a slot: as a JSON string
// that spells every byte it holds (control characters escaped, bytes that
// are not UTF-8 kept raw), as the body of a JSON string as it is (so
// escapes such as \ud800 arrive as escapes), and as a raw JSON value (a
// wrong type, a huge number, null, nesting).
func fillings(value, raw string) []string {
	out := []string{rawString(value)}
	if body := `"` + value + `"`; json.Valid([]byte(body)) {
		out = append(out, body)
	}
	if json.Valid([]byte(raw)) {
		out = append(out, raw)
	}
	return out
}

// rawString is value as a JSON string literal, byte for byte: quote,
// backslash and control characters escaped, every other byte (DEL, bytes
// that are not UTF-8) as it is. json.Marshal would replace the invalid
// bytes with U+FFFD before the server saw them.
func rawString(value string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(value); i++ {
		switch c := value[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// methodSeeds are the fuzz target's seeds: a value for the string slots,
// and a raw JSON value for whole params and slots.
var methodSeeds = []struct{ value, raw string }{
	{"file:///x\x01y", `null`},
	{"x\a\b\f\n\r\t\v\x1b[2J\x7f", `1e400`},
	{"x\xff\xfe\xc0\x80y", `123456789012345678901234567890`},
	{`x\ud800y`, `"\ud800"`},
	{`\udb40\udc01`, `"\udc00\ud800"`},
	{"\u202e\u200b\u2028\ufeff\U000e0001", `-0.0e-999`},
	{"fx://item/\x00", `[]`},
	{"greet", `{"who":{"a":[1,{"b":null}]}}`},
	{"echo", `{"text":"\u0000\u0001"}`},
	{"debug", `true`},
	{"", `"" `},
	{strings.Repeat("\x01", 4096), `{"__proto__":1,"constructor":{}}`},
	{"ref/prompt", `{"type":"ref/resource","uri":"\u0001"}`},
	{"2025-11-25", strings.Repeat("[", 990) + strings.Repeat("]", 990)},
	{"1", `-9223372036854775809`},
}

// FuzzMethodParams sends every method a client may send a server (every
// request and notification) with fuzzed params through a real Server,
// over a guarded stdio connection and a streamable HTTP session, one after
// another on each. Invariants: every request gets exactly its reply, a
// well-formed JSON-RPC response (a result or an error; the reply check
// catches one that would not encode); no answer is a server error; and
// afterwards the same session still answers a ping and a tools/call.
//
// Its seeds (methodSeeds: control characters, bytes that are not UTF-8,
// lone surrogates written as \ud800, huge numbers, wrong types, nesting
// near the bound, null) run with every `go test`; `go test -fuzz
// FuzzMethodParams` explores further.
func FuzzMethodParams(f *testing.F) {
	for _, s := range methodSeeds {
		f.Add(s.value, s.raw)
	}
	tools := &fakeFeatures{fakeTools: newFakeTools(desc("echo")), served: servedFixture()}
	s := New(tools, tools.options(Options{Logger: slog.New(slog.DiscardHandler)}))
	defer s.Close()
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	f.Fuzz(func(t *testing.T, value, raw string) {
		c := newRawClient(t, s, 0)
		c.patience = 10 * time.Second
		c.initialize()
		session := rawSession(t, hs.URL+PathMCP)
		t.Cleanup(func() { endSession(t, hs.URL+PathMCP, session) })
		conns := []namedConn{
			{"stdio", stdioConn{c}},
			{"http", httpConn{url: hs.URL + PathMCP, session: session}},
		}
		for _, conn := range conns {
			n := 0
			for _, m := range clientMethods {
				shapes := []string{raw} // the whole params a raw value
				for _, fill := range fillings(value, raw) {
					shapes = append(shapes, strings.ReplaceAll(m.params, "@", fill))
				}
				for _, params := range shapes {
					if !json.Valid([]byte(params)) {
						continue // a line that is not JSON is FuzzGuardedTransport's
					}
					if !m.call {
						conn.notify(t, m.method, params)
						continue
					}
					n++
					id := fmt.Sprint(n)
					line := conn.call(t, id, m.method, params)
					if r := parseReply(t, line); string(r.ID) != id {
						t.Fatalf("%s %s: %s params %.200s: the reply has id %s: %.300s", conn.name, m.method, id, params, r.ID, line)
					}
					wantResponse(t, line)
				}
			}
			wantSessionServes(t, conn, n+1)
		}
	})
}

// wantResponse checks that line is one JSON-RPC response: a result or an
// error with a code and a message.
func wantResponse(t *testing.T, line string) {
	t.Helper()
	var m struct {
		Version string           `json:"jsonrpc"`
		Result  *json.RawMessage `json:"result"`
		Error   *struct {
			Code    *int64  `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.Version != "2.0" {
		t.Fatalf("not a JSON-RPC message (%v): %.300s", err, line)
	}
	if (m.Result == nil) == (m.Error == nil) {
		t.Fatalf("a response needs exactly one of result and error: %.300s", line)
	}
	if m.Error != nil && (m.Error.Code == nil || m.Error.Message == nil) {
		t.Fatalf("an error needs a code and a message: %.300s", line)
	}
}

// endSession ends an HTTP session as a client does, with DELETE, so that
// a fuzzing run does not pile up sessions in the one server.
func endSession(t *testing.T, url, session string) {
	req, err := http.NewRequest(http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Errorf("DELETE of session %s: status %d", session, resp.StatusCode)
	}
}

// shapedResult is the fake tool of the encode-once tests: a result of
// every part a tool's result can have, each part made of the call's
// arguments, so that fuzzed params reach the encoding as text, links,
// structured content, _meta values and errors; a text of "nan" puts a
// value in _meta that cannot be encoded at all.
func shapedResult(_ context.Context, c Call) (*tool.Result, error) {
	var args struct {
		Text any `json:"text"`
	}
	json.Unmarshal(c.Arguments, &args)
	text := fmt.Sprint(args.Text)
	if s, ok := args.Text.(string); ok {
		text = s
	}
	res := &tool.Result{
		Content: []tool.Content{
			tool.TextContent(text),
			{Type: "resource_link", URI: "fx://" + text, Name: text, Description: text},
		},
		Meta: map[string]any{"text": text, "args": json.RawMessage(c.Arguments), "n": len(text), "f": float64(len(text)) / 3},
	}
	if json.Valid([]byte(text)) {
		res.StructuredContent = json.RawMessage(text)
	}
	if strings.HasPrefix(text, "e") {
		res.IsError, res.Error = true, &tool.Error{Kind: tool.KindFailed, Message: text}
	}
	if text == "nan" {
		res.Meta["f"] = math.NaN()
	}
	return res, nil
}

// FuzzEncodeOnceDifferential is the differential test of the encode-once
// reply path (encodedResult): two servers of the same tools, one with it
// and one leaving every result to the go-sdk's own encoding, get the same
// requests (every method shape of FuzzMethodParams with the same fuzzed
// fillings, and tools/call of a tool whose result is made of the fuzzed
// value, with and without a stateless protocol's _meta) over stdio and
// over a streamable HTTP session. Every reply must be byte for byte the
// same, and the tool must have been called with the same calls.
func FuzzEncodeOnceDifferential(f *testing.F) {
	for _, s := range methodSeeds {
		f.Add(s.value, s.raw)
	}
	f.Add("nan", `{"text":"nan"}`)
	f.Add("e<b>&'\u2028", `{"a":"<>&"}`)
	f.Add(`{"k":"<v>"}`, `{"text":{"k":[1,2.5e10,"\u00e9"]}}`)
	type side struct {
		s     *Server
		calls *[]string
		conns []namedConn
	}
	var sides [2]side
	for i := range sides {
		tools := &fakeFeatures{fakeTools: newFakeTools(desc("echo"), desc("shaped")), served: servedFixture()}
		calls := new([]string)
		var mu sync.Mutex
		tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
			mu.Lock()
			*calls = append(*calls, c.Name+" "+string(c.Arguments))
			mu.Unlock()
			if c.Name == "echo" {
				return &tool.Result{Content: []tool.Content{tool.TextContent("called echo")}}, nil
			}
			return shapedResult(ctx, c)
		})
		s := New(tools, tools.options(Options{Logger: slog.New(slog.DiscardHandler)}))
		s.encodeTwice = i == 1
		defer s.Close()
		hs := httptest.NewServer(s.Handler(HTTPOptions{}))
		defer hs.Close()
		sides[i] = side{s: s, calls: calls}
	}
	f.Fuzz(func(t *testing.T, value, raw string) {
		for i := range sides {
			*sides[i].calls = nil
			c := newRawClient(t, sides[i].s, 0)
			c.patience = 10 * time.Second
			c.initialize()
			hs := httptest.NewServer(sides[i].s.Handler(HTTPOptions{}))
			t.Cleanup(hs.Close)
			session := rawSession(t, hs.URL+PathMCP)
			t.Cleanup(func() { endSession(t, hs.URL+PathMCP, session) })
			sides[i].conns = []namedConn{{"stdio", stdioConn{c}}, {"http", httpConn{url: hs.URL + PathMCP, session: session}}}
		}
		methods := append(slices.Clone(clientMethods),
			paramShape{"tools/call", true, `{"name":"shaped","arguments":{"text":@}}`},
			paramShape{"tools/call", true, `{"name":"shaped","arguments":@}`},
			paramShape{"tools/call", true, `{"name":"shaped","arguments":{"text":@},"_meta":{"io.modelcontextprotocol/protocolVersion":@}}`},
			paramShape{"tools/call", true, `{"name":"shaped","arguments":{"text":@},"_meta":{"progressToken":@}}`},
		)
		for conn := range sides[0].conns {
			n := 0
			for _, m := range methods {
				shapes := []string{raw}
				for _, fill := range fillings(value, raw) {
					shapes = append(shapes, strings.ReplaceAll(m.params, "@", fill))
				}
				for _, params := range shapes {
					if !json.Valid([]byte(params)) {
						continue
					}
					if !m.call {
						for i := range sides {
							sides[i].conns[conn].notify(t, m.method, params)
						}
						continue
					}
					n++
					id := fmt.Sprint(n)
					once := sides[0].conns[conn].call(t, id, m.method, params)
					twice := sides[1].conns[conn].call(t, id, m.method, params)
					if once != twice {
						t.Fatalf("%s %s params %.200s:\nencoded once: %.400s\nby the go-sdk: %.400s", sides[0].conns[conn].name, m.method, params, once, twice)
					}
				}
			}
		}
		if !slices.Equal(*sides[0].calls, *sides[1].calls) {
			t.Fatalf("the tools were called differently:\nencoded once: %q\nby the go-sdk: %q", *sides[0].calls, *sides[1].calls)
		}
	})
}

// FuzzEncodedResult checks encodedResult against the go-sdk's encoding of
// the result it holds, for results built from fuzzed parts: the bytes
// jsonrpc.EncodeMessage writes for a response are the same, and a result
// that cannot be encoded cannot be either way.
func FuzzEncodedResult(f *testing.F) {
	for _, s := range methodSeeds {
		f.Add(s.value, s.raw)
	}
	f.Add("nan", `{"text":"nan"}`)
	f.Fuzz(func(t *testing.T, value, raw string) {
		res, _ := shapedResult(context.Background(), Call{Arguments: json.RawMessage(`{"text":` + rawString(value) + `}`)})
		if json.Valid([]byte(raw)) {
			res.StructuredContent = json.RawMessage(raw)
		}
		s := New(newFakeTools(), Options{Logger: slog.New(slog.DiscardHandler)})
		defer s.Close()
		sdkRes := s.resultFor("shaped", res)
		data, err := encodeAsSDK(sdkRes)
		_, direct := json.Marshal(sdkRes)
		if (err == nil) != (direct == nil) {
			t.Fatalf("encodeAsSDK: %v; encoding/json: %v", err, direct)
		}
		if err != nil {
			return
		}
		for _, id := range []jsonrpc.ID{mustID(t, float64(7)), mustID(t, "x<y>")} {
			want, werr := encodeResponse(id, sdkRes)
			got, gerr := encodeResponse(id, &encodedResult{Result: sdkRes, json: data})
			if werr != nil || gerr != nil || !bytes.Equal(got, want) {
				t.Fatalf("encoded once: %s (%v)\nby the go-sdk: %s (%v)", got, gerr, want, werr)
			}
		}
	})
}

// encodeResponse encodes the response to id carrying result as the go-sdk
// does: the result marshalled by its jsonMarshal (encodeAsSDK is a copy of
// it, and marshals the wrapper through the wrapper's MarshalJSON), then
// the message.
func encodeResponse(id jsonrpc.ID, result any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(result); err != nil {
		return nil, err
	}
	return jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))})
}
