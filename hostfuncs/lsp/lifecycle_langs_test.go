package lsp

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// TestLifecycleEveryLanguage runs the manager's bounds on the real servers
// of the default languages installed here (each skipped, with its install
// command, when it is not): no server before the first query, one after
// it; a server killed with SIGKILL is replaced by the next query, which
// answers; an idle server stops after IdleTimeout; and the breaker counts
// the crash.
func TestLifecycleEveryLanguage(t *testing.T) {
	for _, tc := range []struct {
		lang, file, content string
		line, column        int // of a name in content
	}{
		{"python", "pkg/mod.py", "def answer():\n    return 42\n", 1, 5},
		{"typescript", "src/mod.ts", "export function answer(): number {\n  return 42;\n}\n", 1, 17},
		{"javascript", "src/mod.js", "export function answer() {\n  return 42;\n}\n", 1, 17},
		{"c", "src/mod.c", "int answer(void) {\n  return 42;\n}\n", 1, 5},
		{"cpp", "src/mod.cpp", "int answer() {\n  return 42;\n}\n", 1, 5},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			requireServer(t, tc.lang)
			root := t.TempDir()
			writeFile(t, root, tc.file, tc.content)
			m := newManager(t, Config{IdleTimeout: -1, ShutdownGrace: time.Second, RequestTimeout: loadingTimeout})
			tg := Target{Language: tc.lang, Root: root}
			if pid := serverPID(m, tg); pid != 0 {
				t.Fatalf("a server runs before any query: %d", pid)
			}
			ctx := context.Background()
			symbols := func() {
				t.Helper()
				syms, err := m.DocumentSymbols(ctx, tg, tc.file)
				if err != nil || len(syms) == 0 || syms[0].Name != "answer" || syms[0].Line != tc.line || syms[0].Column != tc.column {
					t.Fatalf("symbols of %s: %+v, %v", tc.file, syms, err)
				}
			}
			symbols()
			first := serverPID(m, tg)
			if first == 0 {
				t.Fatal("no server after the first query")
			}
			if err := killPID(first); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the manager notices the crash", func() bool { return serverPID(m, tg) == 0 })
			symbols()
			if second := serverPID(m, tg); second == 0 || second == first {
				t.Fatalf("after the crash: server %d (first %d)", second, first)
			}
			if starts, failures := slotStats(m, tg); starts != 2 || failures != 1 {
				t.Fatalf("starts %d, failures %d; want 2 and 1", starts, failures)
			}
			// Idle: the timer is armed when the query ends; stop it at
			// once by shortening the timeout for the next release.
			m.mu.Lock()
			m.cfg.IdleTimeout = time.Millisecond
			m.mu.Unlock()
			symbols()
			eventually(t, "the idle server stops", func() bool { return serverPID(m, tg) == 0 && len(m.Servers()) == 0 })
		})
	}
}

// TestDeadlineOnALargeProject: a first query on a project of 3000 Python
// files, whose server is still loading it, ends when the call's context
// ends, as cancelled, and does not wait for the load.
func TestDeadlineOnALargeProject(t *testing.T) {
	requireServer(t, "python")
	root := t.TempDir()
	for i := range 3000 {
		writeFile(t, root, fmt.Sprintf("pkg%02d/mod%04d.py", i/100, i), fmt.Sprintf("def f%d(x):\n    return x + %d\n", i, i))
	}
	m := newManager(t, Config{})
	tg := Target{Language: "python", Root: root}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.WorkspaceSymbols(ctx, tg, "f2999")
		done <- err
	}()
	// Cancel once the server runs: the query is then waiting on it.
	eventually(t, "pyright starts", func() bool { return serverPID(m, tg) != 0 })
	cancel()
	select {
	case err := <-done:
		if err != nil {
			wantKind(t, err, tool.KindCancelled, "lsp request cancelled")
		}
	case <-time.After(time.Minute):
		t.Fatal("the query outlived its context by a minute")
	}
}
