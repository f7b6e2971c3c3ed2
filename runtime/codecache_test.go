package runtime_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/runtime"
)

// TestTamperedCompiledCodeNeverRuns: a compiled entry changed on disk
// between two starts is removed before the module loads, the module is
// compiled afresh and answers right, and the warning names the file.
func TestTamperedCompiledCodeNeverRuns(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	wantPong(t, loadTool(t, rt, "ping", wasm, runtime.Limits{}))

	compiled, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if len(compiled) == 0 {
		t.Fatal("no compiled entry written")
	}
	for _, f := range compiled {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff // inside the machine code
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	rt2 := newRuntime(t, runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	wantPong(t, loadTool(t, rt2, "ping", wasm, runtime.Limits{}))
	if !strings.Contains(logs.String(), compiled[0]) || !strings.Contains(logs.String(), "compiled again") {
		t.Fatalf("no warning naming the tampered entry:\n%s", logs.String())
	}
}

// TestUnsafeCacheDirFallsBackToMemory: a cache dir others may write is not
// used (compiled code is run as trusted), and modules still load.
func TestUnsafeCacheDirFallsBackToMemory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	var logs bytes.Buffer
	rt := newRuntime(t, runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	wantPong(t, loadTool(t, rt, "ping", watFixture{name: "ping"}.build(t), runtime.Limits{}))
	if written, _ := os.ReadDir(dir); len(written) != 0 {
		t.Fatalf("compiled code or manifests written to a world-writable dir: %v", written)
	}
	if !strings.Contains(logs.String(), "writable by others") {
		t.Fatalf("no warning about the dir:\n%s", logs.String())
	}
}
