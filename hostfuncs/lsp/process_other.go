//go:build !unix

package lsp

import (
	"os"
	"os/exec"
	"syscall"
)

// sysProcAttr: there are no process groups to use outside Unix; only the
// server itself is killed.
func sysProcAttr() *syscall.SysProcAttr { return nil }

func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	_ = p.Kill()
	return nil
}

func awaitExit(cmd *exec.Cmd) error { return cmd.Wait() }

const pdeathsig = false
