// Command warden runs sandboxed WebAssembly tools and serves them over MCP.
//
// This package is only the command line: flags, arguments and output. What
// the commands do lives in internal/app and the packages it wires.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/warden-run/warden/internal/termsafe"
)

// Exit codes.
const (
	exitOK        = 0
	exitToolError = 1 // the tool's result has isError, or a command failed
	exitUsage     = 2 // bad flags, arguments or names
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	os.Exit(exitCode(err))
}

// usageError marks an error the user can fix by calling warden differently.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// hintError is a usage error followed by lines of advice that warden
// wrote itself (shown as they are, not escaped onto one line).
type hintError struct {
	err  error
	hint string
}

func (e hintError) Error() string { return e.err.Error() }
func (e hintError) Unwrap() error { return usageError{e.err} }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// toolError marks a call whose result was an error; the result itself has
// already been printed.
var errToolFailed = errors.New("tool returned an error")

func exitCode(err error) int {
	var usage usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errToolFailed):
		return exitToolError
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "warden:", termsafe.Message(err.Error()))
		var hint hintError
		if errors.As(err, &hint) {
			for _, line := range strings.Split(hint.hint, "\n") {
				fmt.Fprintln(os.Stderr, "  "+termsafe.Escape(line))
			}
		}
		return exitUsage
	default:
		// Errors carry guest strings (tool names, rejection reasons).
		fmt.Fprintln(os.Stderr, "warden:", termsafe.Message(err.Error()))
		return exitToolError
	}
}
