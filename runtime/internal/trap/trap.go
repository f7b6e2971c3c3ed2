// Package trap classifies the errors wazero returns from a guest call.
//
// wazero keeps its trap errors in an internal package, so they cannot be
// matched with errors.Is from outside. What it does guarantee is their text:
// a trap surfaces either as the bare runtime error (the compiler engine
// returns stack overflow that way) or wrapped with %w as "wasm error: <text>"
// plus a stack trace. Classify walks the wrap chain and matches the innermost
// message exactly, so a guest cannot forge a class by printing the words.
package trap

import (
	"errors"

	"github.com/tetratelabs/wazero/sys"

	"github.com/warden-run/warden/tool"
)

// classes maps wazero's runtime error texts to trap classes.
var classes = map[string]tool.TrapClass{
	"unreachable":                   tool.TrapUnreachable,
	"out of bounds memory access":   tool.TrapOutOfBoundsMemory,
	"integer divide by zero":        tool.TrapIntegerDivideByZero,
	"integer overflow":              tool.TrapIntegerOverflow,
	"invalid conversion to integer": tool.TrapInvalidConversion,
	"stack overflow":                tool.TrapStackOverflow,
	"indirect call type mismatch":   tool.TrapIndirectCallMismatch,
	"invalid table access":          tool.TrapTableOutOfBounds,
	"null reference":                tool.TrapOther,
	"unaligned atomic":              tool.TrapOther,
	"uncaught exception":            tool.TrapOther,
	"expected shared memory":        tool.TrapOther,
	"too many waiters":              tool.TrapOther,
}

// Outcome is what a failed guest call amounts to.
type Outcome struct {
	// Trap is set when the guest trapped.
	Trap tool.TrapClass
	// Exit is set when the guest called proc_exit (or wazero closed the module).
	Exit *sys.ExitError
	// Host is set when a host function failed the call on purpose with a typed error.
	Host *tool.Error
}

// Classify tells what err, returned by api.Function.Call, means. ok is false
// when err is none of a trap, an exit or a typed host error.
func Classify(err error) (o Outcome, ok bool) {
	if err == nil {
		return Outcome{}, false
	}
	var host *tool.Error
	if errors.As(err, &host) {
		return Outcome{Host: host}, true
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return Outcome{Exit: exit}, true
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		if class, found := classes[e.Error()]; found {
			return Outcome{Trap: class}, true
		}
	}
	return Outcome{}, false
}
