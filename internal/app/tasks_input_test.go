package app

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestTaskConfirmUnderChangedConfig: a gate's confirmation asked by a task
// (2026-07-28, over HTTP, the real guest) makes the task input_required
// with warden's own question, marked and carrying the config digest. The
// owner revokes the tool's grant while the question waits: the person's
// "accept" was given under the old config, so the runner does not take it
// (the question's config digest is not the config's in force), nothing
// runs, and the task completes with the refusal that says to call again.
// A tool cannot forge the question: its key is warden's, which
// hostfuncs/client refuses a guest.
func TestTaskConfirmUnderChangedConfig(t *testing.T) {
	w := newEscapeWorld(t)
	const extra = "\n  gates:\n    hostcalls: {action: confirm}\n  tasks:\n    hostcalls: optional"
	w.setGrants(t, "    hostcalls: {env: [VISIBLE]}"+extra)
	st, err := tasks.OpenFile(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	w.app.StartTasks(st, TaskOptions{PollInterval: time.Millisecond})
	s := mcpserver.New(w.app, w.app.ServerOptions(mcpserver.Options{Logger: discardLogger()}))
	t.Cleanup(func() { s.Close() })
	srv := httptest.NewServer(s.Handler(mcpserver.HTTPOptions{}))
	t.Cleanup(srv.Close)
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":      map[string]any{"name": "t", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{
			"elicitation": map[string]any{}, "extensions": map[string]any{mcpserver.ExtensionTasks: map[string]any{}},
		},
	}
	post := func(method, name string, params map[string]any) map[string]any {
		t.Helper()
		params["_meta"] = meta
		raw, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+mcpserver.PathMCP, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m struct {
			Result map[string]any `json:"result"`
			Error  any            `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.Result == nil {
			t.Fatalf("%s: HTTP %d, error %v, %v", method, resp.StatusCode, m.Error, err)
		}
		return m.Result
	}
	created := post("tools/call", "hostcalls", map[string]any{"name": "hostcalls",
		"arguments": map[string]any{"env": map[string]any{"op": "get", "key": "VISIBLE"}}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("tools/call = %v", created)
	}
	var got map[string]any
	for got == nil || got["status"] == "working" {
		got = post("tasks/get", id, map[string]any{"taskId": id})
	}
	q, _ := got["inputRequests"].(map[string]any)["warden/confirm@1"].(map[string]any)
	qmeta, _ := q["params"].(map[string]any)["_meta"].(map[string]any)
	if got["status"] != "input_required" || q["method"] != tool.MethodElicit || qmeta[tool.MetaQuestion] != "confirm" || qmeta[tool.MetaConfig] == "" {
		t.Fatalf("tasks/get while the confirmation waits: %v", got)
	}
	// The owner revokes while the person reads the question.
	if err := os.WriteFile(w.cfgPath, []byte(w.config("    hostcalls: {}"+extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	if ack := post("tasks/update", id, map[string]any{"taskId": id,
		"inputResponses": map[string]any{"warden/confirm@1": map[string]any{"action": "accept", "content": map[string]any{}}}}); ack["resultType"] != "complete" || ack["_meta"] != nil {
		t.Fatalf("tasks/update = %v", ack)
	}
	for got["status"] == "input_required" || got["status"] == "working" {
		got = post("tasks/get", id, map[string]any{"taskId": id})
	}
	res, _ := got["result"].(map[string]any)
	text, _ := json.Marshal(res["content"])
	if got["status"] != "completed" || res["isError"] != true ||
		!strings.Contains(string(text), `could not ask a person to confirm hostcalls`) ||
		!strings.Contains(string(text), `config changed while \"warden/confirm@1\" waited for an answer: the answer was given under the config it was asked under, so it is not taken; call again to be asked under the config in force`) {
		t.Fatalf("a task confirmed under a revoked grant: %v", got)
	}
	if _, ranIt := res["_meta"].(map[string]any)["warden/fuel"]; ranIt {
		t.Errorf("the guest ran: %v", res)
	}
}
