//go:build !linux

package pgtest

import (
	"runtime"
	"testing"
)

// Server stands for the PostgreSQL server where none can be run: DB skips.
type Server struct{}

// New returns a server that never starts on this system.
func New() *Server { return &Server{} }

// Stop does nothing: no server was started.
func (s *Server) Stop() {}

// URL is empty: there is no server.
func (s *Server) URL() string { return "" }

// DB skips t: the test server runs on Linux only. It skips even under CI,
// where a missing PostgreSQL fails on Linux: this is not a missing package
// but a system the test server does not support, and CI's macOS and
// Windows runners must still run every other test.
func (s *Server) DB(t testing.TB) string {
	t.Helper()
	t.Skipf("the PostgreSQL test server (internal/pgtest) runs on Linux only, not on %s: run this test on Linux", runtime.GOOS)
	return ""
}
