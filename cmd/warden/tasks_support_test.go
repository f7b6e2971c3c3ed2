package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// TestTaskSupportShown: the install review shows the task support a tool
// declares, and `warden tools` lists the tools that may run as tasks and
// what decides it, the descriptor or a tools.tasks entry over it.
func TestTaskSupportShown(t *testing.T) {
	longrun := testwasm.BuildGoFile(t, "../../tools-wasm/longrun")
	dir := t.TempDir()
	cache, _ := os.UserCacheDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	body := "tools:\n  dir: tools\n  cache_dir: " + filepath.Join(cache, "warden") + "\n  grants: {}\n  pins: {}\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "-c", cfgPath, "install", "--yes", "--name", "longrun", longrun)
	if err != nil {
		t.Fatal(err)
	}
	if want := "\n  tasks: optional (may run as an MCP task, under tools.limits.longrun.task_timeout and task_fuel instead of the interactive timeout)\n"; !strings.Contains(out, want) {
		t.Errorf("review:\n%s\nwant the line%s", out, want)
	}
	out, err = run(t, "", "-c", cfgPath, "tools")
	if want := "\nTASKS (1; optional or required run as MCP tasks under tools.limits.<tool>.task_timeout and task_fuel):\n  longrun: optional (its descriptor)\n"; err != nil || !strings.Contains(out, want) {
		t.Errorf("tools: %v\n%s\nwant%s", err, out, want)
	}
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, append(cfg, "  tasks: {\"long*\": forbidden}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, "", "-c", cfgPath, "tools", "-o", "json")
	if want := `"taskSupport": "forbidden",` + "\n      " + `"taskSetBy": "tools.tasks.long*"`; err != nil || !strings.Contains(out, want) {
		t.Errorf("tools -o json: %v\n%s\nwant %s", err, out, want)
	}
}
