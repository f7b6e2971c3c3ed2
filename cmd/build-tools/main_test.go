package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
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
