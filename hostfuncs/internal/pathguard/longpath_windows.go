//go:build windows

package pathguard

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// longPath expands the 8.3 short names in p ("C:\PROGRA~1") to the long
// names the deny-list is written in, by GetLongPathName, so that
// "SECRET~1.PEM" is judged as "secrets.pem". Of a path that does not exist
// yet (a file about to be created) it expands the longest prefix that
// does and keeps the rest as written: a short name among the directories
// above a new file is expanded too (CheckReal also refuses what is left).
func longPath(p string) string {
	if long, ok := expandLong(p); ok {
		return long
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if base == "" || dir == p {
		return p
	}
	return filepath.Join(longPath(dir), base)
}

// expandLong is GetLongPathName of p, and whether it succeeded (p exists).
func expandLong(p string) (string, bool) {
	in, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return p, false
	}
	buf := make([]uint16, 260)
	for {
		n, err := windows.GetLongPathName(in, &buf[0], uint32(len(buf)))
		if err != nil || n == 0 {
			return p, false
		}
		if int(n) <= len(buf) {
			return windows.UTF16ToString(buf[:n]), true
		}
		buf = make([]uint16, n)
	}
}
