//go:build !linux

package lsp

// groupMemory is not measured outside Linux: ok is false, and
// Manager.Servers reports no memory.
func groupMemory(pgid int) (bytes uint64, ok bool) { return 0, false }
