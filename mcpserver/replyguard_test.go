package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// unencodableURIs are resource URIs (as JSON string literals) whose
// resource-not-found error the go-sdk renders into data that is not JSON:
// it quotes the URI with Go's %q, which writes \x01, \a, \x7f and
// \U000e0001, none of them a JSON escape (issue 26). (Bytes that are not
// UTF-8 are not among them: decoding the request made them U+FFFD.)
var unencodableURIs = []struct{ name, literal string }{
	{"control character", `"file:///x\u0001y"`},
	{"bell", `"x\u0007"`},
	{"DEL", "\"x\x7f\""},
	{"invisible astral character", `"x\udb40\udc01"`},
}

// rawConn is one client session driven by raw JSON-RPC lines, over stdio
// (the guarded transport, without the stdio net under it, so that only the
// reply check is under test) or a 2025-11-25 streamable HTTP session.
type rawConn interface {
	// call sends a request with id and returns its reply line.
	call(t *testing.T, id, method, params string) string
	// notify sends a notification.
	notify(t *testing.T, method, params string)
}

type stdioConn struct{ c *rawClient }

func (s stdioConn) call(t *testing.T, id, method, params string) string {
	t.Helper()
	s.c.t = t
	s.c.send(message(id, method, params))
	for {
		line := s.c.next()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output is not JSON: %v: %.300s", err, line)
		}
		if m.Method == nil && string(m.ID) == id {
			return line
		}
		countReplies(t, line) // another message (a log, a refused notification): well-formed
	}
}

func (s stdioConn) notify(t *testing.T, method, params string) {
	t.Helper()
	s.c.t = t
	s.c.send(message("", method, params))
}

type httpConn struct{ url, session string }

func (h httpConn) call(t *testing.T, id, method, params string) string {
	t.Helper()
	status, _, body := post(t, h.url, "2025-11-25", h.session, message(id, method, params))
	if status >= 500 || body == "" {
		t.Fatalf("%s: status %d, reply %.300q", method, status, body)
	}
	return body
}

func (h httpConn) notify(t *testing.T, method, params string) {
	t.Helper()
	if status, _, body := post(t, h.url, "2025-11-25", h.session, message("", method, params)); status >= 500 {
		t.Fatalf("%s: status %d: %.300s", method, status, body)
	}
}

// message renders a request (a notification when id is ""); params ""
// leaves them out.
func message(id, method, params string) string {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0",`)
	if id != "" {
		b.WriteString(`"id":` + id + `,`)
	}
	b.WriteString(`"method":"` + method + `"`)
	if params != "" {
		b.WriteString(`,"params":` + params)
	}
	b.WriteString("}")
	return b.String()
}

// namedConn is a rawConn and the transport it is over.
type namedConn struct {
	name string
	rawConn
}

// rawConns opens one session of each kind to s.
func rawConns(t *testing.T, s *Server) []namedConn {
	t.Helper()
	c := newRawClient(t, s, 0)
	c.initialize()
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	return []namedConn{
		{"stdio", stdioConn{c}},
		{"http", httpConn{url: hs.URL + PathMCP, session: rawSession(t, hs.URL+PathMCP)}},
	}
}

// wantSessionServes checks that conn still answers a ping and a tools/call.
func wantSessionServes(t *testing.T, conn rawConn, id int) {
	t.Helper()
	ping := fmt.Sprintf(`"ping-%d"`, id)
	if r := parseReply(t, conn.call(t, ping, "ping", "")); r.Error != nil || string(r.ID) != ping || string(r.Result) != "{}" {
		t.Fatalf("ping %s after it: %+v %s", ping, r.Error, r.Result)
	}
	call := fmt.Sprintf(`"call-%d"`, id)
	line := conn.call(t, call, "tools/call", `{"name":"echo","arguments":{"text":"still here"}}`)
	if r := parseReply(t, line); r.Error != nil || string(r.ID) != call || !strings.Contains(string(r.Result), "called echo") || strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("tools/call %s after it: %.300s", call, line)
	}
}

// TestUnencodableErrorAnsweredSessionSurvives is issue 26's report: a
// resources/read (or subscribe) of a URI holding a control character made
// the go-sdk build a reply it could not encode, which ended the stdio
// connection and the HTTP session. Now the client gets the error without
// its data, and the session goes on.
func TestUnencodableErrorAnsweredSessionSurvives(t *testing.T) {
	tools := &fakeFeatures{fakeTools: newFakeTools(desc("echo")), served: servedFixture()}
	s, logs := newServer(t, tools, Options{})
	n := 0
	for _, conn := range rawConns(t, s) {
		for _, u := range unencodableURIs {
			for _, method := range []string{"resources/read", "resources/subscribe"} {
				t.Run(conn.name+"/"+method+"/"+u.name, func(t *testing.T) {
					n++
					id := fmt.Sprint(n)
					line := conn.call(t, id, method, `{"uri":`+u.literal+`}`)
					wantError(t, line, int64(mcp.CodeResourceNotFound), id)
					if r := parseReply(t, line); r.Error.Message != "Resource not found" || strings.Contains(line, `"data"`) {
						t.Errorf("want the go-sdk's own error without its data, got %s", line)
					}
					wantSessionServes(t, conn, n)
				})
			}
		}
	}
	if !strings.Contains(logs.String(), "the error data of a reply is not valid JSON") || !strings.Contains(logs.String(), `method=resources/read`) {
		t.Errorf("the replaced replies are not logged:\n%s", logs)
	}
	if strings.ContainsAny(logs.String(), "\x01\x07\x7f\U000e0001") {
		t.Errorf("the log carries a client's control characters raw:\n%q", logs)
	}
}

