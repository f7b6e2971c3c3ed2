package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// taskHTTP serves s over HTTP and returns a poster of one JSON-RPC request
// with the given protocol version header and extra headers.
func taskHTTP(t *testing.T, s *Server) func(version string, body map[string]any, headers ...string) map[string]any {
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	return func(version string, body map[string]any, headers ...string) map[string]any {
		t.Helper()
		body["jsonrpc"], body["id"] = "2.0", 1
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+PathMCP, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
		}
		return m
	}
}

// taskCount is the number of tasks owner-independent in r's store.
func taskCount(t *testing.T, r *storeRunner) int {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done)
}

// TestTaskParamHeaders: a 2026-07-28 HTTP task call answers to the
// Mcp-Param-* headers of its tool's x-mcp-header properties exactly as the
// go-sdk holds the calls it answers: a header that disagrees with the body
// (or a missing one) is refused with the go-sdk's error, and no task is
// created.
func TestTaskParamHeaders(t *testing.T) {
	regional := tool.Descriptor{Name: "regional", Description: "d",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"object","properties":{"port":{"type":"integer","x-mcp-header":"Port"}}}}}`),
		Execution:   &tool.Execution{TaskSupport: tool.TaskOptional}}
	tools := newFakeTools(regional)
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		return &tool.Result{Content: []tool.Content{tool.TextContent("ran")}}, nil
	})
	r := newStoreRunner(t, tasks.Bounds{})
	s := New(tools, Options{Tasks: r, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { s.Close() })
	post := taskHTTP(t, s)
	call := func(args map[string]any, headers ...string) map[string]any {
		return post("2026-07-28", map[string]any{"method": "tools/call", "params": map[string]any{"name": "regional", "arguments": args, "_meta": modernMeta}},
			append([]string{"Mcp-Method", "tools/call", "Mcp-Name", "regional"}, headers...)...)
	}
	for _, c := range []struct {
		args    map[string]any
		headers []string
		want    string
	}{
		{map[string]any{"region": "prod"}, []string{"Mcp-Param-Region", "staging"}, "header mismatch: Mcp-Param-Region header value 'staging' does not match body value"},
		{map[string]any{"region": "prod"}, nil, `header mismatch: missing Mcp-Param-Region header for parameter "region"`},
		{map[string]any{}, []string{"Mcp-Param-Region", "prod"}, `header mismatch: unexpected Mcp-Param-Region header for absent or null parameter "region"`},
		{map[string]any{"n": map[string]any{"port": 80}}, []string{"Mcp-Param-Port", "81"}, "header mismatch: Mcp-Param-Port header value '81' does not match body value"},
		{map[string]any{"region": "prod"}, []string{"Mcp-Param-Region", "=?base64?!!?="}, "header mismatch: Mcp-Param-Region header contains invalid Base64 encoding"},
	} {
		code, msg := errorOf(t, call(c.args, c.headers...))
		if code != -32020 || msg != c.want {
			t.Errorf("%v %v: %d %q, want -32020 %q", c.args, c.headers, code, msg, c.want)
		}
	}
	if n := taskCount(t, r); n != 0 {
		t.Fatalf("%d tasks created by calls whose headers disagree with their bodies", n)
	}
	got := resultOf(t, call(map[string]any{"region": "prod", "n": map[string]any{"port": 80}}, "Mcp-Param-Region", "=?base64?cHJvZA==?=", "Mcp-Param-Port", "80"))
	if got["resultType"] != "task" || taskCount(t, r) != 1 {
		t.Fatalf("a call whose headers agree = %s", dump(got))
	}
}

// TestTaskVersionDowngrade: on HTTP the request's revision is its
// Mcp-Protocol-Version header, and a body _meta that names another is
// refused as the go-sdk refuses it: a 2025-11-25 header cannot carry a
// 2026-07-28 task past the 2026-07-28 header checks.
func TestTaskVersionDowngrade(t *testing.T) {
	s, r, release := taskServer(t, tasks.Bounds{})
	close(release)
	post := taskHTTP(t, s)
	params := map[string]any{"name": "maybe", "task": map[string]any{}, "_meta": modernMeta}
	code, msg := errorOf(t, post("2025-11-25", map[string]any{"method": "tools/call", "params": params}))
	if code != -32020 || msg != `Mcp-Protocol-Version header "2025-11-25" does not match request io.modelcontextprotocol/protocolVersion "2026-07-28"` {
		t.Errorf("2025-11-25 header, 2026-07-28 body: %d %q", code, msg)
	}
	if h := (http.Header{}); checkTaskVersion(h, &taskCall{Meta: taskMeta{ProtocolVersion: "2026-07-28"}}).Message != `Mcp-Protocol-Version header is required for requests carrying "io.modelcontextprotocol/protocolVersion"` {
		t.Error("no header, 2026-07-28 body: not refused")
	}
	code, msg = errorOf(t, post("2026-07-28", map[string]any{"method": "tasks/list", "params": map[string]any{}}, "Mcp-Method", "tasks/list"))
	if code != -32602 || msg != `missing or invalid _meta field "io.modelcontextprotocol/protocolVersion"` {
		t.Errorf("2026-07-28 header, no _meta: %d %q", code, msg)
	}
	if n := taskCount(t, r); n != 0 {
		t.Fatalf("%d tasks created across a version mismatch", n)
	}
	// The header's revision decides: 2025-11-25 header and _meta is a
	// 2025-11-25 task.
	legacy := map[string]any{"name": "maybe", "task": map[string]any{}, "_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}
	if got := resultOf(t, post("2025-11-25", map[string]any{"method": "tools/call", "params": legacy})); got["task"] == nil {
		t.Errorf("2025-11-25 header and _meta = %s", dump(got))
	}
}

// TestTaskUnknownToolNoResync: a task call naming a tool the server does
// not serve costs no resync unless a load ended unapplied (the gate an
// ordinary call passes, whileLoading): a client repeating
// {"name":"nope","task":{}} cannot make the server relist every tool per
// request. A load that did end is applied before the name is judged.
func TestTaskUnknownToolNoResync(t *testing.T) {
	tools := newFakeTools(taskDesc("maybe", tool.TaskOptional))
	var ended atomic.Uint64
	r := newStoreRunner(t, tasks.Bounds{})
	s := New(tools, Options{Tasks: r, Logger: slog.New(slog.DiscardHandler), LoadsEnded: ended.Load})
	t.Cleanup(func() { s.Close() })
	id, _ := jsonrpc.MakeID(float64(1))
	tc := taskContext{version: "2025-11-25", principal: principal.Local, peer: "p"}
	claim := func(name string) *taskReply {
		c := s.claimTask(&jsonrpc.Request{ID: id, Method: MethodCallTool, Params: json.RawMessage(`{"name":"` + name + `","task":{}}`)}, tc)
		if c == nil {
			t.Fatalf("task call of %q not claimed", name)
		}
		return c(context.Background())
	}
	before := s.resyncs.Load()
	for range 5 {
		if got := claim("nope"); got.err == nil || got.err.Message != `unknown tool "nope"` {
			t.Fatalf("task of an unknown tool = %+v", got)
		}
	}
	if n := s.resyncs.Load() - before; n != 0 {
		t.Fatalf("5 task calls of an unknown tool made %d resyncs, want 0", n)
	}
	// A load ends (its tool set is in place; its notification not applied).
	tools.set(taskDesc("maybe", tool.TaskOptional), taskDesc("late", tool.TaskOptional))
	ended.Add(1)
	if got := claim("late"); got.err != nil {
		t.Fatalf("task of a tool whose load ended = %+v", got.err)
	}
	if n := s.resyncs.Load() - before; n != 1 {
		t.Fatalf("a load that ended made %d resyncs, want 1", n)
	}
}

// TestTaskCallAmbiguousKeys: params that name a member twice or in
// another case are refused, not read one way here and another by the
// scope check in front (encoding/json matched "Name" and kept the last
// duplicate).
func TestTaskCallAmbiguousKeys(t *testing.T) {
	s, r, release := taskServer(t, tasks.Bounds{})
	close(release)
	id, _ := jsonrpc.MakeID(float64(1))
	tc := taskContext{version: "2025-11-25", principal: principal.Local, peer: "p"}
	for params, want := range map[string]string{
		`{"name":"never","Name":"maybe","task":{}}`:   `invalid params: ambiguous params: member "Name" is "name" in another case`,
		`{"name":"never","name":"maybe","task":{}}`:   `invalid params: ambiguous params: member "name" appears twice`,
		`{"name":"maybe","task":{},"TASK":{"ttl":1}}`: `invalid params: ambiguous params: member "TASK" is "task" in another case`,
	} {
		claim := s.claimTask(&jsonrpc.Request{ID: id, Method: MethodCallTool, Params: json.RawMessage(params)}, tc)
		if claim == nil {
			t.Errorf("%s: passed to the go-sdk", params)
			continue
		}
		if got := claim(context.Background()); got.err == nil || got.err.Code != jsonrpc.CodeInvalidParams || got.err.Message != want {
			t.Errorf("%s: %+v, want %q", params, got.err, want)
		}
	}
	if n := taskCount(t, r); n != 0 {
		t.Fatalf("%d tasks created from ambiguous params", n)
	}
}

// TestLegacyPayloadKeepsNumbers: tasks/result passes the stored result on
// as the tool wrote it, with _meta added: an integer past 2^53 survives.
func TestLegacyPayloadKeepsNumbers(t *testing.T) {
	task := tasks.Task{ID: tasks.NewID(), Status: tasks.Completed,
		Result: json.RawMessage(`{"content":[],"structuredContent":{"id":9007199254740993,"f":1.5},"_meta":{"k":18446744073709551615}}`)}
	r := legacyPayload(&task)
	if r.err != nil {
		t.Fatal(r.err)
	}
	raw, err := json.Marshal(r.result)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + task.ID + `"},"k":18446744073709551615},"content":[],"structuredContent":{"id":9007199254740993,"f":1.5}}`
	if string(raw) != want {
		t.Fatalf("tasks/result payload\n got %s\nwant %s", raw, want)
	}
	for _, bad := range []string{`[1]`, `null`, `{"_meta":3}`} {
		task.Result = json.RawMessage(bad)
		if r := legacyPayload(&task); r.err == nil || r.err.Code != jsonrpc.CodeInternalError {
			t.Errorf("stored result %s: %+v", bad, r)
		}
	}
}

