//go:build !unix

package main

import (
	"os"
	"syscall"
)

// shutdownSignals end warden cleanly. On Windows os.Interrupt is Ctrl+C and
// Ctrl+Break, and Go reports the console's close, log-off and shutdown
// events as syscall.SIGTERM (os/signal); there is no SIGHUP, and so no
// signal that could reload: the config is reloaded when its file changes
// (config.Live.Watch), as on every OS.
func shutdownSignals() []os.Signal {
	return []os.Signal{os.Interrupt, syscall.SIGTERM}
}
