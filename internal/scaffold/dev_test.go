package scaffold

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is the loop's output, read by the test between builds.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.b.String()
	s.b.Reset()
	return out
}

// TestDevRebuildsOnChange drives the loop with injected changes: a build,
// a broken save (reported, the loop goes on), a fixed one.
func TestDevRebuildsOnChange(t *testing.T) {
	needTools(t, "make", "wat2wasm")
	dir, err := New(t.TempDir(), "wc", "wat")
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	built := make(chan bool)
	d := &Dev{
		Dir: dir,
		Out: &out,
		Describe: func(_ context.Context, path string) (string, error) {
			return "tools of " + filepath.Base(path) + "\n", nil
		},
		Built: func(ok bool) { built <- ok },
	}
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan string)
	done := make(chan error)
	go func() { done <- d.Run(ctx, changes) }()

	expect := func(step string, wantOK bool, want ...string) {
		t.Helper()
		if ok := <-built; ok != wantOK {
			t.Fatalf("%s: build ok = %v, want %v\n%s", step, ok, wantOK, out.take())
		}
		got := out.take()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Fatalf("%s: output lacks %q:\n%s", step, w, got)
			}
		}
	}
	expect("first build", true, "warden dev: make in "+dir+"\n", "warden dev: build ok\n", "tools of wc.wasm\n")

	src := filepath.Join(dir, "wc.wat")
	// make compares times: a save in the same clock tick as the last build
	// would look up to date, so each save is dated after it.
	touch := func() {
		t.Helper()
		fi, err := os.Stat(filepath.Join(dir, "build", "wc.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		later := fi.ModTime().Add(time.Second)
		if err := os.Chtimes(src, later, later); err != nil {
			t.Fatal(err)
		}
	}
	good, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, []byte("(module (func (export \"x\") (i32.add)))"), 0o644); err != nil {
		t.Fatal(err)
	}
	touch()
	changes <- src
	expect("broken save", false, "warden dev: build failed: exit status 2 (waiting for the next save)\n")

	if err := os.WriteFile(src, good, 0o644); err != nil {
		t.Fatal(err)
	}
	touch()
	changes <- src
	expect("fixed save", true, "warden dev: build ok\n", "tools of wc.wasm\n")

	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run returned %v, want context.Canceled", err)
	}
}

func TestIsSource(t *testing.T) {
	for name, want := range map[string]bool{
		"main.go": true, "wc.wat": true, "Makefile": true, "src/a.c": true,
		"wc.wasm": false, "build": false, "node_modules": false, ".main.go.swp": false, "main.go~": false, "#main.go#": false, "x.o": false,
	} {
		if got := isSource(name); got != want {
			t.Errorf("isSource(%q) = %v, want %v", name, got, want)
		}
	}
}