// stuckConn is a connection whose writes wait for release: a client that
// stopped reading. entered hears each write as it starts.
type stuckConn struct {
	entered chan *jsonrpc.Request
	release chan struct{}
}

func (c *stuckConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}
func (c *stuckConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.entered <- m.(*jsonrpc.Request)
	<-c.release
	return nil
}
func (c *stuckConn) Close() error      { return nil }
func (c *stuckConn) SessionID() string { return "" }

// TestTaskNotifyDoesNotBlock: a stdio client that stops reading does not
// hold the task that notifies it: notify returns while a write is stuck,
// and what waits meanwhile is each task's newest status, written in order
// once the client reads again.
func TestTaskNotifyDoesNotBlock(t *testing.T) {
	s, _, _ := taskServer(t, tasks.Bounds{})
	conn := &stuckConn{entered: make(chan *jsonrpc.Request), release: make(chan struct{})}
	c := &taskConn{Connection: conn, s: s}
	status := func(id, st string) map[string]any { return map[string]any{"taskId": id, "status": st} }
	c.notify("notifications/tasks/status", status("a", "working"))
	first := <-conn.entered // the writer is now stuck in Write
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		c.notify("notifications/tasks/status", status("a", "working: 1 of 2"))
		c.notify("notifications/tasks/status", status("b", "working"))
		c.notify("notifications/tasks/status", status("a", "completed"))
		for i := range maxPendingNotes + 5 { // past the bound: dropped
			c.notify("notifications/tasks/status", status(fmt.Sprint("x", i), "working"))
		}
	}()
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Fatal("notify blocked behind a write the client does not read")
	}
	var got []string
	got = append(got, string(first.Params))
	go func() {
		for range maxPendingNotes + 1 {
			conn.release <- struct{}{}
		}
	}()
	for range maxPendingNotes {
		got = append(got, string((<-conn.entered).Params))
	}
	if got[0] != `{"status":"working","taskId":"a"}` || got[1] != `{"status":"completed","taskId":"a"}` || got[2] != `{"status":"working","taskId":"b"}` {
		t.Fatalf("notifications written: %v", got[:3])
	}
	if last := got[len(got)-1]; last != fmt.Sprintf(`{"status":"working","taskId":"x%d"}`, maxPendingNotes-3) {
		t.Fatalf("last notification written %s", last)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.noteKeys) != 0 || len(c.notes) != 0 {
		t.Fatalf("%d notifications left", len(c.noteKeys))
	}
}

