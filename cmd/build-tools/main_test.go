package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestToolsListsGoFolders(t *testing.T) {
	src := t.TempDir()
	for _, d := range []string{"a", "b", "empty"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	os.WriteFile(filepath.Join(src, "a", "main.go"), []byte("package main"), 0o644)
	os.WriteFile(filepath.Join(src, "b", "main.go"), []byte("package main"), 0o644)
	os.WriteFile(filepath.Join(src, "README.md"), nil, 0o644)
	b := &builder{src: src, out: t.TempDir(), log: io.Discard}
	names, err := b.tools()
	if err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("tools() = %v, %v", names, err)
	}
	if err := b.run([]string{"c"}, 1); err == nil || err.Error() != `no tool "c" in `+src+` (have a, b)` {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestUpToDateWithoutOutput(t *testing.T) {
	fresh, err := upToDate("./nonexistent", filepath.Join(t.TempDir(), "x.wasm"))
	if fresh || err != nil {
		t.Fatalf("missing output: fresh=%v err=%v", fresh, err)
	}
}

func TestRetireRemovesReplacedOutputs(t *testing.T) {
	out := t.TempDir()
	for _, f := range []string{"hover.wasm", "workspace_symbols.wasm", "echo.wasm", "lsp.wasm"} {
		os.WriteFile(filepath.Join(out, f), []byte("\x00asm"), 0o644)
	}
	var log strings.Builder
	b := &builder{out: out, log: &log}
	if err := b.retire("echo"); err != nil {
		t.Fatal(err)
	}
	if err := b.retire("lsp"); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if !slices.Equal(left, []string{"echo.wasm", "lsp.wasm"}) {
		t.Fatalf("left %v, want echo.wasm and lsp.wasm", left)
	}
	if !strings.Contains(log.String(), "removed "+filepath.Join(out, "hover.wasm")+": its tools are in lsp.wasm now") {
		t.Fatalf("log: %s", log.String())
	}
}

// TestUpToDateFollowsLocalReplacements: a tool in a module of its own sees
// warden through a replace of a local path, whose files are not in the
// immutable module cache, so a change there makes the output stale.
func TestUpToDateFollowsLocalReplacements(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib/go.mod", "module example.com/lib\n\ngo 1.24\n")
	write("lib/lib.go", "package lib\n\nconst X = 1\n")
	write("tool/go.mod", "module example.com/tool\n\ngo 1.24\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ../lib\n")
	write("tool/main.go", "package main\n\nimport \"example.com/lib\"\n\nvar _ = lib.X\n\nfunc main() {}\n")
	dest := filepath.Join(root, "tool.wasm")
	write("tool.wasm", "")
	old := time.Now().Add(-time.Hour)
	for _, f := range []string{"lib/go.mod", "lib/lib.go", "tool/go.mod", "tool/main.go"} {
		os.Chtimes(filepath.Join(root, f), old, old)
	}
	dir := filepath.Join(root, "tool")
	if fresh, err := upToDate(dir, dest); !fresh || err != nil {
		t.Fatalf("before the change: fresh=%v err=%v", fresh, err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(root, "lib/lib.go"), later, later)
	if fresh, err := upToDate(dir, dest); fresh || err != nil {
		t.Fatalf("after a change to the replaced module: fresh=%v err=%v", fresh, err)
	}
}
