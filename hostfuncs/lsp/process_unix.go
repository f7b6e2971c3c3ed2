//go:build unix && !linux

package lsp

import (
	"errors"
	"os/exec"
	"syscall"
)

// sysProcAttr puts a server in its own process group, so that stopping it
// also stops whatever it spawned. Only Linux can tie the server's life to
// warden's (Pdeathsig); elsewhere a warden killed with SIGKILL leaves its
// servers running until they notice their closed stdin.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills every process in the group led by pid.
func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// awaitExit waits for the server, then kills what is left of its group.
// Without waitid(WNOWAIT) the leader is already reaped by then, which leaves
// a small window for the group id to be recycled.
func awaitExit(cmd *exec.Cmd) error {
	err := cmd.Wait()
	_ = killGroup(cmd.Process.Pid)
	return err
}

const pdeathsig = false
