//go:build unix

package lsp

import (
	"errors"
	"os/exec"
	"syscall"
)

// procGroup is a started server and every process it spawns: on Unix its
// process group, which sysProcAttr makes it the leader of.
type procGroup struct{ pid int }

// adopt returns the group of the server cmd has just started. On Unix the
// group exists from the fork (Setpgid), so there is nothing left to do.
func adopt(cmd *exec.Cmd) (*procGroup, error) {
	return &procGroup{pid: cmd.Process.Pid}, nil
}

// kill kills every process in the group.
func (g *procGroup) kill() error {
	err := syscall.Kill(-g.pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