// TestTaskWaitersBounded: a client's tasks/result and tasks/cancel
// requests waiting for tasks to end are bounded (each holds a goroutine
// until its task ends): past the bound the request is answered at once,
// server busy, naming the bound; another client is not held by it.
func TestTaskWaitersBounded(t *testing.T) {
	s, _, release := taskServer(t, tasks.Bounds{})
	id, _ := jsonrpc.MakeID(float64(1))
	tc := taskContext{version: "2025-11-25", principal: principal.Local, peer: "p"}
	claim := func(tc taskContext, method, params string) *taskReply {
		c := s.claimTask(&jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}, tc)
		return c(context.Background())
	}
	created := claim(tc, MethodCallTool, `{"name":"maybe","task":{}}`)
	if created.err != nil {
		t.Fatal(created.err)
	}
	taskID := created.result.(map[string]any)["task"].(map[string]any)["taskId"].(string)
	owner := tasks.OwnerOf(tc.principal, tc.peer)
	replies := make(chan *taskReply, maxTaskWaiters)
	for range maxTaskWaiters {
		go func() { replies <- claim(tc, "tasks/result", `{"taskId":"`+taskID+`"}`) }()
	}
	eventually(t, "the waiters", func() bool {
		s.tasks.waitMu.Lock()
		defer s.tasks.waitMu.Unlock()
		return s.tasks.waiters[owner] == maxTaskWaiters
	})
	for _, method := range []string{"tasks/result", "tasks/cancel"} {
		got := claim(tc, method, `{"taskId":"`+taskID+`"}`)
		want := fmt.Sprintf("%s: this client already has %d tasks/result and tasks/cancel requests waiting for tasks to end, the most it holds for one client; send it again once one is answered", method, maxTaskWaiters)
		if got.err == nil || got.err.Code != codeServerBusy || got.err.Message != want {
			t.Errorf("%s past the bound: %+v", method, got.err)
		}
	}
	// Another client's wait is its own: its tasks/get is answered, and
	// its tasks/result of a task it does not own is "not found" at once.
	other := taskContext{version: "2025-11-25", principal: principal.Local, peer: "q"}
	if got := claim(other, "tasks/result", `{"taskId":"`+taskID+`"}`); got.err == nil || got.err.Message != "Failed to retrieve task: Task not found" {
		t.Errorf("another client's tasks/result: %+v", got.err)
	}
	close(release)
	for range maxTaskWaiters {
		if got := <-replies; got.err != nil {
			t.Errorf("a waiting tasks/result: %+v", got.err)
		}
	}
	s.tasks.waitMu.Lock()
	defer s.tasks.waitMu.Unlock()
	if len(s.tasks.waiters) != 0 {
		t.Errorf("waiters left: %v", s.tasks.waiters)
	}
}

