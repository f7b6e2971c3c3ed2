package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/principal"
)

// httpPeer is a raw 2025-11-25 streamable HTTP client: a bearer token and
// the session its initialize opened.
type httpPeer struct {
	t       *testing.T
	url     string
	token   string
	session string
}

// oauthTaskServer serves s over HTTP with OAuth, each token speaking for
// the principal of its name.
func oauthTaskServer(t *testing.T, s *Server) string {
	verify := func(_ context.Context, token string) (principal.Principal, error) {
		if token != "alice" && token != "bob" {
			return principal.Principal{}, errors.New("unknown token")
		}
		return principal.Principal{Subject: token, Issuer: "https://as", Via: principal.ViaOAuth}, nil
	}
	srv := httptest.NewServer(s.Handler(HTTPOptions{OAuth: &OAuthOptions{
		Resource: "http://warden.test/mcp", AuthorizationServers: []string{"https://as"}, Verify: verify}}))
	t.Cleanup(srv.Close)
	// A failed test leaves streams open: their requests end first.
	t.Cleanup(srv.CloseClientConnections)
	return srv.URL + PathMCP
}

// post sends one message and returns the response.
func (p *httpPeer) post(msg map[string]any) *http.Response {
	p.t.Helper()
	msg["jsonrpc"] = "2.0"
	raw, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, p.url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+p.token)
	if p.session != "" {
		req.Header.Set("Mcp-Session-Id", p.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

// events reads the JSON-RPC messages of a response: the data of each SSE
// event, or the JSON body.
func events(t *testing.T, resp *http.Response) <-chan map[string]any {
	out := make(chan map[string]any, 8)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var m map[string]any
			if json.NewDecoder(resp.Body).Decode(&m) == nil {
				out <- m
			}
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "" { // not data, or the go-sdk's priming event
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Errorf("an event that is not JSON: %q", data)
				return
			}
			out <- m
		}
	}()
	return out
}

// call sends a request and returns its reply (skipping notifications).
func (p *httpPeer) call(id int, method string, params map[string]any) map[string]any {
	p.t.Helper()
	resp := p.post(map[string]any{"id": id, "method": method, "params": params})
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && p.session == "" {
		p.session = sid
	}
	for m := range events(p.t, resp) {
		if m["id"] == float64(id) {
			return m
		}
	}
	p.t.Fatalf("%s: no reply (HTTP %d)", method, resp.StatusCode)
	return nil
}

// open initializes a session declaring capabilities.
func (p *httpPeer) open(capabilities map[string]any) *httpPeer {
	p.t.Helper()
	resultOf(p.t, p.call(1, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": capabilities,
		"clientInfo": map[string]any{"name": "t", "version": "1"}}))
	resp := p.post(map[string]any{"method": "notifications/initialized"})
	resp.Body.Close()
	if p.session == "" {
		p.t.Fatal("no session")
	}
	return p
}

