package lsp

import (
	"context"
	"testing"
	"time"
)

// TestServerExitsWhenWardensPipesClose: where nothing kills a server when
// warden is killed (macOS and the BSDs have no Pdeathsig), the kernel still
// closes warden's ends of the server's stdin and stdout, and gopls exits on
// that by itself. Closing them here, with the process group left alone,
// shows both halves on the real server: warden holds the only write end of
// the server's stdin (no copy leaked into the server or another child,
// which would keep it open), and the server ends at end of input.
func TestServerExitsWhenWardensPipesClose(t *testing.T) {
	root := newFixture(t)
	m, err := NewManager(Config{Languages: goplsLanguages(t), ShutdownGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	tg := Target{Language: "go", Root: root}
	if _, err := m.DocumentSymbols(context.Background(), tg, "main.go"); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	s := m.slots[tg].srv
	m.mu.Unlock()
	if !alive(s.pid) {
		t.Fatalf("gopls %d is not running", s.pid)
	}
	s.pipes.Close()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("gopls %d still running 30 s after its stdin closed", s.pid)
	}
	if s.stopping.Load() {
		t.Fatal("the manager stopped gopls: the test proves nothing")
	}
	if alive(s.pid) {
		t.Fatalf("gopls %d reaped but alive", s.pid)
	}
}
