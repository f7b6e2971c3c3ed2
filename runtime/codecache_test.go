package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tetratelabs/wazero"

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

// TestFullCompileCacheRunsWithout: a disk cache whose write fails with
// ENOSPC (injected where wazero writes a compiled module: after compiling it
// into memory) does not fail the load. The module loads and answers, the
// warning names the cache dir, once, and later loads work too.
func TestFullCompileCacheRunsWithout(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	rt := newRuntime(t, runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	written := make(map[string]bool)
	runtime.SetCompileHook(rt, func(ctx context.Context, wasm []byte, compile func() (wazero.CompiledModule, error)) (wazero.CompiledModule, error) {
		c, err := compile()
		if err != nil {
			return nil, err
		}
		if !written[string(wasm)] {
			// As wazero's file cache does on a full disk: the module is
			// compiled and kept in memory, the write fails; compiling it
			// again finds it in memory.
			written[string(wasm)] = true
			return nil, &fs.PathError{Op: "write", Path: filepath.Join(dir, "wazero-x", "entry.123.tmp"), Err: syscall.ENOSPC}
		}
		return c, nil
	})
	wantPong(t, loadTool(t, rt, "ping", watFixture{name: "ping"}.build(t), runtime.Limits{}))
	wantPong(t, loadTool(t, rt, "pong", watFixture{name: "ping"}.build(t), runtime.Limits{MaxOutput: 1 << 19}))
	if got := strings.Count(logs.String(), "compile cache failed; running without it"); got != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "dir="+dir) || !strings.Contains(logs.String(), "no space left on device") {
		t.Fatalf("the warning does not name the dir and the error:\n%s", logs.String())
	}
}

// TestReadOnlyCompileCacheRunsWithout: a cache dir wazero cannot create its
// directory in (a read-only filesystem, injected where wazero opens it) is
// not a refusal to start: the runtime warns and modules load.
func TestReadOnlyCompileCacheRunsWithout(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	opts := runtime.WithDiskCacheOpener(runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, func(d string) (wazero.CompilationCache, error) {
		return nil, fmt.Errorf("create directory %s: %w", filepath.Join(d, "wazero-v1"), &fs.PathError{Op: "mkdir", Path: filepath.Join(d, "wazero-v1"), Err: syscall.EROFS})
	})
	rt, err := runtime.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New with a read-only cache dir: %v", err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	wantPong(t, loadTool(t, rt, "ping", watFixture{name: "ping"}.build(t), runtime.Limits{}))
	if !strings.Contains(logs.String(), "compile cache not used") || !strings.Contains(logs.String(), "read-only file system") {
		t.Fatalf("no warning naming the error:\n%s", logs.String())
	}
}

// TestFullCompileCacheLoadsExtismPlugins: the Extism SDK compiles its
// kernel and the plugin in an engine of its own, through the same disk
// cache; a write failing there (injected after the SDK's compile, as
// wazero fails after keeping the compiled modules in memory) does not fail
// the load either: the plugin loads and answers, a second plugin meeting
// the same error loads too, and the warning is logged once.
func TestFullCompileCacheLoadsExtismPlugins(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	rt := newRuntime(t, runtime.Options{CacheDir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	compiles := 0
	runtime.SetPluginCompileHook(rt, func(compile func() error) error {
		compiles++
		if err := compile(); err != nil {
			return err
		}
		if compiles%2 == 1 {
			// Each plugin's first compile: its modules are in memory now,
			// and writing one of them to the cache fails, as on a full disk.
			return fmt.Errorf("instantiating extism module: %w", &fs.PathError{Op: "write", Path: filepath.Join(dir, "wazero-x", "entry.7.tmp"), Err: syscall.ENOSPC})
		}
		return nil
	})
	for _, name := range []string{"first", "second"} {
		m, err := rt.Load(context.Background(), name, extismWAT(t, descOf(name+"_tool"), `{"content":[{"type":"text","text":"fine"}]}`, ""), runtime.Limits{})
		if err != nil {
			t.Fatalf("load %s with the cache full: %v", name, err)
		}
		defer m.Close(context.Background())
		wantOK(t, call(t, toolNamed(t, m, name+"_tool"), `{}`), "fine")
	}
	if compiles != 4 {
		t.Fatalf("%d plugin compiles, want 4 (each plugin's failed one, then its retry)", compiles)
	}
	if got := strings.Count(logs.String(), "compile cache failed; running without it"); got != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", got, logs.String())
	}
}
