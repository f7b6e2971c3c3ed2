package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeAuditsEveryDoor: the real binary's audit log holds a call line
// for every run of module code, whichever door it came through: a tool's
// call, a resource read, a template read, a prompt get and a completion,
// each with its method, what it named, the tool it ran as and its module,
// and its capability requests carry the same request.
func TestServeAuditsEveryDoor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "doors")
	if err := os.MkdirAll(filepath.Join(e.dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "    doors: {}\n", "    open: {module: doors, fs: {write: [out]}}\n", 1)
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(e.dir, "audit.log")
	e.withConfig(t, fmt.Sprintf("  audit: %s\n", audit))
	cs, _ := stdioServer(t, e, "", nil)
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "open", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("call open: %v %+v", err, res)
	}
	for _, uri := range []string{"doors://open/resource", "doors://open/item/7"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
			t.Fatalf("read %s: %v", uri, err)
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "open_prompt"}); err != nil {
		t.Fatalf("get open_prompt: %v", err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "open_prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}}); err != nil {
		t.Fatalf("complete open_prompt: %v", err)
	}
	// Closing stdin ends the server, which flushes the audit log.
	if err := cs.Close(); err != nil {
		t.Fatalf("warden serve did not exit cleanly: %v", err)
	}

	f, err := os.Open(audit)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct {
			Who, Method, Tool, Module, Target, Event, Decision, Kind string
			DurationMs                                               *float64 `json:"duration_ms"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if l.Event == "call" && l.DurationMs == nil {
			t.Errorf("a call line without its duration: %s", sc.Text())
		}
		got = append(got, strings.Join([]string{l.Who, l.Event, l.Method, l.Tool, l.Module, l.Target, l.Decision, l.Kind}, " "))
	}
	want := []string{
		"local fs tools/call open doors  allow ",
		"local call tools/call open doors  allow ok",
		"local fs resources/read open doors doors://open/resource allow ",
		"local call resources/read open doors doors://open/resource allow ok",
		"local fs resources/read open doors doors://open/item/7 allow ",
		"local call resources/read open doors doors://open/item/7 allow ok",
		"local fs prompts/get open doors open_prompt allow ",
		"local call prompts/get open doors open_prompt allow ok",
		"local fs completion/complete open doors open_prompt allow ",
		"local call completion/complete open doors open_prompt allow ok",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
