package serve

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolPolicyMeetsTheToolInAnySpelling: shouty's tool is READER, and
// each policy below names it in another case (tools.hide and tools.expose
// are lists, whose values viper leaves as written; tools.gates is a map,
// whose keys it lower-cases). Every one applies to READER, and a client
// spelling the name another way does not reach it either. A pattern whose
// meaning case-folding changes is refused at start, naming the key.
func TestToolPolicyMeetsTheToolInAnySpelling(t *testing.T) {
	for _, tc := range []struct {
		name, policy string
		check        func(t *testing.T, cs *mcp.ClientSession)
	}{
		{"hide", "  hide: [reAder]\n", func(t *testing.T, cs *mcp.ClientSession) { wantUnreachable(t, cs) }},
		{"hide-pattern", "  hide: [\"Rea[D]*\"]\n", func(t *testing.T, cs *mcp.ClientSession) { wantUnreachable(t, cs) }},
		{"expose", "  expose: [ECHO]\n", func(t *testing.T, cs *mcp.ClientSession) { wantUnreachable(t, cs) }},
		{"gate", "  gates:\n    ReAdEr: {action: block, message: not today}\n", func(t *testing.T, cs *mcp.ClientSession) {
			wantBlocked(t, cs, "tool READER is blocked by tools.gates.reader: not today")
		}},
		{"gate-pattern", "  gates:\n    \"R[E]a*\": {action: block}\n", func(t *testing.T, cs *mcp.ClientSession) {
			wantBlocked(t, cs, "tool READER is blocked by tools.gates.r[e]a*")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := spellingEnv(t, tc.policy)
			cs, _ := stdioServer(t, e, "", nil)
			tc.check(t, cs)
			wantEcho(t, cs, "still serving")
		})
	}
	t.Run("refused-pattern", func(t *testing.T) {
		t.Parallel()
		e := spellingEnv(t, "  gates:\n    \"rea[Z-a]er\": {action: block}\n")
		out, err := exec.Command(built.warden, "serve", "--config", e.config).CombinedOutput()
		if err == nil || !strings.Contains(string(out), `tools.gates.rea[Z-a]er: "rea[Z-a]er" is not a tool name or pattern: range Z-a`) {
			t.Fatalf("serve with a gate case-folding empties: %v\n%s", err, out)
		}
	})
}

// spellingEnv serves echo and shouty (tool READER) under policy, YAML lines
// under tools:.
func spellingEnv(t *testing.T, policy string) *env {
	t.Helper()
	e := newEnv(t, "", "echo", "shouty")
	cfg := fmt.Sprintf("project:\n  root: %s\ntools:\n  dir: %s\n  cache_dir: %s\n%slog:\n  level: info\n", e.dir, e.tools, built.cacheDir, policy)
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// wantUnreachable: READER is not listed, and no spelling of it is called.
func wantUnreachable(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	if names := toolNames(t, cs); slices.Contains(names, "READER") || !slices.Contains(names, "echo") {
		t.Fatalf("tools/list = %v, want echo without READER", names)
	}
	for _, name := range []string{"READER", "reader", "Reader"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("tools/call %s ran the hidden tool: %s", name, dump(res))
		}
		if err == nil && !strings.Contains(text(t, res), fmt.Sprintf("no tool named %q", name)) {
			t.Fatalf("tools/call %s: %s", name, dump(res))
		}
	}
}

// wantBlocked: READER is called only to be refused by its gate, with the
// message and config line; other spellings name no tool.
func wantBlocked(t *testing.T, cs *mcp.ClientSession, msg string) {
	t.Helper()
	res := call(t, cs, "READER", map[string]any{})
	wantFailure(t, res, "denied")
	if got := text(t, res); !strings.Contains(got, msg) || !strings.Contains(got, "tools.gates.reader.action: allow") {
		t.Fatalf("READER: %q, want %q and the allow line", got, msg)
	}
	for _, name := range []string{"reader", "Reader"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("tools/call %s ran READER past its gate: %s", name, dump(res))
		}
	}
}
