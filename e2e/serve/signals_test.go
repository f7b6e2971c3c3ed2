//go:build unix

package serve

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPShutsDownCleanly: a closed terminal's SIGHUP ends `warden
// serve` as SIGTERM does, with status 0 and the audit log flushed, instead
// of the signal's default action (killed, nothing flushed, and on macOS the
// language servers' children left running). It does not reload.
func TestSIGHUPShutsDownCleanly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	audit := filepath.Join(e.dir, "audit.log")
	e.withConfig(t, "  audit: "+audit+"\n")
	s := startHTTP(t, e)
	cs := s.connect(t, "", nil, nil)
	if res := call(t, cs, "echo", map[string]any{"text": "before the hangup"}); res.IsError {
		t.Fatalf("echo: %s", dump(res))
	}
	if err := s.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("warden serve still running 30 s after SIGHUP")
	}
	if s.err != nil {
		t.Fatalf("warden serve exited with %v after SIGHUP, want status 0", s.err)
	}
	if strings.Contains(s.stderr.String(), "config reloaded") {
		t.Errorf("SIGHUP reloaded the config:\n%s", s.stderr)
	}
	if calls := auditCalls(t, audit); len(calls) != 1 || !strings.Contains(calls[0], " echo ") {
		t.Errorf("audit log after SIGHUP: %q, want the echo call", calls)
	}
}