// respond POSTs a response to a request of the server's and returns the
// HTTP status and body.
func (p *httpPeer) respond(id any, result map[string]any) (int, string) {
	p.t.Helper()
	resp := p.post(map[string]any{"id": id, "result": result})
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestTaskInputLegacyHTTP: on 2025-11-25 over streamable HTTP, the
// requestor's tasks/result becomes an SSE stream carrying the task's
// questions as requests of the server's own, each tied to the task by
// _meta["io.modelcontextprotocol/related-task"]; the client POSTs its
// responses, which reach the parked call, and the stream ends with the
// task's result. A response is taken only from the session and the
// principal it was asked of, once, while its task waits: one for an id
// never sent, from another session of the same principal, from another
// principal on the asking session or its own, a second one, and one after
// the task ended are each refused alike (400, a JSON-RPC error without
// an id) and never reach the task.
func TestTaskInputLegacyHTTP(t *testing.T) {
	s := inputServer(t, 0)
	url := oauthTaskServer(t, s)
	elicit := map[string]any{"elicitation": map[string]any{}}
	a := (&httpPeer{t: t, url: url, token: "alice"}).open(elicit)
	a2 := (&httpPeer{t: t, url: url, token: "alice"}).open(elicit)
	b := (&httpPeer{t: t, url: url, token: "bob"}).open(elicit)
	bobOnA := &httpPeer{t: t, url: url, token: "bob", session: a.session}

	created := resultOf(t, a.call(2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))
	id := created["task"].(map[string]any)["taskId"].(string)
	for {
		got := resultOf(t, a.call(3, "tasks/get", map[string]any{"taskId": id}))
		if got["status"] == "input_required" {
			break
		}
		if ended(got) {
			t.Fatalf("the task ended without asking: %s", dump(got))
		}
	}
	stream := events(t, a.post(map[string]any{"id": 4, "method": "tasks/result", "params": map[string]any{"taskId": id}}))
	refused := func(who string) func(int, string) {
		return func(status int, body string) {
			t.Helper()
			var m map[string]any
			json.Unmarshal([]byte(body), &m)
			e, _ := m["error"].(map[string]any)
			if status != http.StatusBadRequest || m["id"] != nil || e["code"] != float64(jsonrpc.CodeInvalidRequest) ||
				!strings.HasPrefix(e["message"].(string), "invalid request: no request of this session waits for a response with id ") {
				t.Errorf("%s: HTTP %d %s, want 400 and the refusal", who, status, body)
			}
		}
	}
	forged := map[string]any{"action": "accept", "content": map[string]any{"said": "forged"}}
	var asked []string
	var lastID any
	for m := range stream {
		if m["method"] == "elicitation/create" {
			p := m["params"].(map[string]any)
			if rel, _ := p["_meta"].(map[string]any)[metaRelatedTask].(map[string]any); rel["taskId"] != id {
				t.Errorf("a task's question without its related-task _meta: %s", dump(m))
			}
			asked = append(asked, p["message"].(string))
			if len(asked) == 1 {
				refused("an id never sent")(a.respond(requestIDPrefix+"http-999999", forged))
				refused("another session of alice's")(a2.respond(m["id"], forged))
				refused("bob on alice's session")(bobOnA.respond(m["id"], forged))
				refused("bob on his own session")(b.respond(m["id"], forged))
			}
			if status, body := a.respond(m["id"], map[string]any{"action": "accept", "content": map[string]any{"said": p["message"]}}); status != http.StatusAccepted {
				t.Fatalf("alice's answer: HTTP %d %s", status, body)
			}
			if len(asked) == 1 {
				refused("a second answer")(a.respond(m["id"], forged))
			}
			lastID = m["id"]
			continue
		}
		if m["id"] != float64(4) {
			t.Fatalf("an unexpected message on the stream: %s", dump(m))
		}
		res := resultOf(t, m)
		text := dump(res["content"])
		if !strings.Contains(text, `\"said\":\"First?\"`) || !strings.Contains(text, `\"said\":\"Second?\"`) || strings.Contains(text, "forged") {
			t.Errorf("tasks/result = %s", dump(res))
		}
	}
	if len(asked) != 2 || asked[0] != "First?" || asked[1] != "Second?" {
		t.Errorf("questions sent: %q", asked)
	}
	refused("an answer after the task ended")(a.respond(lastID, forged))
	if n := s.tasks.asks.count(); n != 0 {
		t.Errorf("%d questions still registered after the stream ended", n)
	}
}

// TestTaskInputLegacyHTTPUnanswered: a question the client never answers
// is given up after tools.defaults.client_wait: the tool sees the timeout,
// the task ends, and its tasks/result stream ends with that result,
// leaving no question registered. A client that did not declare
// elicitation at initialize is not asked at all: its task's call sees the
// feature unsupported, and tasks/result is a plain JSON reply.
func TestTaskInputLegacyHTTPUnanswered(t *testing.T) {
	s := inputServer(t, time.Millisecond)
	url := oauthTaskServer(t, s)
	a := (&httpPeer{t: t, url: url, token: "alice"}).open(map[string]any{"elicitation": map[string]any{}})
	id := resultOf(t, a.call(2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	res := resultOf(t, a.call(3, "tasks/result", map[string]any{"taskId": id}))
	if res["isError"] != true || !strings.Contains(dump(res["content"]), "(tools.defaults.client_wait)") {
		t.Errorf("tasks/result of an unanswered task: %s", dump(res))
	}
	if n := s.tasks.asks.count(); n != 0 {
		t.Errorf("%d questions still registered", n)
	}

	plain := (&httpPeer{t: t, url: url, token: "alice"}).open(map[string]any{})
	id = resultOf(t, plain.call(2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	resp := plain.post(map[string]any{"id": 3, "method": "tasks/result", "params": map[string]any{"taskId": id}})
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("tasks/result of a task that asks nothing: Content-Type %q", ct)
	}
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if res := resultOf(t, m); res["isError"] != true || !strings.Contains(dump(res["content"]), "no elicitation") {
		t.Errorf("a task of a client without elicitation: %s", dump(res))
	}
}

// TestHTTPAsksBounded: a session has at most maxAsksPerSession questions
// outstanding; another session's count is its own, and a question given
// up frees its place. A response is taken once, only from its session and
// principal.
func TestHTTPAsksBounded(t *testing.T) {
	var a httpAsks
	alice := principal.Principal{Subject: "alice", Via: principal.ViaOAuth, Issuer: "https://as"}
	var forget []func()
	var keys []string
	for range maxAsksPerSession {
		key, _, done, err := a.open("s1", alice)
		if err != nil {
			t.Fatal(err)
		}
		forget, keys = append(forget, done), append(keys, key)
	}
	if _, _, _, err := a.open("s1", alice); !errors.Is(err, errTooManyAsks) || err.Error() != "too many questions outstanding in this session (at most 8)" {
		t.Fatalf("one past the bound: %v", err)
	}
	if _, _, done, err := a.open("s2", alice); err != nil {
		t.Fatalf("another session: %v", err)
	} else {
		done()
	}
	forget[0]()
	key, reply, _, err := a.open("s1", alice)
	if err != nil {
		t.Fatalf("after one was given up: %v", err)
	}
	id, _ := jsonrpc.MakeID(key)
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{}`)}
	for _, c := range []struct {
		session string
		who     principal.Principal
	}{
		{"s2", alice},
		{"s1", principal.Principal{Subject: "alice", Via: principal.ViaOAuth, Issuer: "https://other-as"}},
		{"s1", principal.Principal{Subject: "bob", Via: principal.ViaOAuth, Issuer: "https://as"}},
		{"", alice},
	} {
		if a.deliver(c.session, c.who, resp) {
			t.Errorf("taken from %q %+v", c.session, c.who)
		}
	}
	if !a.deliver("s1", alice, resp) || a.deliver("s1", alice, resp) {
		t.Error("the asker's response not taken exactly once")
	}
	if got := <-reply; got != resp {
		t.Errorf("delivered %+v", got)
	}
	old, _ := jsonrpc.MakeID(keys[0])
	if a.deliver("s1", alice, &jsonrpc.Response{ID: old}) {
		t.Error("a response to a question given up was taken")
	}
}

// FuzzTaskLayerResponse POSTs arbitrary bodies, on an arbitrary session,
// to the task layer while one question of session "s1" waits: the
// question receives a response only when the body is a response to its
// id and came on its session, and a response to any id of the task
// layer's prefix never reaches the go-sdk (next). (Requests are
// FuzzTaskRequest's: a tasks/result may wait for its task.)
func FuzzTaskLayerResponse(f *testing.F) {
	for _, seed := range []struct{ session, body string }{
		{"s1", `{"jsonrpc":"2.0","id":"warden-task-http-1","result":{"action":"accept"}}`},
		{"s2", `{"jsonrpc":"2.0","id":"warden-task-http-1","result":{}}`},
		{"s1", `{"jsonrpc":"2.0","id":"warden-task-http-2","error":{"code":-1,"message":"no"}}`},
		{"s1", `{"jsonrpc":"2.0","id":"warden-task-http-1","result":{"x":"` + strings.Repeat("a", 300<<10) + `"}}`},
		{"", `{"jsonrpc":"2.0","id":"warden-task-http-1","result":{}}`},
		{"s1", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"s1", `[{"jsonrpc":"2.0","id":"warden-task-http-1","result":{}}]`},
		{"s1", `{"jsonrpc":"2.0","id":"warden-task-http-1","method":"tasks/get","params":{}}`},
		{"s1", `{"jsonrpc":"2.0","id":"warden-\u0074ask-http-1","result":{}}`},
		{"s1", `{"jsonrpc":"2.0","id":"warden-task-http-1","result":{},"error":{"code":-1,"message":"no"}}`},
	} {
		f.Add(seed.session, seed.body)
	}
	s := inputServer(f, 0)
	f.Fuzz(func(t *testing.T, session, body string) {
		if msg, err := decodeMessage(trimSpace([]byte(body))); err == nil {
			if _, ok := msg.(*jsonrpc.Request); ok {
				return // the requests' path: FuzzTaskRequest
			}
		}
		key, reply, forget, err := s.tasks.asks.open("s1", principal.Local)
		if err != nil {
			t.Fatal(err)
		}
		defer forget()
		passed := false
		h := s.routeTasks(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }))
		req := httptest.NewRequest(http.MethodPost, PathMCP, strings.NewReader(body))
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		msg, derr := decodeMessage(trimSpace([]byte(body)))
		resp, ours := isTaskLayerResponse(msg)
		if derr == nil && ours && passed {
			t.Fatalf("a response to the task layer reached the go-sdk: %s", body)
		}
		select {
		case got := <-reply:
			if derr != nil || !ours || got.ID.Raw() != key || session != "s1" || len(resp.Result) > 256<<10 || rec.Code != http.StatusAccepted ||
				resp.Result != nil && resp.Error != nil {
				t.Fatalf("delivered %s on session %q (HTTP %d)", body, session, rec.Code)
			}
		default:
			if rec.Code == http.StatusAccepted {
				t.Fatalf("202 for %s on %q without delivering it", body, session)
			}
		}
	})
}

// count is the number of questions waiting for a response.
func (a *httpAsks) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.byID)
}

// TestTaskInputHTTPRefusalsAndDelete: a response carrying both a result
// and an error is refused (400, the task layer's refusal) and not taken;
// a session its client DELETEs ends the question its tasks/result stream
// waits on (the stream ends, naming the deleted session), and a response
// to that question is refused afterwards.
func TestTaskInputHTTPRefusalsAndDelete(t *testing.T) {
	s := inputServer(t, 0)
	url := oauthTaskServer(t, s)
	a := (&httpPeer{t: t, url: url, token: "alice"}).open(map[string]any{"elicitation": map[string]any{}})
	id := resultOf(t, a.call(2, "tools/call", map[string]any{"name": "asker", "arguments": map[string]any{}, "task": map[string]any{}}))["task"].(map[string]any)["taskId"].(string)
	stream := events(t, a.post(map[string]any{"id": 3, "method": "tasks/result", "params": map[string]any{"taskId": id}}))
	q := <-stream
	if q["method"] != "elicitation/create" {
		t.Fatalf("first on the stream: %s", dump(q))
	}
	resp := a.post(map[string]any{"id": q["id"], "result": map[string]any{"action": "accept", "content": map[string]any{}},
		"error": map[string]any{"code": -1, "message": "no"}})
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "invalid request: a response with both a result and an error") {
		t.Errorf("a response with a result and an error: HTTP %d %s", resp.StatusCode, body)
	}

	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set("Mcp-Session-Id", a.session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	del, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	del.Body.Close()
	if del.StatusCode >= 300 {
		t.Fatalf("DELETE: HTTP %d", del.StatusCode)
	}
	last := within(t, "the deleted session's stream", stream)
	if e, _ := last["error"].(map[string]any); last["id"] != float64(3) || e == nil || !strings.Contains(e["message"].(string), "the session was deleted") {
		t.Errorf("the stream of a deleted session ended with %s", dump(last))
	}
	if status, body := a.respond(q["id"], map[string]any{"action": "accept", "content": map[string]any{}}); status != http.StatusBadRequest {
		t.Errorf("a response on a deleted session: HTTP %d %s", status, body)
	}
	if n := s.tasks.asks.count(); n != 0 {
		t.Errorf("%d questions still registered", n)
	}
}
