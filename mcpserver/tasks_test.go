package mcpserver

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/tool"
)

// storeRunner is a TaskRunner over a real file store, as small as the
// protocol tests need: it runs each task's call to its end and stores how
// it ended. The app's runner (internal/app/tasks.go) has its own tests.
type storeRunner struct {
	store  tasks.Store
	bounds tasks.Bounds
	mu     sync.Mutex
	cancel map[string]context.CancelFunc
	done   map[string]chan struct{}
	wake   map[string]chan struct{}
}

func newStoreRunner(t testing.TB, b tasks.Bounds) *storeRunner {
	st, err := tasks.OpenFile(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &storeRunner{store: st, bounds: b, cancel: map[string]context.CancelFunc{}, done: map[string]chan struct{}{}}
}

func (r *storeRunner) Start(ctx context.Context, s TaskStart) (tasks.Task, error) {
	t := tasks.Task{ID: tasks.NewID(), Owner: s.Owner, Tool: s.Tool, TTL: cmp.Or(s.TTL, time.Hour), PollInterval: time.Second}
	if err := r.store.Create(ctx, t, r.bounds); err != nil {
		return tasks.Task{}, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	r.mu.Lock()
	r.cancel[t.ID], r.done[t.ID] = cancel, done
	r.mu.Unlock()
	go func() {
		defer close(done)
		res, err := s.Run(runCtx, TaskLink{Status: func(string) {}, Ask: func(ctx context.Context, reqs []tasks.InputRequest) ([]json.RawMessage, error) {
			return r.ask(ctx, s.Owner, t.ID, reqs)
		}})
		r.store.Update(context.Background(), s.Owner, t.ID, r.bounds, func(t *tasks.Task) {
			switch {
			case runCtx.Err() != nil:
				t.Status = tasks.Cancelled
			case err != nil:
				t.Status, t.StatusMessage = tasks.Failed, err.Error()
			default:
				t.Status, t.Result = tasks.Completed, res
			}
		})
	}()
	return r.store.Get(ctx, s.Owner, t.ID)
}

// ask is the fake's TaskLink.Ask: the record is input_required with reqs
// (keys as given) until Respond has answered all of them, then working.
func (r *storeRunner) ask(ctx context.Context, owner, id string, reqs []tasks.InputRequest) ([]json.RawMessage, error) {
	wake := make(chan struct{}, 1)
	r.mu.Lock()
	if r.wake == nil {
		r.wake = map[string]chan struct{}{}
	}
	r.wake[id] = wake
	r.mu.Unlock()
	if _, err := r.store.Update(ctx, owner, id, r.bounds, func(t *tasks.Task) { t.Status, t.InputRequests = tasks.InputRequired, reqs }); err != nil {
		return nil, err
	}
	for {
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		var answers []json.RawMessage
		if _, err := r.store.Update(ctx, owner, id, r.bounds, func(t *tasks.Task) {
			answers = nil
			if len(t.Outstanding()) > 0 {
				return
			}
			for _, q := range reqs {
				answers = append(answers, t.InputResponses[q.Key])
			}
			t.Status = tasks.Working
		}); err != nil {
			return nil, err
		}
		if answers != nil {
			return answers, nil
		}
	}
}

func (r *storeRunner) Respond(ctx context.Context, owner, id string, answers map[string]json.RawMessage) (map[string]string, error) {
	var ignored map[string]string
	var refused error
	_, err := r.store.Update(ctx, owner, id, r.bounds, func(t *tasks.Task) { ignored, refused = t.Answer(answers, CheckInputResponse) })
	if errors.Is(err, tasks.ErrTerminal) {
		t, err := r.store.Get(ctx, owner, id)
		if err != nil {
			return nil, err
		}
		return t.Answer(answers, CheckInputResponse)
	}
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	r.mu.Lock()
	wake := r.wake[id]
	r.mu.Unlock()
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	return ignored, nil
}

// AwaitInput polls the store: the fake's asks ring no bell.
func (r *storeRunner) AwaitInput(ctx context.Context, owner, id string) (tasks.Task, error) {
	for {
		t, err := r.store.Get(ctx, owner, id)
		if err != nil || t.Status.Terminal() || len(t.Outstanding()) > 0 {
			return t, err
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// AwaitAnswered polls the store, as AwaitInput does.
func (r *storeRunner) AwaitAnswered(ctx context.Context, owner, id, key string) (tasks.Task, error) {
	for {
		t, err := r.store.Get(ctx, owner, id)
		if err != nil || !slices.ContainsFunc(t.Outstanding(), func(q tasks.InputRequest) bool { return q.Key == key }) {
			return t, err
		}
		select {
		case <-ctx.Done():
			return t, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

func (r *storeRunner) Get(ctx context.Context, owner, id string) (tasks.Task, error) {
	return r.store.Get(ctx, owner, id)
}

func (r *storeRunner) List(ctx context.Context, owner, cursor string) ([]tasks.Task, string, error) {
	return r.store.List(ctx, owner, cursor, 2)
}

func (r *storeRunner) Cancel(ctx context.Context, owner, id string) (tasks.Task, error) {
	t, err := r.store.Cancel(ctx, owner, id)
	if err != nil {
		return t, err
	}
	r.mu.Lock()
	cancel, done := r.cancel[id], r.done[id]
	r.mu.Unlock()
	cancel()
	<-done
	return r.store.Get(ctx, owner, id)
}

func (r *storeRunner) Await(ctx context.Context, owner, id string) (tasks.Task, error) {
	if _, err := r.store.Get(ctx, owner, id); err != nil {
		return tasks.Task{}, err
	}
	r.mu.Lock()
	done := r.done[id]
	r.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			return tasks.Task{}, ctx.Err()
		}
	}
	return r.store.Get(ctx, owner, id)
}

func taskDesc(name, support string) tool.Descriptor {
	d := desc(name)
	d.Execution = &tool.Execution{TaskSupport: support}
	return d
}

// taskServer serves three tools (one per task support) with calls that
// wait for release before they answer.
func taskServer(t testing.TB, b tasks.Bounds) (*Server, *storeRunner, chan struct{}) {
	t.Helper()
	tools := newFakeTools(taskDesc("never", tool.TaskForbidden), taskDesc("maybe", tool.TaskOptional), taskDesc("always", tool.TaskRequired))
	release := make(chan struct{})
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if !c.Task {
			return &tool.Result{Content: []tool.Content{tool.TextContent("ran interactively")}}, nil
		}
		select {
		case <-release:
		case <-ctx.Done():
			return tool.ErrorResult(tool.Errorf(tool.KindCancelled, "cancelled")), nil
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("ran as a task")}}, nil
	})
	r := newStoreRunner(t, b)
	s := New(tools, Options{Tasks: r, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { s.Close() })
	return s, r, release
}

// rawStdio is a stdio client that speaks raw JSON-RPC lines to the server,
// through the same transports ServeStdio stacks.
type rawStdio struct {
	in  io.WriteCloser
	out *bufio.Reader
	mu  sync.Mutex
	// notes are the notifications read while waiting for replies.
	notes []map[string]any
}

func startRawStdio(t *testing.T, s *Server) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ctx, &taskTransport{s: s, Transport: &GuardedTransport{Reader: inR, Writer: outW}})
	}()
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close(); <-done })
	return &rawStdio{in: inW, out: bufio.NewReader(outR)}
}

