package mcpserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
