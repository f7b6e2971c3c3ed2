package lsp

import (
	"strconv"
	"strings"
)

// parseProcStat reads the process group and resident pages from a
// /proc/<pid>/stat line (proc(5)). The command name in parentheses may hold
// anything, spaces and parentheses included, so fields are counted from the
// last ")".
func parseProcStat(b []byte) (pgrp int, rss uint64, ok bool) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	// After the name: state(3) ppid(4) pgrp(5) ... rss(24).
	fields := strings.Fields(s[i+1:])
	if len(fields) < 22 {
		return 0, 0, false
	}
	pgrp, err := strconv.Atoi(fields[2])
	if err != nil {
		return 0, 0, false
	}
	rss, err = strconv.ParseUint(fields[21], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return pgrp, rss, true
}