// TestTaskHTTPSessionMustLive: an unauthenticated HTTP task request owns
// its tasks by its session only when the server holds that session: one
// naming a made-up Mcp-Session-Id is the unlisted owner (no list, no
// bounds of its own), one of a live session owns them by it.
func TestTaskHTTPSessionMustLive(t *testing.T) {
	s, r, release := taskServer(t, tasks.Bounds{})
	close(release)
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	t.Cleanup(srv.Close)
	post := func(sid string, body string) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+PathMCP, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if i := bytes.Index(raw, []byte("data: ")); i >= 0 { // an SSE reply
			raw = raw[i+len("data: "):]
		}
		var m map[string]any
		json.NewDecoder(bytes.NewReader(raw)).Decode(&m)
		return resp, m
	}
	create := func(sid string) string {
		t.Helper()
		_, m := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"maybe","task":{}}}`)
		return resultOf(t, m)["task"].(map[string]any)["taskId"].(string)
	}
	made := create("a1")
	if _, err := r.store.Get(context.Background(), tasks.UnlistedOwner, made); err != nil {
		t.Errorf("a task of a made-up session is not the unlisted owner's: %v", err)
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session")
	}
	live := create(sid)
	if _, err := r.store.Get(context.Background(), tasks.OwnerOf(principal.Local, tasks.HTTPPeer(sid)), live); err != nil {
		t.Errorf("a task of a live session is not the session's: %v", err)
	}
}
