package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// MCP tasks end to end, with raw JSON-RPC (the go-sdk's client has no task
// support): the real binary over stdio and streamable HTTP, on both
// protocol generations (2025-11-25's task-augmented requests, 2026-07-28's
// Tasks extension). The TypeScript SDK's own task client is driven in
// TestTasksTypeScriptSDK.

// taskRPC sends JSON-RPC requests and returns their responses.
type taskRPC interface {
	call(t *testing.T, method string, params map[string]any) map[string]any
}

// taskStdio is `warden serve` over stdio, spoken to line by line.
type taskStdio struct {
	in     io.WriteCloser
	stderr *logBuffer
	mu     sync.Mutex
	nextID int
	wait   map[int]chan map[string]any
	notes  []map[string]any
}

func startTaskStdio(t *testing.T, e *env) *taskStdio {
	t.Helper()
	c := &taskStdio{stderr: &logBuffer{}, wait: map[int]chan map[string]any{}}
	dumpOnFailure(t, "warden serve (stdio)", c.stderr)
	cmd := exec.Command(built.warden, "serve", "--config", e.config)
	cmd.Env = childEnv()
	cmd.Stderr = c.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.in = in
	go func() {
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			c.mu.Lock()
			if id, ok := m["id"].(float64); ok && c.wait[int(id)] != nil {
				c.wait[int(id)] <- m
				delete(c.wait, int(id))
			} else {
				c.notes = append(c.notes, m)
			}
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		in.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("warden serve exited with %v after stdin closed", err)
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Errorf("warden serve still running a minute after stdin closed")
		}
	})
	return c
}

func (c *taskStdio) send(t *testing.T, m map[string]any) {
	t.Helper()
	line, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

func (c *taskStdio) call(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan map[string]any, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	c.send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	select {
	case m := <-ch:
		return m
	case <-time.After(2 * time.Minute):
		t.Fatalf("no reply to %s %v", method, params)
		return nil
	}
}

// initialize opens a session at protocol 2025-11-25.
func (c *taskStdio) initialize(t *testing.T) {
	t.Helper()
	res := tresult(t, c.call(t, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e", "version": "1"}}))
	if _, ok := res["capabilities"].(map[string]any)["tasks"]; !ok {
		t.Fatalf("initialize declares no tasks capability: %s", dump(res))
	}
	c.send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// taskHTTP posts each request on its own, at one protocol version.
type taskHTTP struct {
	url, version string
}

func (c *taskHTTP) call(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", c.version)
	req.Header.Set("Mcp-Method", method)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("%s: HTTP %d: %v", method, resp.StatusCode, err)
	}
	return m
}

var tasksMeta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "e2e", "version": "1"},
	"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
}

func tresult(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("want a result, got %s", dump(m))
	}
	return r
}

// taskFlow is one generation's way to start, follow and cancel a task.
type taskFlow struct {
	legacy bool
	c      taskRPC
}

func (f taskFlow) params(p map[string]any) map[string]any {
	if !f.legacy {
		p["_meta"] = tasksMeta
	}
	return p
}

func (f taskFlow) start(t *testing.T, args map[string]any) string {
	t.Helper()
	p := map[string]any{"name": "taskloop", "arguments": args}
	if f.legacy {
		p["task"] = map[string]any{"ttl": 600000}
	}
	res := tresult(t, f.c.call(t, "tools/call", f.params(p)))
	if f.legacy {
		return res["task"].(map[string]any)["taskId"].(string)
	}
	if res["resultType"] != "task" {
		t.Fatalf("tools/call was not answered with a task: %s", dump(res))
	}
	return res["taskId"].(string)
}

func (f taskFlow) get(t *testing.T, id string) map[string]any {
	t.Helper()
	return tresult(t, f.c.call(t, "tasks/get", f.params(map[string]any{"taskId": id})))
}

// until polls tasks/get until cond holds of the task (no fixed sleeps: it
// polls as a client does, and fails after a generous bound).
func (f taskFlow) until(t *testing.T, id, what string, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var last map[string]any
	eventuallyLong(t, what, func() bool {
		last = f.get(t, id)
		return cond(last)
	})
	return last
}

func ended(task map[string]any) bool {
	switch task["status"] {
	case "completed", "failed", "cancelled":
		return true
	}
	return false
}

