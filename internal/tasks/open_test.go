package tasks_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/tasks"
)

// TestOpen: Options pick the store; a bad backend is refused without the
// URL's password.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	for _, backend := range []string{"", "file"} {
		s, err := tasks.Open(t.Context(), tasks.Options{Backend: backend, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if fs, ok := s.(*tasks.FileStore); !ok || fs.Dir() != dir {
			t.Errorf("backend %q opened %T", backend, s)
		}
		s.Close()
	}
	url := pg.DB(t)
	s, err := tasks.OpenOperator(t.Context(), tasks.Options{Backend: url, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*tasks.PGStore); !ok {
		t.Errorf("a postgres:// backend opened %T", s)
	}
	s.Close()
	for _, bad := range []string{"mysql://u:hunter2@h/db", "postgres://u:hun/ter2@h/db"} {
		_, err := tasks.Open(t.Context(), tasks.Options{Backend: bad, Dir: dir})
		if err == nil || !strings.HasPrefix(err.Error(), "tasks: config key tasks.backend: ") || strings.Contains(err.Error(), "ter2") {
			t.Errorf("backend %q: %v", bad, err)
		}
	}
	if _, err := tasks.Open(t.Context(), tasks.Options{}); err == nil || errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("a file store without a directory: %v", err)
	}
}