// TestUnencodableResultIsInternalError: a result that does not encode is
// answered with an internal error naming the method, not dropped (the
// go-sdk would send no reply at all, and the client would wait forever).
func TestUnencodableResultIsInternalError(t *testing.T) {
	s, logs := newServer(t, newFakeTools(desc("echo")), Options{})
	handler := s.encodableReplies(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{Meta: mcp.Meta{"score": math.NaN()}}, nil
	})
	res, err := handler(context.Background(), "tools/call", nil)
	var je *jsonrpc.Error
	if res != nil || !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError ||
		je.Message != "internal error: the result of tools/call could not be encoded as JSON, so it was not sent (the server log says why)" {
		t.Fatalf("got %v, %v", res, err)
	}
	if !strings.Contains(logs.String(), "unsupported value: NaN") {
		t.Errorf("the log does not say why:\n%s", logs)
	}
	// What encodes passes untouched, errors and results alike.
	ok := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x\x01"}}}
	plain := &jsonrpc.Error{Code: 1, Message: "m\xff", Data: json.RawMessage(`{"a":1}`)}
	for _, want := range []struct {
		res mcp.Result
		err error
	}{{ok, nil}, {nil, plain}, {nil, io.EOF}} {
		res, err := s.encodableReplies(func(context.Context, string, mcp.Request) (mcp.Result, error) {
			return want.res, want.err
		})(context.Background(), "m", nil)
		if res != want.res || err != want.err {
			t.Errorf("changed %v, %v into %v, %v", want.res, want.err, res, err)
		}
	}
}

// TestStdioNetAnswersAReplyThatDoesNotEncode: under the reply check, the
// stdio connection itself turns a reply that fails to encode into an
// error reply with its id, and keeps a message that is not a reply from
// ending the connection.
func TestStdioNetAnswersAReplyThatDoesNotEncode(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	logger, logs := testLogger()
	tr := &encodingSafeTransport{log: logger, Transport: &GuardedTransport{Reader: inR, Writer: outW}}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	lines := bufio.NewScanner(outR)
	write := func(msg jsonrpc.Message) (string, error) {
		done := make(chan error, 1)
		go func() { done <- conn.Write(context.Background(), msg) }()
		var line string
		if lines.Scan() {
			line = lines.Text()
		}
		return line, <-done
	}
	bad := &jsonrpc.Error{Code: -32602, Message: "Resource not found", Data: json.RawMessage(`{"uri":"\x01"}`)}
	line, err := write(&jsonrpc.Response{ID: mustID(t, float64(7)), Error: bad})
	if err != nil || line != `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Resource not found"}}` {
		t.Fatalf("reply with unencodable data: wrote %s, error %v", line, err)
	}
	line, err = write(&jsonrpc.Response{ID: mustID(t, "r"), Result: json.RawMessage(`{"x":`)})
	if err != nil || line != `{"jsonrpc":"2.0","id":"r","error":{"code":-32603,"message":"internal error: the reply could not be encoded as JSON, so it was not sent (the server log says why)"}}` {
		t.Fatalf("reply with an unencodable result: wrote %s, error %v", line, err)
	}
	// A notification that does not encode is dropped with an error the
	// go-sdk takes for a rejected message (code -32005), not a broken
	// connection; the next message goes out.
	err = conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{`)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32005 {
		t.Fatalf("unencodable notification: %v", err)
	}
	if line, err := write(&jsonrpc.Response{ID: mustID(t, float64(8)), Result: json.RawMessage(`{}`)}); err != nil || line != `{"jsonrpc":"2.0","id":8,"result":{}}` {
		t.Fatalf("the next reply: %s, %v", line, err)
	}
	if n := strings.Count(logs.String(), "could not be encoded as JSON"); n != 3 {
		t.Errorf("%d of 3 dropped messages logged:\n%s", n, logs)
	}
}

// TestUnencodableReplyCheckedOverRealHTTPClient: the go-sdk's own client,
// over every transport, gets the error and keeps its session. (The URI's
// character is one a stateless request's Mcp-Name header can carry; the
// client refuses to send a control character there.)
func TestUnencodableReplyCheckedOverRealHTTPClient(t *testing.T) {
	tools := &fakeFeatures{fakeTools: newFakeTools(desc("echo")), served: servedFixture()}
	s, _ := newServer(t, tools, Options{})
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cs := connect(t, s, tr, nil)
			_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "fx://nowhere/\U000e0001"})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != mcp.CodeResourceNotFound {
				t.Fatalf("read of a URI with an invisible character: %v", err)
			}
			if tr.protocol != "" { // ping is gone from the stateless protocol
				if err := cs.Ping(context.Background(), nil); err != nil {
					t.Fatalf("ping after it: %v", err)
				}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			if err != nil || res.IsError {
				t.Fatalf("tools/call after it: %v %+v", err, res)
			}
		})
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
