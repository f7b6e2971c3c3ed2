package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// post sends body to /mcp as a client of protocol would, in session (""
// for none), and returns the status and the JSON-RPC message of the reply
// (the data of its first event, when it is an event stream).
func post(t *testing.T, url, protocol, session, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", protocol)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
				return resp.StatusCode, resp.Header, data
			}
		}
		return resp.StatusCode, resp.Header, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// rawSession opens a 2025-11-25 session by hand and returns its id.
func rawSession(t *testing.T, url string) string {
	t.Helper()
	status, h, _ := post(t, url, "", "", strings.Replace(initLine, `"raw"`, `"raw-http"`, 1))
	session := h.Get("Mcp-Session-Id")
	if status != http.StatusOK || session == "" {
		t.Fatalf("initialize: status %d, session %q", status, session)
	}
	if status, _, body := post(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: status %d: %s", status, body)
	}
	return session
}

func TestHTTPGuardAnswersEveryHostileBody(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	url := hs.URL + PathMCP
	for _, gen := range []struct{ protocol, session string }{
		{"2025-11-25", rawSession(t, url)},
		{"2026-07-28", ""},
	} {
		for _, h := range hostileLines() {
			t.Run(gen.protocol+"/"+h.name, func(t *testing.T) {
				status, _, body := post(t, url, gen.protocol, gen.session, h.line)
				if status != http.StatusBadRequest {
					t.Errorf("status %d, want 400", status)
				}
				wantError(t, body, h.code, h.id)
			})
		}
	}
	// The server goes on serving, at both generations.
	for _, tr := range transports[2:] {
		cs := connectTo(t, hs.URL, tr)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("%s: echo after hostile bodies: %v %+v", tr.name, err, res)
		}
	}
}

// connectTo connects a go-sdk client to the HTTP server at base.
func connectTo(t *testing.T, base string, tr transport) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + PathMCP},
		&mcp.ClientSessionOptions{ProtocolVersion: tr.protocol})
	if err != nil {
		t.Fatalf("connect over %s: %v", tr.name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTPGuardBoundsTheBody(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("echo")), Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{MaxRequestBytes: 4 << 10}))
	t.Cleanup(hs.Close)
	body := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 1<<20) + `"}}}`
	status, _, reply := post(t, hs.URL+PathMCP, "2026-07-28", "", body)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", status)
	}
	wantError(t, reply, -32600, `"big"`)
	if !strings.Contains(reply, "server.max_message") {
		t.Errorf("refusal does not name the setting: %s", reply)
	}
}

