package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// syncBuffer is a log sink safe for the runtime's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// userCacheDir is the compile cache tests share, read before any test
// points HOME elsewhere.
var userCacheDir = func() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "off"
	}
	return filepath.Join(dir, "warden")
}()

// startApp writes body as dir/config.yaml and starts an app on it, logging
// into logs (if not nil).
func startApp(t *testing.T, dir, body string, logs *syncBuffer) (*App, string) {
	t.Helper()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var sink interface{ Write([]byte) (int, error) } = logs
	if logs == nil {
		sink = &syncBuffer{}
	}
	logger := slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(context.Background(), cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a, path
}

func call(t *testing.T, a *App, name, args string) *tool.Result {
	t.Helper()
	res, err := a.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: name, Arguments: json.RawMessage(args), Observer: nopObserver{}})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

type nopObserver struct{}

func (nopObserver) Progress(tool.Progress) {}
func (nopObserver) Log(slog.Level, string) {}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(&syncBuffer{}, nil)) }

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
