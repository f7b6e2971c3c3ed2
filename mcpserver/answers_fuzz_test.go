package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// These tests attack what a client ANSWERS: the responses to warden's own
// requests (elicitation/create, sampling/createMessage, roots/list) on a
// 2025-11-25 session, over stdio and streamable HTTP, driven by raw
// JSON-RPC so that nothing of a well-behaved client's encoder stands
// between the bytes and the server.

// answerCaps is an initialize that declares every client feature.
const answerInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{},"roots":{"listChanged":true}},"clientInfo":{"name":"raw-answers","version":"1"}}}`

// answeringTools serves echo and ask: ask puts the one question its
// "text" argument names (elicit, sample or roots) to the client and
// returns what came back, as a JSON array; a failed ask is its error.
func answeringTools() *fakeTools {
	f := newFakeTools(desc("echo"), desc("ask"))
	f.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name != "ask" {
			return &tool.Result{Content: []tool.Content{tool.TextContent("called " + c.Name)}}, nil
		}
		var args struct{ Text string }
		json.Unmarshal(c.Arguments, &args)
		var req tool.ClientRequest
		switch args.Text {
		case "sample":
			req = sampleReq("", "hello")
		case "roots":
			req = rootsReq("")
		default:
			req = elicitReq("", "name?")
		}
		results, err := hostAsk(ctx, c, req)
		if err != nil {
			return tool.ErrorResult(tool.Errorf(tool.KindInternal, "%v", err)), nil
		}
		out, _ := json.Marshal(results)
		return &tool.Result{Content: []tool.Content{tool.TextContent(string(out))}}, nil
	})
	return f
}

// askConn is a session on which a call's question can be answered by hand.
type askConn interface {
	rawConn
	// ask sends tools/call ask (id) with text, waits for the server's
	// request, and returns its id and method; finish answers it with
	// lines (responses, notifications, as they are) and returns the call's
	// reply.
	ask(t *testing.T, id, text string) (reqID json.RawMessage, method string)
	finish(t *testing.T, id string, lines ...string) string
}

// stdioAsk is askConn over the guarded stdio transport.
type stdioAsk struct{ stdioConn }

func (s stdioAsk) ask(t *testing.T, id, text string) (json.RawMessage, string) {
	t.Helper()
	s.c.t = t
	s.c.send(message(id, "tools/call", `{"name":"ask","arguments":{"text":`+rawString(text)+`}}`))
	for {
		line := s.c.next()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("output is not JSON: %v: %.300s", err, line)
		}
		if m.Method != "" && len(m.ID) > 0 {
			return m.ID, m.Method
		}
		if m.Method == "" {
			t.Fatalf("the call ended before it asked: %.300s", line)
		}
	}
}

func (s stdioAsk) finish(t *testing.T, id string, lines ...string) string {
	t.Helper()
	s.c.t = t
	for _, l := range lines {
		s.c.send(l)
	}
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
	}
}

// httpAsk is askConn over a 2025-11-25 streamable HTTP session: the
// server's request arrives on the call's event stream, the answer is a
// POST of its own.
type httpAsk struct {
	httpConn
	stream *bufio.Scanner
	body   interface{ Close() error }
}

func (h *httpAsk) ask(t *testing.T, id, text string) (json.RawMessage, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.url, strings.NewReader(message(id, "tools/call", `{"name":"ask","arguments":{"text":`+rawString(text)+`}}`)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", h.session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("tools/call ask: status %d", resp.StatusCode)
	}
	h.body = resp.Body
	h.stream = bufio.NewScanner(resp.Body)
	h.stream.Buffer(nil, 64<<20)
	for {
		data := h.event(t)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event is not JSON: %v: %.300s", err, data)
		}
		if m.Method != "" && len(m.ID) > 0 {
			return m.ID, m.Method
		}
		if m.Method == "" {
			t.Fatalf("the call ended before it asked: %.300s", data)
		}
	}
}

// event returns the next data line of the call's stream.
func (h *httpAsk) event(t *testing.T) string {
	t.Helper()
	for h.stream.Scan() {
		if data, ok := strings.CutPrefix(h.stream.Text(), "data: "); ok && data != "" {
			return data
		}
	}
	t.Fatalf("the call's stream ended: %v", h.stream.Err())
	return ""
}

func (h *httpAsk) finish(t *testing.T, id string, lines ...string) string {
	t.Helper()
	defer h.body.Close()
	for _, l := range lines {
		if status, _, body := post(t, h.url, "2025-11-25", h.session, l); status >= 500 {
			t.Fatalf("answer: status %d: %.300s", status, body)
		}
	}
	for {
		data := h.event(t)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal([]byte(data), &m) == nil && m.Method == nil && string(m.ID) == id {
			return data
		}
	}
}

// answerShapes are the ways a client answers warden's request (its id
// "@id"); each "@" is a slot for a fuzzed value.
var answerShapes = []string{
	`{"jsonrpc":"2.0","id":@id,"result":@}`,
	`{"jsonrpc":"2.0","id":@id,"result":{"action":@,"content":{"answer":@}}}`,
	`{"jsonrpc":"2.0","id":@id,"result":{"action":"accept","content":@}}`,
	`{"jsonrpc":"2.0","id":@id,"result":{"action":"accept","content":{"decision":@,"answer":@}}}`,
	`{"jsonrpc":"2.0","id":@id,"result":{"model":@,"role":@,"content":{"type":"text","text":@}}}`,
	`{"jsonrpc":"2.0","id":@id,"result":{"roots":[{"uri":@,"name":@}]}}`,
	`{"jsonrpc":"2.0","id":@id,"error":{"code":-1,"message":@,"data":@}}`,
	`{"jsonrpc":"2.0","id":@id,"error":@}`,
}

// wellFormed is a valid answer to each of warden's requests: a decline.
var wellFormed = map[string]string{
	"elicitation/create":     `{"action":"decline"}`,
	"sampling/createMessage": `{"model":"m","role":"assistant","content":{"type":"text","text":"no"}}`,
	"roots/list":             `{"roots":[]}`,
}

// answerSeeds seed FuzzClientAnswers: a value for string slots and a raw
// JSON value.
var answerSeeds = []struct{ value, raw string }{
	{"accept", `1`},
	{"ACCEPT", `{"action":"accept","content":{"decision":"allow-always"}}`},
	{"accept\x00", `["accept"]`},
	{"acc\u0435pt", `{"action":["accept"]}`},
	{"x\xff\xfe\xc0\x80y", `null`},
	{`\ud800accept`, `"\ud800"`},
	{"\u202eaccept", `{"action":"accept","action":"decline"}`},
	{strings.Repeat("\x01", 4096), `{"action":{"accept":true}}`},
	{"allow-always", strings.Repeat("[", 990) + strings.Repeat("]", 990)},
	{"decline", `1e400`},
	{"", `{"code":"x","message":1}`},
	{"cancel", `{"roots":"file:///"}`},
}

// FuzzClientAnswers answers warden's requests to the client (an
// elicitation, a sampling, a roots/list asked by a tool's call) with fuzzed
// responses over the guarded stdio transport and a 2025-11-25 streamable
// HTTP session, each preceded by a response with an id never asked and
// followed by a duplicate, late answer. Invariants: the call gets exactly
// its reply, a well-formed JSON-RPC response; what the tool receives is a
// result of the kind it asked for, and an elicitation the tool sees as
// accepted was accepted ("action":"accept") by the client's own bytes;
// and afterwards the session still answers a ping and a tools/call.
func FuzzClientAnswers(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add(s.value, s.raw)
	}
	s := New(answeringTools(), Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	f.Fuzz(func(t *testing.T, value, raw string) {
		c := newRawClient(t, s, 0)
		c.patience = 20 * time.Second
		c.send(answerInit)
		if r := parseReply(t, c.next()); r.Error != nil {
			t.Fatalf("initialize: %+v", r.Error)
		}
		c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		status, h, _ := post(t, hs.URL+PathMCP, "", "", answerInit)
		session := h.Get("Mcp-Session-Id")
		if status != http.StatusOK || session == "" {
			t.Fatalf("initialize over HTTP: status %d", status)
		}
		post(t, hs.URL+PathMCP, "2025-11-25", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		t.Cleanup(func() { endSession(t, hs.URL+PathMCP, session) })
		conns := []struct {
			name string
			askConn
		}{
			{"stdio", stdioAsk{stdioConn{c}}},
			{"http", &httpAsk{httpConn: httpConn{url: hs.URL + PathMCP, session: session}}},
		}
		for _, conn := range conns {
			n := 0
			for _, shape := range answerShapes {
				for _, fill := range fillings(value, raw) {
					for _, text := range []string{"elicit", "sample", "roots"} {
						n++
						id := fmt.Sprintf(`"a-%d"`, n)
						reqID, method := conn.ask(t, id, text)
						answer := strings.ReplaceAll(strings.ReplaceAll(shape, "@id", string(reqID)), "@", fill)
						if !json.Valid([]byte(answer)) {
							answer = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, reqID, `{}`)
						}
						never := `{"jsonrpc":"2.0","id":"never-asked-` + fmt.Sprint(n) + `","result":{"action":"accept","content":{"decision":"allow-always"}}}`
						// A malformed answer is refused (stdio: an error with
						// its id; HTTP: 400) and the request still waits: the
						// client's corrected answer then ends it.
						fix := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, reqID, wellFormed[method])
						line := conn.finish(t, id, never, answer, answer, fix)
						wantResponse(t, line)
						wantFaithful(t, method, answer, line)
					}
				}
			}
			wantSessionServes(t, conn, n+1)
		}
	})
}

// wantFaithful checks that an elicitation the tool saw as accepted was
// accepted by the client's answer: the reply is the tool's JSON array of
// results, or its error.
func wantFaithful(t *testing.T, method, answer, line string) {
	t.Helper()
	if method != "elicitation/create" {
		return
	}
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(line), &r) != nil || r.Result.IsError || len(r.Result.Content) != 1 {
		return
	}
	var got []struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal([]byte(r.Result.Content[0].Text), &got); err != nil || len(got) != 1 {
		t.Fatalf("the tool got %.300s", r.Result.Content[0].Text)
	}
	var sent struct {
		Result struct {
			Action *string `json:"action"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(answer), &sent)
	if got[0].Action == "accept" && (sent.Result.Action == nil || *sent.Result.Action != "accept") {
		t.Fatalf("the tool saw accept for the answer %.300s", answer)
	}
}