// eventuallyLong is eventually with room for a guest's minutes of work.
func eventuallyLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTasks: on every transport and generation, a task runs the guest to
// its end and returns its result; and a tasks/cancel mid-loop stops the
// guest within one round of its loop, counted: the guest reports progress
// after each round, and the cancelled task's status message says how many
// reports came after the cancel (at most the one in flight).
func TestTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "taskloop")
	hs := startHTTP(t, e)
	for _, tc := range []struct{ transport, protocol string }{
		{"stdio", "2025-11-25"},
		{"stdio", "2026-07-28"},
		{"http", "2025-11-25"},
		{"http", "2026-07-28"},
	} {
		t.Run(tc.transport+"/"+tc.protocol, func(t *testing.T) {
			f := taskFlow{legacy: tc.protocol == "2025-11-25"}
			if tc.transport == "stdio" {
				c := startTaskStdio(t, e)
				if f.legacy {
					c.initialize(t)
				}
				f.c = c
			} else {
				f.c = &taskHTTP{url: hs.url(), version: tc.protocol}
			}

			id := f.start(t, map[string]any{"iterations": 3, "work": 1000})
			var result map[string]any
			if f.legacy {
				result = tresult(t, f.c.call(t, "tasks/result", map[string]any{"taskId": id}))
				if got := result["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"]; dump(got) != fmt.Sprintf(`{"taskId":%q}`, id) {
					t.Errorf("tasks/result related-task = %s", dump(got))
				}
			} else {
				result = f.until(t, id, "the task to end", ended)["result"].(map[string]any)
			}
			if got := dump(result["content"]); got != `[{"text":"ran 3 iterations","type":"text"}]` {
				t.Errorf("result content = %s", got)
			}
			if got := f.get(t, id); got["status"] != "completed" || got["statusMessage"] != "iteration 3 of 3" {
				t.Errorf("ended task = %s", dump(got))
			}

			id = f.start(t, map[string]any{"iterations": 1_000_000_000, "work": 20_000})
			f.until(t, id, "the guest's first rounds", func(m map[string]any) bool {
				s, _ := m["statusMessage"].(string)
				return strings.HasPrefix(s, "iteration ")
			})
			ack := tresult(t, f.c.call(t, "tasks/cancel", f.params(map[string]any{"taskId": id})))
			if !f.legacy && dump(ack) != `{"resultType":"complete"}` {
				t.Errorf("2026-07-28 tasks/cancel = %s", dump(ack))
			}
			if f.legacy && ack["status"] != "cancelled" {
				t.Errorf("2025-11-25 tasks/cancel = %s (the task must be cancelled before the reply)", dump(ack))
			}
			task := f.until(t, id, "the cancelled task to end", ended)
			msg, _ := task["statusMessage"].(string)
			var round, after int
			if task["status"] != "cancelled" {
				t.Fatalf("cancelled task = %s", dump(task))
			}
			if _, err := fmt.Sscanf(msg, "cancelled on request; its last status: iteration %d of 1000000000; %d progress reports after the cancel", &round, &after); err != nil {
				t.Fatalf("status message %q: %v", msg, err)
			}
			if round < 1 || after > 1 {
				t.Errorf("the guest ran %d rounds, %d of them reported after the cancel (want at most 1): %q", round, after, msg)
			}
		})
	}
}

// TestTasksPrivate: a task belongs to the principal that created it: a
// second stdio client (another process on the same task store) and an
// HTTP client get, for its id, exactly the answer for an id that does not
// exist, and do not see it listed.
func TestTasksPrivate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "taskloop")
	owner := startTaskStdio(t, e)
	owner.initialize(t)
	f := taskFlow{legacy: true, c: owner}
	id := f.start(t, map[string]any{"iterations": 1, "work": 1})
	tresult(t, owner.call(t, "tasks/result", map[string]any{"taskId": id}))

	other := startTaskStdio(t, e)
	other.initialize(t)
	hs := startHTTP(t, e)
	for name, c := range map[string]taskRPC{"stdio": other, "http": &taskHTTP{url: hs.url(), version: "2025-11-25"}} {
		for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
			theirs := c.call(t, m, map[string]any{"taskId": id})
			none := c.call(t, m, map[string]any{"taskId": strings.Repeat("0", 32)})
			if theirs["error"] == nil || dump(theirs["error"]) != dump(none["error"]) {
				t.Errorf("%s: %s of another's task = %s, of an unknown id %s", name, m, dump(theirs), dump(none))
			}
		}
		if l := tresult(t, c.call(t, "tasks/list", map[string]any{})); strings.Contains(dump(l), id) {
			t.Errorf("%s: tasks/list shows another's task: %s", name, dump(l))
		}
	}
	if l := tresult(t, owner.call(t, "tasks/list", map[string]any{})); !strings.Contains(dump(l), id) {
		t.Errorf("the owner's tasks/list does not show its task: %s", dump(l))
	}
}

// TestTasksOutlastTimeout: a call of 30 s of guest work (30 rounds of a
// 1 s sleep) under a 5 s interactive timeout fails as an ordinary call,
// and completes as a task, under the tool's task budget
// (tools.limits.<tool>.task_timeout).
func TestTasksOutlastTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "taskloop: {timeout: 5s, task_timeout: 60s}", "taskloop")
	check := exec.Command(built.warden, "tools", "--config", e.config)
	check.Env = childEnv()
	if out, err := check.CombinedOutput(); err != nil && strings.Contains(string(out), "task_timeout") {
		t.Skipf("this build has no task budgets (tools.limits.<tool>.task_timeout): %s", firstLine(out))
	}
	c := startTaskStdio(t, e)
	c.initialize(t)
	args := map[string]any{"iterations": 30, "sleep_ms": 1000}
	interactive := tresult(t, c.call(t, "tools/call", map[string]any{"name": "taskloop", "arguments": args}))
	if interactive["isError"] != true || !strings.Contains(dump(interactive), "timeout") {
		t.Errorf("interactive call = %s, want a timeout", dump(interactive))
	}
	f := taskFlow{legacy: true, c: c}
	id := f.start(t, args)
	res := tresult(t, c.call(t, "tasks/result", map[string]any{"taskId": id}))
	if got := dump(res["content"]); got != `[{"text":"ran 30 iterations","type":"text"}]` {
		t.Errorf("task result = %s", dump(res))
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

