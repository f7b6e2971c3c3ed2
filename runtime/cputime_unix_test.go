//go:build unix

package runtime_test

import (
	"syscall"
	"testing"
)

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
