package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/observe"
)

// legacySession is a raw 2025-11-25 streamable HTTP session.
type legacySession struct {
	url, id string
}

func (c *legacySession) post(t *testing.T, msg map[string]any) *http.Response {
	t.Helper()
	msg["jsonrpc"] = "2.0"
	raw, _ := json.Marshal(msg)
	req, _ := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if c.id != "" {
		req.Header.Set("Mcp-Session-Id", c.id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if c.id == "" {
		c.id = resp.Header.Get("Mcp-Session-Id")
	}
	return resp
}

// messages reads the JSON-RPC messages of a reply: each SSE event's data,
// or the JSON body.
func messages(t *testing.T, resp *http.Response) <-chan map[string]any {
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
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && data != "" {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					out <- m
				}
			}
		}
	}()
	return out
}

func (c *legacySession) call(t *testing.T, id int, method string, params map[string]any) map[string]any {
	t.Helper()
	for m := range messages(t, c.post(t, map[string]any{"id": id, "method": method, "params": params})) {
		if m["id"] == float64(id) {
			return m
		}
	}
	t.Fatalf("no reply to %s", method)
	return nil
}

func (c *legacySession) respond(t *testing.T, id any, result map[string]any) (int, string) {
	t.Helper()
	resp := c.post(t, map[string]any{"id": id, "result": result})
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func openLegacySession(t *testing.T, url string) *legacySession {
	t.Helper()
	c := &legacySession{url: url}
	tresult(t, c.call(t, 1, "initialize", map[string]any{"protocolVersion": "2025-11-25",
		"capabilities": map[string]any{"elicitation": map[string]any{}}, "clientInfo": map[string]any{"name": "e2e", "version": "1"}}))
	c.post(t, map[string]any{"method": "notifications/initialized"}).Body.Close()
	if c.id == "" {
		t.Fatal("initialize opened no session")
	}
	return c
}

// TestTasksInputRequiredLegacyHTTP: the real binary over streamable HTTP at
// 2025-11-25: a task of the conformance fixture multi_input (a guest that
// asks two elicitations at once) is input_required; the session's
// tasks/result streams both questions (tied to the task), a response
// POSTed by another session is refused and never reaches the guest, the
// asking session's responses are taken, and the stream ends with the
// guest's result. The audit log holds the task's change into
// input_required (two elicitations, counted, not their text) and out of it.
func TestTasksInputRequiredLegacyHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "conformance")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(cfg), "  grants:\n", "  grants:\n    multi_input: {module: conformance, client: [elicit]}\n", 1)
	if err := os.WriteFile(e.config, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(e.dir, "audit.log")
	e.withConfig(t, fmt.Sprintf("  audit: %s\n", audit))
	s := startHTTP(t, e)
	a, other := openLegacySession(t, s.url()), openLegacySession(t, s.url())

	created := tresult(t, a.call(t, 2, "tools/call", map[string]any{"name": "multi_input", "arguments": map[string]any{}, "task": map[string]any{}}))
	id := created["task"].(map[string]any)["taskId"].(string)
	eventuallyLong(t, "the task to ask", func() bool {
		task := tresult(t, a.call(t, 3, "tasks/get", map[string]any{"taskId": id}))
		return task["status"] == "input_required" || ended(task)
	})
	var asked []string
	var result map[string]any
	for m := range messages(t, a.post(t, map[string]any{"id": 4, "method": "tasks/result", "params": map[string]any{"taskId": id}})) {
		if m["method"] == "elicitation/create" {
			p := m["params"].(map[string]any)
			if rel, _ := p["_meta"].(map[string]any)["io.modelcontextprotocol/related-task"].(map[string]any); rel["taskId"] != id {
				t.Errorf("a question without its related-task _meta: %s", dump(m))
			}
			msg := p["message"].(string)
			asked = append(asked, msg)
			if status, body := other.respond(t, m["id"], map[string]any{"action": "accept", "content": map[string]any{"answer": "forged"}}); status != http.StatusBadRequest ||
				!strings.Contains(body, "no request of this session waits for a response with id") {
				t.Errorf("another session's response: HTTP %d %s", status, body)
			}
			answer := "one"
			if strings.HasSuffix(msg, "Second question?") {
				answer = "two"
			}
			if status, body := a.respond(t, m["id"], map[string]any{"action": "accept", "content": map[string]any{"answer": answer}}); status != http.StatusAccepted {
				t.Fatalf("the asking session's response: HTTP %d %s", status, body)
			}
			continue
		}
		if m["id"] == float64(4) {
			result = tresult(t, m)
		}
	}
	if len(asked) != 2 {
		t.Errorf("questions streamed: %q", asked)
	}
	text := dump(result["content"])
	if !strings.Contains(text, "Received 2 answers") || !strings.Contains(text, "one") || !strings.Contains(text, "two") || strings.Contains(text, "forged") {
		t.Errorf("tasks/result = %s", dump(result))
	}

	// SIGTERM flushes the audit log.
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("warden serve still running 30 s after SIGTERM")
	}
	raw, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var l observe.Line
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if l.Event == observe.TaskStatus && l.Target == id {
			changes = append(changes, fmt.Sprintf("%s %s>%s %s %s", l.Tool, l.From, l.Outcome, l.Requests, l.Reason))
		}
		if strings.Contains(line, "question?") || strings.Contains(line, `"one"`) {
			t.Errorf("an audit line holds a question or an answer: %s", line)
		}
	}
	want := []string{"multi_input working>input_required elicitation/create=2 ", "multi_input input_required>working  answered"}
	if dump(changes) != dump(want) {
		t.Errorf("task_status lines %q, want %q", changes, want)
	}
}
