//go:build unix

package fs

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/warden-run/warden/tool"
)

func TestReadFIFODoesNotBlock(t *testing.T) {
	e := newEnv(t)
	if err := syscall.Mkfifo(filepath.Join(e.proj, "out/fifo"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	c := call("r", []string{"out"}, []string{"out"})
	e.fail(t, c, req("op", "read", "path", "out/fifo"), tool.KindInvalidArguments)
	e.fail(t, c, req("op", "write", "path", "out/fifo", "content", "x"), tool.KindFailed)
}
