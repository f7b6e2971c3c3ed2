//go:build unix

package main

import (
	"os"
	"syscall"
)

// shutdownSignals end warden cleanly: calls are cancelled, the audit log
// is flushed and language servers are killed with their process groups.
// SIGHUP is among them because a closed terminal sends it, and its default
// action would end warden without any of that (on macOS the language
// servers' children would outlive it). warden does not reload on SIGHUP:
// on every OS the config is reloaded when its file changes (config.Live.Watch).
func shutdownSignals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}
