//go:build !unix && !windows

package lsp

import (
	"os/exec"
	"syscall"
)

// sysProcAttr: outside Unix and Windows there are neither process groups
// nor job objects to use; only the server itself is killed.
func sysProcAttr() *syscall.SysProcAttr { return nil }

type procGroup struct{ cmd *exec.Cmd }

func adopt(cmd *exec.Cmd) (*procGroup, error) { return &procGroup{cmd: cmd}, nil }

func (g *procGroup) kill() error {
	_ = g.cmd.Process.Kill()
	return nil
}

func awaitExit(cmd *exec.Cmd, _ *procGroup) error { return cmd.Wait() }

const diesWithWarden = false