func TestHTTPGuardRefusesADuplicateIDInASession(t *testing.T) {
	tools := newFakeTools(desc("echo"), desc("slow"))
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name == "slow" {
			started <- struct{}{}
			<-release
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("called " + c.Name)}}, nil
	})
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	url := hs.URL + PathMCP
	session := rawSession(t, url)
	slowReply := make(chan string, 1)
	go func() {
		_, _, body := post(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		slowReply <- body
	}()
	<-started
	status, _, body := post(t, url, "2025-11-25", session, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if status != http.StatusConflict {
		t.Errorf("duplicate: status %d, want 409", status)
	}
	wantError(t, body, -32600, "5")
	// Another session may use the same id.
	other := rawSession(t, url)
	status, _, body = post(t, url, "2025-11-25", other, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if r := parseReply(t, body); status != http.StatusOK || r.Error != nil || string(r.ID) != "5" {
		t.Fatalf("id 5 in another session: status %d: %s", status, body)
	}
	close(release)
	if r := parseReply(t, <-slowReply); r.Error != nil || string(r.ID) != "5" || !strings.Contains(string(r.Result), "called slow") {
		t.Fatalf("the call in flight lost its reply: %+v", r)
	}
}

// TestHTTPGuardIDFreeOnceAnswered is the window between a reply written
// and its POST's handler returning: a client that reuses the id as soon as
// it has read the reply must not be refused (it was, 409, under load:
// e2e's TestUnencodableReplyHTTP), while an id whose reply has not been
// written still is. The handler here waits for the test, writes a request
// of the server's with the same id and then the reply of "a", each as an
// event, then waits for the test again before it returns.
func TestHTTPGuardIDFreeOnceAnswered(t *testing.T) {
	entered, reply := make(chan struct{}), make(chan struct{})
	wrote, release := make(chan struct{}), make(chan struct{})
	var posts atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := string(scanEnvelope(body).id)
		w.Header().Set("Content-Type", "text/event-stream")
		if posts.Add(1) == 1 {
			close(entered)
			<-reply
			// A request of the server's with the same id first: not a reply.
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"roots/list\"}\n\n")
			fmt.Fprintf(w, "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", id)
			http.NewResponseController(w).Flush()
			close(wrote)
			<-release
			return
		}
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", id)
	})
	hs := httptest.NewServer(guardMessages(next, 1<<20, slog.New(slog.DiscardHandler), nil))
	defer hs.Close()
	send := func(id string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`))
		req.Header.Set("Mcp-Session-Id", "s1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	first := make(chan int, 1)
	go func() {
		status, _ := send(`"a"`)
		first <- status
	}()
	<-entered
	if status, body := send(`"a"`); status != http.StatusConflict || !strings.Contains(body, `id \"a\" is already in use`) {
		t.Errorf("the id reused before its reply was written: %d %s", status, body)
	}
	close(reply)
	<-wrote
	if status, body := send(`"a"`); status != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Errorf("the id reused once its reply was written: %d %s", status, body)
	}
	close(release)
	if status := <-first; status != http.StatusOK {
		t.Errorf("first POST: %d", status)
	}
}

// TestHTTPGuardEndsOnlyItsOwnIDs is a batch whose first reply frees its
// id before the POST ends: a later POST that takes that id holds it, and
// the batch's end must not free it again. A batch [1, 2]: its handler
// writes the reply to 1 and waits; POST B takes id 1 and waits; the batch
// ends; a third POST with id 1 must still be refused (409), B holding it.
func TestHTTPGuardEndsOnlyItsOwnIDs(t *testing.T) {
	wroteA, releaseA := make(chan struct{}), make(chan struct{})
	enteredB, releaseB := make(chan struct{}), make(chan struct{})
	var posts atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		reply := func(id string) {
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", id)
			http.NewResponseController(w).Flush()
		}
		switch posts.Add(1) {
		case 1: // the batch: 1 answers at once, 2 when the test says
			reply("1")
			close(wroteA)
			<-releaseA
			reply("2")
		case 2:
			close(enteredB)
			<-releaseB
			reply("1")
		default:
			reply("1")
		}
	})
	hs := httptest.NewServer(guardMessages(next, 1<<20, slog.New(slog.DiscardHandler), nil))
	defer hs.Close()
	send := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header.Set("Mcp-Session-Id", "s1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	a, b := make(chan int, 1), make(chan int, 1)
	go func() {
		status, _ := send(`[` + ping + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
		a <- status
	}()
	<-wroteA
	go func() {
		status, _ := send(ping)
		b <- status
	}()
	<-enteredB
	close(releaseA)
	if status := <-a; status != http.StatusOK {
		t.Fatalf("the batch: %d", status)
	}
	if status, body := send(ping); status != http.StatusConflict || !strings.Contains(body, "id 1 is already in use") {
		t.Errorf("id 1 while POST B holds it, after the batch that held it before ended: %d %s; want 409", status, body)
	}
	// The batch's id 2 was freed at its end.
	if status, body := send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`); status != http.StatusOK {
		t.Errorf("id 2 once the batch ended: %d %s", status, body)
	}
	close(releaseB)
	if status := <-b; status != http.StatusOK {
		t.Fatalf("POST B: %d", status)
	}
	if status, body := send(ping); status != http.StatusOK {
		t.Errorf("id 1 once POST B ended: %d %s", status, body)
	}
}
