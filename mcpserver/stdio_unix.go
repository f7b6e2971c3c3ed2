//go:build unix

package mcpserver

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// isolateStdout duplicates fd 1 for the protocol and points fd 1 at stderr.
// restore undoes both.
func isolateStdout() (protocol *os.File, restore func(), err error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, nil, fmt.Errorf("duplicate stdout: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("redirect stdout to stderr: %w", err)
	}
	protocol = os.NewFile(uintptr(fd), "/dev/stdout")
	return protocol, func() {
		_ = unix.Dup2(fd, 1)
		protocol.Close()
	}, nil
}