// call sends one request and returns its response (result or error).
func (c *rawStdio) call(t *testing.T, id int, method string, params any) map[string]any {
	t.Helper()
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	for {
		l, err := c.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("reading the reply to %s: %v", method, err)
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("reply %q: %v", l, err)
		}
		if got, ok := m["id"].(float64); ok && int(got) == id {
			return m
		}
		c.mu.Lock()
		c.notes = append(c.notes, m)
		c.mu.Unlock()
	}
}

func (c *rawStdio) notify(t *testing.T, method string) {
	t.Helper()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

var modernMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}},
}

var undeclaredMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "t", "version": "1"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
}

func errorOf(t *testing.T, m map[string]any) (int, string) {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("want an error, got %s", dump(m))
	}
	return int(e["code"].(float64)), e["message"].(string)
}

func resultOf(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("want a result, got %s", dump(m))
	}
	return r
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func legacyInit(t *testing.T, c *rawStdio) map[string]any {
	t.Helper()
	init := resultOf(t, c.call(t, 1, "initialize", map[string]any{
		"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "1"},
	}))
	c.notify(t, "notifications/initialized")
	return init
}

// TestTasksLegacyStdio: a 2025-11-25 session is offered the tasks
// capability and each tool's execution.taskSupport; a task-augmented call
// of an optional tool makes a task whose result tasks/result returns with
// the related-task _meta once it ends; the forbidden and required tools
// are refused with -32601 as the spec says; an unknown id is -32602.
func TestTasksLegacyStdio(t *testing.T) {
	s, _, release := taskServer(t, tasks.Bounds{})
	c := startRawStdio(t, s)
	init := legacyInit(t, c)
	caps := init["capabilities"].(map[string]any)
	if got := dump(caps["tasks"]); got != `{"cancel":{},"list":{},"requests":{"tools":{"call":{}}}}` {
		t.Errorf("tasks capability = %s", got)
	}
	if _, ok := caps["extensions"]; ok {
		t.Errorf("a 2025-11-25 session is offered extensions: %s", dump(caps))
	}
	list := resultOf(t, c.call(t, 2, "tools/list", map[string]any{}))
	support := map[string]string{}
	for _, tl := range list["tools"].([]any) {
		m := tl.(map[string]any)
		support[m["name"].(string)] = m["execution"].(map[string]any)["taskSupport"].(string)
	}
	if want := map[string]string{"never": "forbidden", "maybe": "optional", "always": "required"}; dump(support) != dump(want) {
		t.Errorf("execution.taskSupport = %v, want %v", support, want)
	}

	code, msg := errorOf(t, c.call(t, 3, "tools/call", map[string]any{"name": "never", "task": map[string]any{}}))
	if code != jsonrpc.CodeMethodNotFound || !strings.Contains(msg, `tool "never" does not support task-augmented execution`) {
		t.Errorf("forbidden tool as a task: %d %q", code, msg)
	}
	code, msg = errorOf(t, c.call(t, 4, "tools/call", map[string]any{"name": "always"}))
	if code != jsonrpc.CodeMethodNotFound || !strings.Contains(msg, `tool "always" requires task-augmented execution`) {
		t.Errorf("required tool without a task: %d %q", code, msg)
	}
	if r := resultOf(t, c.call(t, 5, "tools/call", map[string]any{"name": "maybe"})); dump(r["content"]) != `[{"text":"ran interactively","type":"text"}]` {
		t.Errorf("optional tool without a task: %s", dump(r))
	}

	created := resultOf(t, c.call(t, 6, "tools/call", map[string]any{"name": "maybe", "task": map[string]any{"ttl": 60000}}))
	task := created["task"].(map[string]any)
	id := task["taskId"].(string)
	if task["status"] != "working" || task["ttl"] != float64(60000) || len(id) != tasks.IDLen {
		t.Fatalf("CreateTaskResult = %s", dump(created))
	}
	if got := resultOf(t, c.call(t, 7, "tasks/get", map[string]any{"taskId": id})); got["status"] != "working" {
		t.Errorf("tasks/get while it runs: %s", dump(got))
	}
	close(release)
	payload := resultOf(t, c.call(t, 8, "tasks/result", map[string]any{"taskId": id}))
	if dump(payload["content"]) != `[{"text":"ran as a task","type":"text"}]` ||
		dump(payload["_meta"].(map[string]any)[metaRelatedTask]) != fmt.Sprintf(`{"taskId":%q}`, id) {
		t.Errorf("tasks/result = %s", dump(payload))
	}
	if got := resultOf(t, c.call(t, 9, "tasks/get", map[string]any{"taskId": id})); got["status"] != "completed" {
		t.Errorf("tasks/get once ended: %s", dump(got))
	}
	code, msg = errorOf(t, c.call(t, 10, "tasks/cancel", map[string]any{"taskId": id}))
	if code != jsonrpc.CodeInvalidParams || msg != "Cannot cancel task: already in terminal status 'completed'" {
		t.Errorf("cancel of an ended task: %d %q", code, msg)
	}
	for i, params := range []map[string]any{{"taskId": strings.Repeat("0", tasks.IDLen)}, {"taskId": "../../etc/passwd"}, {}} {
		code, msg = errorOf(t, c.call(t, 20+i, "tasks/get", params))
		if code != jsonrpc.CodeInvalidParams || msg != "Failed to retrieve task: Task not found" {
			t.Errorf("tasks/get %v: %d %q", params, code, msg)
		}
	}
	if l := resultOf(t, c.call(t, 30, "tasks/list", map[string]any{})); len(l["tasks"].([]any)) != 1 {
		t.Errorf("tasks/list = %s", dump(l))
	}
}

