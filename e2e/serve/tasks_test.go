package serve

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
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
			if c, ok := f.c.(*taskStdio); ok && f.legacy {
				// 2025-11-25 over stdio: each stored change is also pushed.
				eventually(t, "notifications/tasks/status of the ended task", func() bool {
					c.mu.Lock()
					defer c.mu.Unlock()
					for _, n := range c.notes {
						p, _ := n["params"].(map[string]any)
						if n["method"] == "notifications/tasks/status" && p["taskId"] == id && p["status"] == "completed" {
							return true
						}
					}
					return false
				})
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
			if _, err := fmt.Sscanf(msg, "cancelled on request; %d progress reports after the cancel; its last status: iteration %d of 1000000000", &after, &round); err != nil {
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

// tsSDK is the TypeScript SDK .ci/run installs (pinned) for
// TestTasksTypeScriptSDK, or "" when it is not installed.
func tsSDK(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(built.root, ".ci", "cache", "tssdk", "node_modules", "@modelcontextprotocol", "sdk")
	_, err := os.Stat(filepath.Join(dir, "package.json"))
	_, nodeErr := exec.LookPath("node")
	if err != nil || nodeErr != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the TypeScript SDK (%s) or node is missing: .ci/run installs them", dir)
		}
		t.Skipf("the TypeScript SDK is not installed in %s (.ci/run installs it) or node is missing", dir)
	}
	return dir
}

// TestTasksTypeScriptSDK: the official TypeScript SDK's task client
// (@modelcontextprotocol/sdk 1.32.2, client.experimental.tasks, the
// 2025-11-25 generation, which is the one it implements) over stdio and
// streamable HTTP: it sees the tasks capability and the tool's
// execution.taskSupport, runs a task to its result, and cancels one
// mid-loop, which ends cancelled within one round of the guest's loop.
func TestTasksTypeScriptSDK(t *testing.T) {
	t.Parallel()
	sdk := tsSDK(t)
	e := newEnv(t, "", "taskloop")
	hs := startHTTP(t, e)
	script := filepath.Join(built.root, "e2e", "serve", "testdata", "tasksclient", "client.mjs")
	for name, args := range map[string][]string{
		"stdio": {"stdio", built.warden, e.config},
		"http":  {"http", hs.url()},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("node", append([]string{script, sdk}, args...)...)
			cmd.Env = childEnv()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("the TypeScript client failed: %v\n%s\n%s", err, out, stderr.String())
			}
			steps := map[string]json.RawMessage{}
			for line := range strings.Lines(string(out)) {
				var s struct {
					Step  string          `json:"step"`
					Value json.RawMessage `json:"value"`
				}
				if err := json.Unmarshal([]byte(line), &s); err != nil {
					t.Fatalf("client line %q: %v", line, err)
				}
				steps[s.Step] = s.Value
			}
			want := map[string]string{
				"capabilities":    `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`,
				"taskSupport":     `"optional"`,
				"cancelledStream": `"McpError: MCP error -32603: Task `,
			}
			for step, w := range want {
				if !strings.HasPrefix(string(steps[step]), w) {
					t.Errorf("%s = %s, want %s…", step, steps[step], w)
				}
			}
			var completed []map[string]any
			json.Unmarshal(steps["completed"], &completed)
			if n := len(completed); n < 3 || completed[0]["type"] != "taskCreated" ||
				completed[n-1]["type"] != "result" || completed[n-1]["text"] != "ran 3 iterations" ||
				completed[n-2]["status"] != "completed" || completed[n-2]["statusMessage"] != "iteration 3 of 3" {
				t.Errorf("the completed task's stream = %s", steps["completed"])
			}
			var cancel struct{ Status, StatusMessage string }
			json.Unmarshal(steps["cancel"], &cancel)
			var round, after int
			if _, err := fmt.Sscanf(cancel.StatusMessage, "cancelled on request; %d progress reports after the cancel; its last status: iteration %d of 1000000000", &after, &round); err != nil ||
				cancel.Status != "cancelled" || after > 1 {
				t.Errorf("tasks/cancel = %s (%v)", steps["cancel"], err)
			}
		})
	}
}

