//go:build !unix && !windows

package mcpserver

import "os"

// isolateStdout cannot redirect fd 1 here; the protocol uses stdout as is.
func isolateStdout() (protocol *os.File, restore func(), err error) {
	return os.Stdout, func() {}, nil
}
