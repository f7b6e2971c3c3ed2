//go:build !windows

package pathguard

// longPath is the identity where file systems have no 8.3 short names.
func longPath(p string) string { return p }
