// Command warden runs sandboxed WebAssembly tools and serves them over MCP.
//
// This package is only the command line: flags, arguments and output. What
// the commands do lives in internal/app and the packages it wires.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/warden-run/warden/internal/termsafe"
)

// Exit codes.
const (
	exitOK        = 0
	exitToolError = 1 // the tool's result has isError, or a command failed
	exitUsage     = 2 // bad flags, arguments or names
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), shutdownSignals()...)
	root := newRoot()
	cmd, err := root.ExecuteContextC(ctx)
	stop()
	os.Exit(exitCode(cobraError(root, cmd, err)))
}

// cobraError marks an error cobra itself returned (an unknown command, with
// its did-you-mean lines) as a usage error written by warden: every error
// warden's commands return is one of its own types already, or comes from a
// command's RunE.
func cobraError(root, cmd *cobra.Command, err error) error {
	if err == nil || cmd != root {
		return err
	}
	var usage usageError
	if errors.As(err, &usage) {
		return err
	}
	return usageError{textError{err}}
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

// textError marks an error whose text warden (or cobra, or the config
// decoder) wrote, lines and all, with nothing a module supplied in it that
// was not escaped where it entered: its newlines are printed as lines
// (RATIONALE.md, "Printing errors: module text escaped, warden's text as
// text").
type textError struct{ err error }

func (e textError) Error() string { return e.err.Error() }
func (e textError) Unwrap() error { return e.err }

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
	case errors.Is(err, errUsageShown):
		return exitUsage
	case errors.As(err, &usage):
		printError(os.Stderr, err)
		return exitUsage
	default:
		printError(os.Stderr, err)
		return exitToolError
	}
}

// printError writes err to w for a person: "warden: " and its first line,
// then each further line indented by two spaces, so that no line of it
// passes for the start of another warden message. Only text warden wrote
// keeps its lines (textError, a hint's advice, each error of errors.Join);
// any other error is one line with its newlines escaped, because it may
// quote a module's text that reached it unescaped. Every line is escaped
// (termsafe.Line) either way.
func printError(w io.Writer, err error) {
	lines := errorLines(err)
	var hint hintError
	if errors.As(err, &hint) {
		lines = append(lines, textLines(hint.hint)...)
	}
	for i, line := range lines {
		if i == 0 {
			fmt.Fprintln(w, "warden:", line)
		} else {
			fmt.Fprintln(w, " ", line)
		}
	}
}

// errorLines is err's text as the lines printError shows, each escaped, the
// blank ones dropped. It looks through warden's own wrappers (usageError,
// hintError) for a textError or an errors.Join; anything else is one line.
func errorLines(err error) []string {
	for {
		switch e := err.(type) {
		case usageError:
			err = e.err
			continue
		case hintError:
			err = e.err
			continue
		case textError:
			return textLines(e.Error())
		}
		break
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		// errors.Join's text is its errors' on lines of their own; an
		// error with several %w is not a join and stays one line.
		errs := joined.Unwrap()
		texts := make([]string, len(errs))
		for i, e := range errs {
			texts[i] = e.Error()
		}
		if strings.Join(texts, "\n") == err.Error() {
			var lines []string
			for _, e := range errs {
				lines = append(lines, errorLines(e)...)
			}
			return lines
		}
	}
	return []string{termsafe.Message(err.Error())}
}

// textLines splits warden's own multi-line text into escaped lines; a tab
// that indents a line (cobra's did-you-mean) becomes two spaces.
func textLines(s string) []string {
	var lines []string
	for line := range strings.Lines(s) {
		line = strings.TrimRight(line, "\n")
		trimmed := strings.TrimLeft(line, "\t")
		line = strings.Repeat("  ", len(line)-len(trimmed)) + trimmed
		if strings.TrimSpace(line) == "" {
			continue
		}
		lines = append(lines, termsafe.Line(line))
	}
	return lines
}