// TestTasksModernStdio: a 2026-07-28 request is told of the extension by
// server/discover; a client that declares it gets a task for the optional
// tool (resultType "task"), and tasks/get inlines the result once done;
// tasks/cancel is an acknowledgement; a client that does not declare it
// gets the optional tool's result directly, -32021 for the required tool
// and for every tasks/* request; tasks/result and tasks/list are not
// methods of this generation.
func TestTasksModernStdio(t *testing.T) {
	s, _, release := taskServer(t, tasks.Bounds{})
	c := startRawStdio(t, s)
	disc := resultOf(t, c.call(t, 1, "server/discover", map[string]any{"_meta": modernMeta}))
	if got := dump(disc["capabilities"].(map[string]any)["extensions"]); got != `{"io.modelcontextprotocol/tasks":{}}` {
		t.Errorf("discover extensions = %s", got)
	}
	list := resultOf(t, c.call(t, 2, "tools/list", map[string]any{"_meta": modernMeta}))
	if strings.Contains(dump(list), "taskSupport") {
		t.Errorf("a 2026-07-28 tools/list shows execution.taskSupport: %s", dump(list))
	}
	if r := resultOf(t, c.call(t, 3, "tools/call", map[string]any{"name": "maybe", "_meta": undeclaredMeta})); r["resultType"] == "task" {
		t.Errorf("a task for a client that did not declare the extension: %s", dump(r))
	}
	code, msg := errorOf(t, c.call(t, 4, "tools/call", map[string]any{"name": "always", "_meta": undeclaredMeta}))
	if code != -32021 || !strings.Contains(msg, "did not declare the io.modelcontextprotocol/tasks extension") {
		t.Errorf("required tool, undeclared: %d %q", code, msg)
	}
	created := resultOf(t, c.call(t, 5, "tools/call", map[string]any{"name": "maybe", "_meta": modernMeta}))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || created["status"] != "working" || created["ttlMs"] != float64(time.Hour.Milliseconds()) {
		t.Fatalf("CreateTaskResult = %s", dump(created))
	}
	if _, nested := created["task"]; nested {
		t.Errorf("a 2026-07-28 CreateTaskResult nests a task: %s", dump(created))
	}
	code, _ = errorOf(t, c.call(t, 6, "tasks/get", map[string]any{"taskId": id, "_meta": undeclaredMeta}))
	if code != -32021 {
		t.Errorf("tasks/get without the extension: %d", code)
	}
	for i, m := range []string{"tasks/result", "tasks/list"} {
		if code, _ := errorOf(t, c.call(t, 7+i, m, map[string]any{"taskId": id, "_meta": modernMeta})); code != jsonrpc.CodeMethodNotFound {
			t.Errorf("%s on 2026-07-28: %d", m, code)
		}
	}
	// A working task asks nothing: an answer is acknowledged and not
	// taken (SEP-2663), the acknowledgement saying why.
	if r := resultOf(t, c.call(t, 9, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{}}, "_meta": modernMeta})); dump(r) !=
		`{"_meta":{"warden/ignoredInputResponses":{"x":"task `+id+` is working and asks nothing"}},"resultType":"complete"}` {
		t.Errorf("tasks/update of a working task = %s", dump(r))
	}
	if r := resultOf(t, c.call(t, 9, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}, "_meta": modernMeta})); dump(r) != `{"resultType":"complete"}` {
		t.Errorf("empty tasks/update = %s", dump(r))
	}
	close(release)
	var got map[string]any
	for got == nil || got["status"] == "working" {
		got = resultOf(t, c.call(t, 10, "tasks/get", map[string]any{"taskId": id, "_meta": modernMeta}))
	}
	if got["status"] != "completed" || got["resultType"] != "complete" ||
		dump(got["result"].(map[string]any)["content"]) != `[{"text":"ran as a task","type":"text"}]` {
		t.Errorf("tasks/get once done = %s", dump(got))
	}
	if r := resultOf(t, c.call(t, 11, "tasks/cancel", map[string]any{"taskId": id, "_meta": modernMeta})); dump(r) != `{"resultType":"complete"}` {
		t.Errorf("tasks/cancel of an ended task = %s", dump(r))
	}
}

