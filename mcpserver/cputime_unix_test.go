//go:build unix

package mcpserver

import "syscall"

// processCPU is the process's user and system time so far, in nanoseconds,
// or -1 when it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
