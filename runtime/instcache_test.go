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

// TestInstrumentedBytesCached: a module loaded again (a restart) takes the
// instrumentation pass's output from the cache and behaves the same; a
// damaged entry is removed, reported and rebuilt, never served.
func TestInstrumentedBytesCached(t *testing.T) {
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	rt := newRuntime(t, runtime.Options{CacheDir: dir})
	wantPong(t, loadTool(t, rt, "ping", wasm, runtime.Limits{}))
	if n := runtime.InstrumentPasses(rt); n != 1 {
		t.Fatalf("cold load ran %d passes, want 1", n)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "instrumented", "*.wasm"))
	if len(entries) != 1 {
		t.Fatalf("want one cached instrumented module, got %v", entries)
	}

	rt = newRuntime(t, runtime.Options{CacheDir: dir})
	wantPong(t, loadTool(t, rt, "ping", wasm, runtime.Limits{}))
	if n := runtime.InstrumentPasses(rt); n != 0 {
		t.Fatalf("warm load ran %d passes, want 0", n)
	}

	for name, damage := range map[string]func([]byte) []byte{
		"byte flipped in the module": func(b []byte) []byte { b[len(b)-40] ^= 1; return b },
		"byte flipped in the header": func(b []byte) []byte { b[30] ^= 1; return b },
		"truncated":                  func(b []byte) []byte { return b[:len(b)/2] },
		"bytes appended":             func(b []byte) []byte { return append(b, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(entries[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(entries[0], damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			rt := newRuntime(t, runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			wantPong(t, loadTool(t, rt, "ping", wasm, runtime.Limits{}))
			if n := runtime.InstrumentPasses(rt); n != 1 {
				t.Fatalf("a damaged entry was served (%d passes)", n)
			}
			if !strings.Contains(logs.String(), entries[0]) {
				t.Fatalf("no warning naming the entry:\n%s", logs.String())
			}
			// Rebuilt: the next load takes it again.
			rt = newRuntime(t, runtime.Options{CacheDir: dir})
			wantPong(t, loadTool(t, rt, "ping", wasm, runtime.Limits{}))
			if n := runtime.InstrumentPasses(rt); n != 0 {
				t.Fatalf("entry not rebuilt (%d passes)", n)
			}
		})
	}
}