// TestTaskCancelStops: tasks/cancel cancels the call's context (the tool
// sees ctx end) and the task ends cancelled.
func TestTaskCancelStops(t *testing.T) {
	s, _, _ := taskServer(t, tasks.Bounds{})
	c := startRawStdio(t, s)
	legacyInit(t, c)
	created := resultOf(t, c.call(t, 2, "tools/call", map[string]any{"name": "always", "task": map[string]any{}}))
	id := created["task"].(map[string]any)["taskId"].(string)
	got := resultOf(t, c.call(t, 3, "tasks/cancel", map[string]any{"taskId": id}))
	if got["status"] != "cancelled" {
		t.Errorf("tasks/cancel = %s", dump(got))
	}
}

// TestTasksBoundedAndPrivate: past the store's bound a call is refused with
// the store's error; another principal's tasks/get, tasks/result and
// tasks/cancel get exactly the answer of an id that does not exist, and
// its tasks/list does not show the task.
func TestTasksBoundedAndPrivate(t *testing.T) {
	s, _, release := taskServer(t, tasks.Bounds{PerOwner: 1})
	defer close(release)
	alice := taskContext{version: "2025-11-25", principal: principal.Principal{Subject: "alice", Issuer: "https://as", Via: principal.ViaOAuth}}
	bob := taskContext{version: "2025-11-25", principal: principal.Principal{Subject: "bob", Issuer: "https://as", Via: principal.ViaOAuth}}
	ask := func(tc taskContext, method string, params any) *taskReply {
		raw, _ := json.Marshal(params)
		id, _ := jsonrpc.MakeID(float64(1))
		claim := s.claimTask(&jsonrpc.Request{ID: id, Method: method, Params: raw}, tc)
		if claim == nil {
			t.Fatalf("%s was not claimed", method)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return claim(ctx)
	}
	created := ask(alice, "tools/call", map[string]any{"name": "maybe", "task": map[string]any{}})
	if created.err != nil {
		t.Fatal(created.err)
	}
	id := created.result.(map[string]any)["task"].(map[string]any)["taskId"].(string)
	again := ask(alice, "tools/call", map[string]any{"name": "maybe", "task": map[string]any{}})
	if again.err == nil || again.err.Code != codeServerBusy || !errors.Is(tasks.ErrTooMany, tasks.ErrTooMany) ||
		!strings.Contains(again.err.Message, "too many unfinished tasks: this client has 1") {
		t.Errorf("second task past PerOwner 1: %+v", again)
	}
	unknown := strings.Repeat("0", tasks.IDLen)
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		theirs, none := ask(bob, m, map[string]any{"taskId": id}), ask(bob, m, map[string]any{"taskId": unknown})
		if theirs.err == nil || dump(theirs.err) != dump(none.err) {
			t.Errorf("%s of alice's task by bob = %+v, of an unknown id %+v", m, theirs.err, none.err)
		}
	}
	if l := ask(bob, "tasks/list", map[string]any{}); dump(l.result) != `{"tasks":[]}` {
		t.Errorf("bob's tasks/list = %s", dump(l.result))
	}
	if l := ask(alice, "tasks/list", map[string]any{}); !strings.Contains(dump(l.result), id) {
		t.Errorf("alice's tasks/list = %s", dump(l.result))
	}
}