// TestClientNotificationsLeaveTheSessionServing sends what a client may
// notify that warden never asked for: cancellations of ids never sent (and
// of the session's own calls already answered) with a huge reason,
// progress of its own, a flood of roots/list_changed, a second
// notifications/initialized, and late answers to a question already
// answered. Over stdio and HTTP, the session still serves, and a question
// asked afterwards is answered by the answer the client gives it.
func TestClientNotificationsLeaveTheSessionServing(t *testing.T) {
	s, _ := newServer(t, answeringTools(), Options{})
	c := newRawClient(t, s, 0)
	c.send(answerInit)
	if r := parseReply(t, c.next()); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	status, h, _ := post(t, hs.URL+PathMCP, "", "", answerInit)
	session := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || session == "" {
		t.Fatalf("initialize over HTTP: status %d", status)
	}
	post(t, hs.URL+PathMCP, "2025-11-25", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	huge := rawString(strings.Repeat("\u202e\x01", 1<<15))
	for _, conn := range []struct {
		name string
		askConn
	}{
		{"stdio", stdioAsk{stdioConn{c}}},
		{"http", &httpAsk{httpConn: httpConn{url: hs.URL + PathMCP, session: session}}},
	} {
		t.Run(conn.name, func(t *testing.T) {
			reqID, _ := conn.ask(t, `"first"`, "elicit")
			decline := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, reqID)
			if line := conn.finish(t, `"first"`, decline); !strings.Contains(line, `\"action\":\"decline\"`) {
				t.Fatalf("first ask: %.300s", line)
			}
			conn.notify(t, "notifications/initialized", `{}`)
			for _, id := range []string{`"first"`, `"never-sent"`, `999999`, string(reqID)} {
				conn.notify(t, "notifications/cancelled", `{"requestId":`+id+`,"reason":`+huge+`}`)
			}
			conn.notify(t, "notifications/progress", `{"progressToken":"first","progress":1e308,"total":-1,"message":`+huge+`}`)
			for i := 0; i < 1000; i++ {
				conn.notify(t, "notifications/roots/list_changed", `{}`)
			}
			// A second question: the late accept for the first is not its answer.
			reqID2, _ := conn.ask(t, `"second"`, "elicit")
			if string(reqID2) == string(reqID) {
				t.Fatalf("the server reused request id %s", reqID)
			}
			late := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"answer":"late"}}}`, reqID)
			decline2 := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, reqID2)
			if line := conn.finish(t, `"second"`, late, decline2); !strings.Contains(line, `\"action\":\"decline\"`) || strings.Contains(line, "late") {
				t.Fatalf("second ask: %.300s", line)
			}
			wantSessionServes(t, conn, 1)
		})
	}
}
