//go:build windows

package pathguard

import "golang.org/x/sys/windows"

// longPath expands the 8.3 short names in p ("C:\PROGRA~1") to the long
// names the deny-list is written in, by GetLongPathName, so that
// "SECRET~1.PEM" is judged as "secrets.pem". A path it cannot expand (one
// that does not exist yet) is returned as it is: the lexical gate has
// already refused a short name that may stand for a denied one.
func longPath(p string) string {
	in, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return p
	}
	buf := make([]uint16, 260)
	for {
		n, err := windows.GetLongPathName(in, &buf[0], uint32(len(buf)))
		if err != nil || n == 0 {
			return p
		}
		if int(n) <= len(buf) {
			return windows.UTF16ToString(buf[:n])
		}
		buf = make([]uint16, n)
	}
}