// TestTasksHTTP: over streamable HTTP the task requests are answered in
// front of the go-sdk, both generations.
func TestTasksHTTP(t *testing.T) {
	s, _, release := taskServer(t, tasks.Bounds{})
	close(release)
	srv := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer srv.Close()
	post := func(version string, body map[string]any, headers ...string) map[string]any {
		t.Helper()
		body["jsonrpc"], body["id"] = "2.0", 1
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+PathMCP, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", version)
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
	created := resultOf(t, post("2025-11-25", map[string]any{"method": "tools/call", "params": map[string]any{"name": "maybe", "task": map[string]any{}}}))
	id := created["task"].(map[string]any)["taskId"].(string)
	if r := resultOf(t, post("2025-11-25", map[string]any{"method": "tasks/result", "params": map[string]any{"taskId": id}})); !strings.Contains(dump(r), "ran as a task") {
		t.Errorf("tasks/result = %s", dump(r))
	}
	created = resultOf(t, post("2026-07-28", map[string]any{"method": "tools/call", "params": map[string]any{"name": "maybe", "_meta": modernMeta}},
		"Mcp-Method", "tools/call", "Mcp-Name", "maybe"))
	if created["resultType"] != "task" {
		t.Fatalf("2026-07-28 tools/call = %s", dump(created))
	}
	id = created["taskId"].(string)
	code, _ := errorOf(t, post("2026-07-28", map[string]any{"method": "tasks/get", "params": map[string]any{"taskId": id, "_meta": undeclaredMeta}},
		"Mcp-Method", "tasks/get", "Mcp-Name", id))
	if code != -32021 {
		t.Errorf("undeclared tasks/get over HTTP: %d", code)
	}
	if got := resultOf(t, post("2026-07-28", map[string]any{"method": "tasks/get", "params": map[string]any{"taskId": id, "_meta": modernMeta}},
		"Mcp-Method", "tasks/get", "Mcp-Name", " "+id+" ")); got["taskId"] != id {
		t.Errorf("tasks/get with Mcp-Name = %s", dump(got))
	}
	// SEP-2243/2663: the routing headers name what the body names.
	for _, h := range [][]string{
		{"Mcp-Method", "tasks/get", "Mcp-Name", strings.Repeat("0", tasks.IDLen)},
		{"Mcp-Method", "tasks/cancel", "Mcp-Name", id},
		{"Mcp-Method", "tasks/get"},
	} {
		code, msg := errorOf(t, post("2026-07-28", map[string]any{"method": "tasks/get", "params": map[string]any{"taskId": id, "_meta": modernMeta}}, h...))
		if code != -32020 || !strings.HasPrefix(msg, "header mismatch: ") {
			t.Errorf("headers %v: %d %q", h, code, msg)
		}
	}
}

// TestTaskOfToolStillLoading: a task asked for a tool whose module still
// loads (a client calling right after start) waits for the load, as an
// ordinary call does, and is then a task; a tool that never appears is
// "unknown tool", as the go-sdk says it.
func TestTaskOfToolStillLoading(t *testing.T) {
	tools := &loadingTools{fakeTools: newFakeTools(desc("echo")), loading: []string{"late"},
		ended: make(chan struct{}), awaiting: make(chan struct{}, 4)}
	r := newStoreRunner(t, tasks.Bounds{})
	s := New(tools, tools.options(Options{Tasks: r, Logger: slog.New(slog.DiscardHandler), QueueWait: time.Minute}))
	t.Cleanup(func() { s.Close() })
	id, _ := jsonrpc.MakeID(float64(1))
	tc := taskContext{version: "2025-11-25", principal: principal.Local, peer: "p"}
	claim := s.claimTask(&jsonrpc.Request{ID: id, Method: MethodCallTool, Params: json.RawMessage(`{"name":"late","task":{}}`)}, tc)
	if claim == nil {
		t.Fatal("a task of a tool still loading was handed to the go-sdk, which would run it interactively")
	}
	reply := make(chan *taskReply)
	go func() { reply <- claim(context.Background()) }()
	<-tools.awaiting
	tools.reload(desc("echo"), taskDesc("late", tool.TaskOptional))
	tools.mu.Lock()
	tools.loading = nil
	close(tools.ended)
	tools.ended = make(chan struct{})
	tools.mu.Unlock()
	got := <-reply
	if got.err != nil || !strings.Contains(dump(got.result), `{"task":{"createdAt"`) {
		t.Fatalf("task of a tool that finished loading = %+v", got)
	}

	tools.mu.Lock()
	tools.loading = []string{"other"}
	tools.mu.Unlock()
	claim = s.claimTask(&jsonrpc.Request{ID: id, Method: MethodCallTool, Params: json.RawMessage(`{"name":"nope","task":{}}`)}, tc)
	go func() { reply <- claim(context.Background()) }()
	<-tools.awaiting
	tools.mu.Lock()
	tools.loading = nil
	close(tools.ended)
	tools.ended = make(chan struct{})
	tools.mu.Unlock()
	if got := <-reply; got.err == nil || got.err.Code != jsonrpc.CodeInvalidParams || got.err.Message != `unknown tool "nope"` {
		t.Errorf("task of a tool that never loads = %+v", got)
	}
}

// TestTaskMethodOfOtherGeneration: a tasks/* method the request's protocol
// generation does not have is -32601 whatever its params, before the task
// id is parsed and before the extension is asked for: 2026-07-28 removed
// tasks/result and tasks/list (the conformance suite's
// tasks-dispatch-and-envelope probes them with "tasks-conformance-isolation-probe",
// no task id of warden's, and got -32602), and 2025-11-25 has no
// tasks/update. The methods each generation has still parse the id.
func TestTaskMethodOfOtherGeneration(t *testing.T) {
	s, _, _ := taskServer(t, tasks.Bounds{})
	modern := startRawStdio(t, s)
	const probe = "tasks-conformance-isolation-probe"
	for i, m := range []string{"tasks/result", "tasks/list"} {
		for j, meta := range []map[string]any{modernMeta, undeclaredMeta} {
			code, msg := errorOf(t, modern.call(t, 1+2*i+j, m, map[string]any{"taskId": probe, "_meta": meta}))
			if code != jsonrpc.CodeMethodNotFound || msg != `method "`+m+`" not found` {
				t.Errorf("%s at 2026-07-28 (meta %v): %d %q", m, meta, code, msg)
			}
		}
	}
	if code, _ := errorOf(t, modern.call(t, 10, "tasks/get", map[string]any{"taskId": probe, "_meta": modernMeta})); code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of a malformed id at 2026-07-28: %d, want %d", code, jsonrpc.CodeInvalidParams)
	}

	legacy := startRawStdio(t, s)
	legacyInit(t, legacy)
	code, msg := errorOf(t, legacy.call(t, 2, "tasks/update", map[string]any{"taskId": probe, "inputResponses": map[string]any{}}))
	if code != jsonrpc.CodeMethodNotFound || msg != `method "tasks/update" not found` {
		t.Errorf("tasks/update at 2025-11-25: %d %q", code, msg)
	}
	if code, _ := errorOf(t, legacy.call(t, 3, "tasks/result", map[string]any{"taskId": probe})); code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/result of a malformed id at 2025-11-25: %d, want %d", code, jsonrpc.CodeInvalidParams)
	}
}

// TestTaskDiscoverResultType: the server/discover result that names the
// Tasks extension still says resultType "complete", which the spec's schema
// requires of it; wrapping the go-sdk's result to add the extension had
// lost the field, which the go-sdk sets on its own result types only (the
// conformance suite's wire-schema-valid check failed on it).
func TestTaskDiscoverResultType(t *testing.T) {
	s, _, _ := taskServer(t, tasks.Bounds{})
	c := startRawStdio(t, s)
	disc := resultOf(t, c.call(t, 1, "server/discover", map[string]any{"_meta": modernMeta}))
	if disc["resultType"] != "complete" {
		t.Errorf("server/discover resultType = %v, want complete: %s", disc["resultType"], dump(disc))
	}
	if got := dump(disc["capabilities"].(map[string]any)["extensions"]); got != `{"io.modelcontextprotocol/tasks":{}}` {
		t.Errorf("discover extensions = %s", got)
	}
}
