package codecache

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/internal/testwasm"
)

// answer is a module whose function returns n: entries of different n are
// different compiled code.
func answer(t *testing.T, n int) []byte {
	return testwasm.WATString(t, fmt.Sprintf(`(module (func (export "answer") (result i32) i32.const %d))`, n))
}

// compileAndCall compiles wasm with dir as wazero's disk cache, inside a
// load of g, and returns what "answer" returns: the code that ran, whether
// it came from the cache or not.
func compileAndCall(t *testing.T, g *Guard, dir string, wasm []byte) uint64 {
	t.Helper()
	ctx := context.Background()
	end := g.Begin()
	defer end()
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close(ctx)
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mod.ExportedFunction("answer").Call(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// entries lists the compiled entries in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range found {
		if !strings.HasSuffix(f, ".tmp") {
			out = append(out, f)
		}
	}
	return out
}

type logBuffer struct{ bytes.Buffer }

func newLog() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

func openGuard(t *testing.T, dir string) (*Guard, *logBuffer) {
	t.Helper()
	log, buf := newLog()
	g, err := Open(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	return g, buf
}

// cached returns dir with one recorded entry, for module answer(7).
func cached(t *testing.T) (dir, entry string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	if got := compileAndCall(t, g, dir, answer(t, 7)); got != 7 {
		t.Fatalf("answer = %d", got)
	}
	list := entries(t, dir)
	if len(list) != 1 {
		t.Fatalf("want one compiled entry, got %v", list)
	}
	return dir, list[0]
}

func TestWarmStartKeepsRecordedEntries(t *testing.T) {
	dir, entry := cached(t)
	before, _ := os.Stat(entry)
	g, log := openGuard(t, dir)
	if got := compileAndCall(t, g, dir, answer(t, 7)); got != 7 {
		t.Fatalf("answer = %d", got)
	}
	after, err := os.Stat(entry)
	if err != nil {
		t.Fatalf("the recorded entry was removed: %v\n%s", err, log)
	}
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatal("the recorded entry was written again: the warm start compiled")
	}
	if strings.Contains(log.String(), "removed") {
		t.Fatalf("warnings on a clean warm start:\n%s", log)
	}
}

func TestDamagedEntriesAreRemovedAndRebuilt(t *testing.T) {
	other := func(t *testing.T) []byte {
		_, entry := cached(t) // answer(7)'s code, to plant under another key
		b, err := os.ReadFile(entry)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, entry string)
		reason string
	}{
		{"byte flipped", func(t *testing.T, entry string) {
			b, _ := os.ReadFile(entry)
			b[len(b)/2] ^= 0x40
			os.WriteFile(entry, b, 0o600)
		}, "do not match"},
		{"truncated", func(t *testing.T, entry string) {
			os.Truncate(entry, 100)
		}, "bytes, the index recorded"},
		{"another module's entry", func(t *testing.T, entry string) {
			os.WriteFile(entry, other(t), 0o600)
		}, "index recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			g, _ := openGuard(t, dir)
			compileAndCall(t, g, dir, answer(t, 42))
			entry := entries(t, dir)[0]
			tc.damage(t, entry)

			g, log := openGuard(t, dir) // a restart
			if _, err := os.Stat(entry); err == nil {
				t.Fatalf("damaged entry kept\n%s", log)
			}
			if !strings.Contains(log.String(), entry) || !strings.Contains(log.String(), tc.reason) {
				t.Fatalf("warning does not name the file and %q:\n%s", tc.reason, log)
			}
			// The module compiles afresh and answers right; the new entry is
			// recorded, so the next start keeps it.
			if got := compileAndCall(t, g, dir, answer(t, 42)); got != 42 {
				t.Fatalf("answer = %d", got)
			}
			_, log = openGuard(t, dir)
			if len(entries(t, dir)) != 1 || strings.Contains(log.String(), "removed") {
				t.Fatalf("rebuilt entry not recorded: %v\n%s", entries(t, dir), log)
			}
		})
	}
}

func TestDamagedEntryCaughtBeforeTheNextLoad(t *testing.T) {
	// The same process: a check runs before every load, not only at start.
	dir := filepath.Join(t.TempDir(), "cache")
	g, log := openGuard(t, dir)
	compileAndCall(t, g, dir, answer(t, 5))
	entry := entries(t, dir)[0]
	b, _ := os.ReadFile(entry)
	b[len(b)-10] ^= 1
	os.WriteFile(entry, b, 0o600)
	end := g.Begin()
	end()
	if _, err := os.Stat(entry); err == nil {
		t.Fatalf("entry changed after it was recorded was kept\n%s", log)
	}
}

