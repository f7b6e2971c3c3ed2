//go:build !unix

package mcpserver

// processCPU cannot be read here: -1.
func processCPU() int64 { return -1 }
