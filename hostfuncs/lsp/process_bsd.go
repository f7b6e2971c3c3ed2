//go:build unix && !linux

package lsp

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts a server in its own process group, so that stopping it
// also stops whatever it spawned.
//
// macOS and the BSDs have no Pdeathsig. What ties a server to warden there:
// when warden stops (SIGINT, SIGTERM, the client closing stdin) the manager
// kills every group; when warden is killed or crashes, the kernel closes
// its end of the server's stdin, and a language server exits on end of
// input (the LSP base protocol's transport; gopls, pyright and clangd do).
// What the server spawned (gopls's `go list`) runs to its end on its own.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// awaitExit waits for the server, then kills what is left of its group.
// golang.org/x/sys/unix has no waitid here, so the leader cannot be left
// unreaped (WNOWAIT) as on Linux: it is reaped by then, which leaves a small
// window for the group id to be recycled.
func awaitExit(cmd *exec.Cmd, g *procGroup) error {
	err := cmd.Wait()
	_ = g.kill()
	return err
}

const diesWithWarden = false
