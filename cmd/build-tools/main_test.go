package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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
