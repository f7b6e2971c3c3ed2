//go:build unix

package runtime_test

import "syscall"

// processCPUTime is the process's user and system CPU time so far, in ns.
func processCPUTime() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), nil
}
