package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// TestDeprecatedGrantWarns: the real binary, given a config that grants a
// tool sampling (deprecated by MCP 2026-07-28), still runs the command and
// warns on stderr, naming the key, the value and what to use instead;
// without it, stderr stays empty.
func TestDeprecatedGrantWarns(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "greet.wasm"), testwasm.ReplyingWAT(t, "hello", "greet"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	for grant, want := range map[string]string{
		"{client: [sample]}": `level=WARN msg="config uses a deprecated MCP feature; it still works" file=` + cfg +
			` key=tools.grants.greet.client value=sample why="MCP 2026-07-28 deprecates sampling (SEP-2577)" instead="the tool calls its model provider's API itself, under a net grant (tools.grants.greet.net)"`,
		"{client: [elicit]}": "",
	} {
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("tools:\n  dir: %s\n  cache_dir: %s\n  grants:\n    greet: %s\n", tools, filepath.Join(dir, "cache"), grant)), 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runIn(t, dir, nil, "call", "greet", "-c", cfg)
		// The time attribute differs per run: compare from the level on.
		if i := strings.Index(stderr, "level="); i > 0 {
			stderr = stderr[i:]
		}
		if code != 0 || !strings.Contains(stdout, "hello") || strings.TrimSpace(stderr) != want {
			t.Errorf("grant %s: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", grant, code, stdout, stderr, want)
		}
	}
}