func TestDamagedIndex(t *testing.T) {
	for name, damage := range map[string]func(b []byte) []byte{
		"byte flipped": func(b []byte) []byte { b[len(b)/2] ^= 1; return b },
		"truncated":    func(b []byte) []byte { return b[:len(b)-5] },
		"empty":        func([]byte) []byte { return nil },
		"garbage":      func([]byte) []byte { return []byte("\x00\xffnot an index") },
	} {
		t.Run(name, func(t *testing.T) {
			dir, entry := cached(t)
			path := filepath.Join(dir, indexFile)
			b, _ := os.ReadFile(path)
			os.WriteFile(path, damage(b), 0o600)
			_, log := openGuard(t, dir)
			if _, err := os.Stat(entry); err == nil {
				t.Fatalf("entry kept under a damaged index\n%s", log)
			}
			if !strings.Contains(log.String(), "index") {
				t.Fatalf("no warning about the index:\n%s", log)
			}
		})
	}
}

func TestPlantedFilesAreRemoved(t *testing.T) {
	dir, entry := cached(t)
	sub := filepath.Dir(entry)
	unknown := filepath.Join(sub, strings.Repeat("ab", 32))
	os.WriteFile(unknown, []byte("WAZEVO planted"), 0o600)
	link := filepath.Join(sub, strings.Repeat("cd", 32))
	os.Symlink(entry, link)
	nested := filepath.Join(sub, "nested")
	os.Mkdir(nested, 0o700)
	_, log := openGuard(t, dir)
	for _, p := range []string{unknown, link, nested} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s kept\n%s", p, log)
		}
	}
	if _, err := os.Stat(entry); err != nil {
		t.Fatalf("the recorded entry went too: %v", err)
	}
}

func TestTwoProcessesShareADir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	a, _ := openGuard(t, dir)
	b, logB := openGuard(t, dir) // opened before a wrote anything
	compileAndCall(t, a, dir, answer(t, 1))
	// b's next load finds a's entry in the index a wrote, verifies its hash
	// and keeps it; its own entry is added beside it.
	compileAndCall(t, b, dir, answer(t, 2))
	if n := len(entries(t, dir)); n != 2 {
		t.Fatalf("want both entries, got %d\n%s", n, logB)
	}
	_, log := openGuard(t, dir)
	if strings.Contains(log.String(), "removed") || len(entries(t, dir)) != 2 {
		t.Fatalf("the merged index lost an entry:\n%s", log)
	}
}

func TestUnknownEntryKeptWhileALoadRuns(t *testing.T) {
	// A load of this process may have written an entry it has not recorded
	// yet: a check by a concurrent load must not remove it.
	dir, entry := cached(t)
	sub := filepath.Dir(entry)
	g, _ := openGuard(t, dir)
	end := g.Begin()
	inFlight := filepath.Join(sub, strings.Repeat("ef", 32))
	os.WriteFile(inFlight, []byte("written by the running load"), 0o600)
	end2 := g.Begin() // a concurrent load checks
	if _, err := os.Stat(inFlight); err != nil {
		t.Fatal("an entry of a running load was removed")
	}
	end2()
	end()
	_, log := openGuard(t, dir)
	if _, err := os.Stat(inFlight); err != nil {
		t.Fatalf("the running load's entry was not recorded at its end\n%s", log)
	}
}

func FuzzDecodeIndex(f *testing.F) {
	f.Add(encodeIndex(nil))
	f.Add(encodeIndex(map[string]entry{
		"wazero-v1.12.0-amd64-linux/" + strings.Repeat("0a", 32): {size: 10, stamp: stamp{1, 2, 3, 4}},
	}))
	f.Add(encodeIndex(map[string]entry{
		"wazero-v1.12.0-amd64-linux/" + strings.Repeat("0a", 32): {size: 1},
		"wazero-v1.12.0-amd64-linux/" + strings.Repeat("0b", 32): {size: 2, stamp: stamp{mtimeNs: -1}},
	}))
	f.Add([]byte("warden-codecache 1\nsum 00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeIndex(data)
		if err != nil {
			return
		}
		// Whatever decodes is canonical: it encodes back to the same bytes,
		// and every name stays inside the cache dir.
		if again := encodeIndex(got); !bytes.Equal(again, data) {
			t.Fatalf("decode/encode not a round trip:\n%q\n%q", data, again)
		}
		for name := range got {
			if strings.Contains(name, "..") || filepath.IsAbs(name) || strings.Count(name, "/") != 1 {
				t.Fatalf("name %q escapes the cache dir", name)
			}
		}
	})
}
