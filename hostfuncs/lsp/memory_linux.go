package lsp

import (
	"os"
	"path/filepath"
)

// groupMemory returns the resident memory of every process in process
// group pgid, in bytes: a server and what it spawned (tsserver under
// typescript-language-server, pyright's workers, gopls's go list). ok is
// false when nothing of the group was found.
func groupMemory(pgid int) (bytes uint64, ok bool) {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	page := uint64(os.Getpagesize())
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // it exited meanwhile
		}
		if pgrp, rss, parsed := parseProcStat(b); parsed && pgrp == pgid {
			bytes += rss * page
			ok = true
		}
	}
	return bytes, ok
}
