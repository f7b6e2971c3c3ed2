package lsp

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts a server in its own process group, so that stopping it
// also stops whatever it spawned (gopls runs `go list`), and asks the kernel
// to SIGKILL it when the thread that started it dies: a warden that crashes
// or is killed takes its servers with it. The spawner keeps that thread
// locked and alive for the manager's lifetime (see spawner).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// awaitExit waits for the server to exit, kills what is left of its process
// group, and reaps it. The leader is left unreaped (WNOWAIT) until its group
// is killed: a zombie keeps its pid, and so the group id, reserved, so the
// kill cannot hit a recycled id.
func awaitExit(cmd *exec.Cmd, g *procGroup) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, g.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	_ = g.kill()
	return cmd.Wait()
}

// diesWithWarden reports whether servers die with warden even when it is
// killed (SIGKILL, a crash): Pdeathsig.
const diesWithWarden = true
