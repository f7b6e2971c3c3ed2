//go:build !linux

package pgtest

import (
	"strings"
	"testing"
)

// TestDBSkipsOffLinux: where the server cannot run, a test asking for a
// database is skipped with the reason, not failed, and not run against
// nothing.
func TestDBSkipsOffLinux(t *testing.T) {
	t.Setenv("CI", "true") // skips under CI too: an unsupported system, not a missing package
	var skipped bool
	var reason string
	t.Run("db", func(t *testing.T) {
		rec := &skipRecorder{TB: t}
		defer func() { skipped, reason = t.Skipped(), rec.msg }()
		New().DB(rec)
	})
	if !skipped || !strings.Contains(reason, "runs on Linux only") {
		t.Fatalf("DB: skipped %v (%q); want a skip saying the server runs on Linux only", skipped, reason)
	}
}

type skipRecorder struct {
	testing.TB
	msg string
}

func (r *skipRecorder) Skipf(format string, args ...any) {
	r.msg = format
	r.TB.Skipf(format, args...)
}
