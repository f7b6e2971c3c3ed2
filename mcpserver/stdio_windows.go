package mcpserver

import (
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// isolateStdout gives the protocol a private duplicate of the stdout handle
// and points stdout at stderr, the Windows form of stdio_unix.go's dup2:
// the process's standard output handle (SetStdHandle: what child processes
// and native code inherit) and os.Stdout (what Go code writes to) both
// become stderr. restore undoes both.
//
// Windows has no descriptor 1 to repoint under an *os.File that was opened
// before, so os.Stdout itself is swapped; code that kept a copy of the old
// os.Stdout still writes to the client's stream.
func isolateStdout() (protocol *os.File, restore func(), err error) {
	self := windows.CurrentProcess()
	var dup windows.Handle
	if err := windows.DuplicateHandle(self, windows.Handle(os.Stdout.Fd()), self, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return nil, nil, fmt.Errorf("duplicate stdout: %w", err)
	}
	if err := windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, windows.Handle(os.Stderr.Fd())); err != nil {
		windows.CloseHandle(dup)
		return nil, nil, fmt.Errorf("redirect stdout to stderr: %w", err)
	}
	protocol = os.NewFile(uintptr(dup), "stdout")
	original := os.Stdout
	os.Stdout = os.Stderr
	return protocol, func() {
		_ = windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, windows.Handle(original.Fd()))
		os.Stdout = original
		protocol.Close()
	}, nil
}