// TestCallTask: `warden call --task` runs the call as a task on the
// project's task store, shows its progress on stderr and prints the result
// as `warden call` does; Ctrl-C (SIGINT) cancels it, and it exits 1 once
// the task ended cancelled, having said so on stderr, the guest stopped
// within one round of its loop.
func TestCallTask(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "taskloop")
	run := exec.Command(built.warden, "call", "--config", e.config, "--task", "taskloop", `{"iterations":2,"work":10}`)
	run.Env = childEnv()
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("warden call --task: %v\n%s", err, stderr.String())
	}
	var res struct {
		Content []struct{ Text string }
	}
	if json.Unmarshal(out, &res) != nil || len(res.Content) != 1 || res.Content[0].Text != "ran 2 iterations" {
		t.Errorf("stdout = %s", out)
	}
	if !strings.Contains(stderr.String(), "task: iteration 2 of 2\n") || !regexpMatch(`task [0-9a-f]{32} completed: iteration 2 of 2\n`, stderr.String()) {
		t.Errorf("stderr = %s", stderr.String())
	}

	cancel := exec.Command(built.warden, "call", "--config", e.config, "--task", "taskloop", `{"iterations":1000000000,"work":20000}`)
	cancel.Env = childEnv()
	progress := &logBuffer{}
	cancel.Stderr = progress
	var stdout bytes.Buffer
	cancel.Stdout = &stdout
	if err := cancel.Start(); err != nil {
		t.Fatal(err)
	}
	eventuallyLong(t, "the task's first rounds on stderr", func() bool {
		return strings.Contains(progress.String(), "task: iteration ")
	})
	cancel.Process.Signal(os.Interrupt)
	err = cancel.Wait()
	if code := cancel.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit status after Ctrl-C = %d (%v), want 1", code, err)
	}
	var id string
	var round, after int
	lines := progress.lines("cancelled: cancelled on request")
	if len(lines) != 1 {
		t.Fatalf("stderr has no cancelled task line:\n%s", progress.String())
	}
	if _, err := fmt.Sscanf(lines[0], "task %s cancelled: cancelled on request; %d progress reports after the cancel; its last status: iteration %d of 1000000000", &id, &after, &round); err != nil || after > 1 {
		t.Errorf("cancelled line %q: %v", lines[0], err)
	}
	if !strings.Contains(stdout.String(), `"kind": "cancelled"`) {
		t.Errorf("stdout after Ctrl-C = %s", stdout.String())
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// TestTasksReplicas: two replicas sharing their state (memory.backend on
// one PostgreSQL, which tasks.backend follows; the project's task store
// where that is not configured): a task started on one is read from the
// other; killed with SIGKILL mid-task, its replica stops renewing the
// lease, and the other replica's sweep ends the task failed by lease
// expiry, never leaving it working. It polls until then, no fixed sleep.
func TestTasksReplicas(t *testing.T) {
	t.Parallel()
	dbURL := pg.DB(t)
	e := newEnv(t, "", "taskloop")
	key := base64.StdEncoding.EncodeToString([]byte("replicas-share-this-32-byte-key!"))
	extra := []string{"WARDEN_MEMORY_BACKEND=" + dbURL, "WARDEN_SERVER_STATE_KEY=" + key, "WARDEN_TASKS_LEASE=3s"}
	a, b := startReplica(t, e, extra...), startReplica(t, e, extra...)
	onA := taskFlow{legacy: true, c: &taskHTTP{url: a.url(), version: "2025-11-25"}}
	onB := taskFlow{legacy: true, c: &taskHTTP{url: b.url(), version: "2025-11-25"}}
	id := onA.start(t, map[string]any{"iterations": 1_000_000_000, "work": 20_000})
	onB.until(t, id, "the task running on A, read from B", func(m map[string]any) bool {
		s, _ := m["statusMessage"].(string)
		return m["status"] == "working" && strings.HasPrefix(s, "iteration ")
	})
	a.kill(t)
	task := onB.until(t, id, "the task of the killed replica to end", ended)
	if task["status"] != "failed" || task["statusMessage"] != "its server stopped (lease expired)" {
		t.Errorf("task of the killed replica = %s", dump(task))
	}
	if got := onB.c.call(t, "tasks/result", map[string]any{"taskId": id}); !strings.Contains(dump(got["error"]), "its server stopped (lease expired)") {
		t.Errorf("tasks/result of the failed task = %s", dump(got))
	}
}

// TestTasksInputRequiredReplicas: two replicas on one PostgreSQL, the real
// conformance guest. A task started on A whose guest asks two questions at
// once (multi_input) is input_required with both, read from B; B takes the
// answers, one tasks/update at a time (after the first the task still asks
// the other), and they reach the guest parked on A through the record: the
// task completes on A with both answers. A key not outstanding is not
// taken, the ack saying why. A guest that crashes (protocol_error_job)
// ends its task failed, with the trap's message as the error.
func TestTasksInputRequiredReplicas(t *testing.T) {
	t.Parallel()
	dbURL := pg.DB(t)
	e := newEnv(t, "", "conformance")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cfg), "  grants:\n", "  grants:\n    multi_input: {module: conformance, client: [elicit]}\n", 1)
	if err := os.WriteFile(e.config, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	key := base64.StdEncoding.EncodeToString([]byte("replicas-share-this-32-byte-key!"))
	extra := []string{"WARDEN_MEMORY_BACKEND=" + dbURL, "WARDEN_SERVER_STATE_KEY=" + key, "WARDEN_TASKS_POLL_INTERVAL=100ms"}
	a, b := startReplica(t, e, extra...), startReplica(t, e, extra...)
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"elicitation": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}},
		},
	}
	onA, onB := &taskHTTP{url: a.url(), version: "2026-07-28"}, &taskHTTP{url: b.url(), version: "2026-07-28"}
	call := func(c *taskHTTP, method string, p map[string]any) map[string]any {
		t.Helper()
		p["_meta"] = meta
		return c.call(t, method, p)
	}
	get := func(c *taskHTTP, id string) map[string]any {
		return tresult(t, call(c, "tasks/get", map[string]any{"taskId": id}))
	}
	created := tresult(t, call(onA, "tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{}}))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call = %s", dump(created))
	}
	var task map[string]any
	eventuallyLong(t, "the task to ask, read from B", func() bool {
		task = get(onB, id)
		return task["status"] == "input_required" || ended(task)
	})
	reqs, _ := task["inputRequests"].(map[string]any)
	first, _ := reqs["first@1"].(map[string]any)
	if len(reqs) != 2 || first["method"] != "elicitation/create" || !strings.HasSuffix(first["params"].(map[string]any)["message"].(string), "> First question?") {
		t.Fatalf("input_required task = %s", dump(task))
	}
	answer := func(text string) map[string]any {
		return map[string]any{"action": "accept", "content": map[string]any{"answer": text}}
	}
	if ack := tresult(t, call(onB, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"first@1": answer("one"), "nope": answer("x")}})); ack["resultType"] != "complete" ||
		dump(ack["_meta"]) != `{"warden/ignoredInputResponses":{"nope":"not an outstanding request of this task (outstanding: \"first@1\", \"second@1\")"}}` {
		t.Errorf("partial tasks/update = %s", dump(ack))
	}
	if task = get(onA, id); task["status"] != "input_required" || len(task["inputRequests"].(map[string]any)) != 1 || task["inputRequests"].(map[string]any)["second@1"] == nil {
		t.Fatalf("after the partial update = %s", dump(task))
	}
	// The last answer, taken on B, wakes the guest parked on A.
	if ack := tresult(t, call(onB, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"second@1": answer("two")}})); ack["resultType"] != "complete" || ack["_meta"] != nil {
		t.Errorf("tasks/update = %s", dump(ack))
	}
	eventuallyLong(t, "the task to complete on A", func() bool { task = get(onA, id); return ended(task) })
	res, _ := task["result"].(map[string]any)
	if task["status"] != "completed" || !strings.Contains(dump(res["content"]), `Received 2 answers`) ||
		!strings.Contains(dump(res["content"]), `one`) || !strings.Contains(dump(res["content"]), `two`) {
		t.Errorf("the answered task = %s", dump(task))
	}

	created = tresult(t, call(onA, "tools/call", map[string]any{"name": "protocol_error_job", "arguments": map[string]any{}}))
	id, _ = created["taskId"].(string)
	eventuallyLong(t, "the crashed task to end", func() bool { task = get(onB, id); return ended(task) })
	if e, _ := task["error"].(map[string]any); task["status"] != "failed" || task["result"] != nil || e["code"] != float64(-32603) ||
		!strings.Contains(e["message"].(string), "protocol_error_job crashes on purpose") {
		t.Errorf("the crashed task = %s", dump(task))
	}
}
