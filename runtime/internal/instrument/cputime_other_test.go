//go:build !linux

package instrument

import (
	"testing"
	"time"
)

// Off Linux the benchmarks measure wall time: per-thread CPU time
// (RUSAGE_THREAD) and /proc/self/status are Linux's. The hosted macOS and
// Windows runners only run the tests, so nothing here is compared across OSes.

// cpuTime stands in for the process's CPU time with the wall clock.
func cpuTime() int64 { return time.Now().UnixNano() }

// threadCPUTime stands in for the thread's CPU time with the wall clock.
func threadCPUTime() int64 { return time.Now().UnixNano() }

func rssKiB(b *testing.B) int64 {
	b.Skip("resident set size is read from /proc/self/status, which is Linux's")
	return 0
}
