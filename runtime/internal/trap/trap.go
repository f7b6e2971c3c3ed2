// Package trap classifies the errors wazero returns from a guest call.
//
// wazero keeps its trap errors in an internal package, so they cannot be
// matched with errors.Is from outside. What it does guarantee is their text:
// a trap surfaces either as the bare runtime error (the compiler engine
// returns stack overflow that way) or wrapped with %w as "wasm error: <text>"
// plus a stack trace. Classify walks the wrap chain and matches the innermost
// message exactly, so a guest cannot forge a class by printing the words.
//
// The stack trace's first frame is where the guest trapped: wazero names it
// from the module's name section, else by its index ($4). Classify returns
// that name (Outcome.Function) so the failure can say where it happened.
package trap

import (
	"errors"
	"regexp"
	"strings"

	"github.com/tetratelabs/wazero/sys"

	"github.com/warden-run/warden/internal/termsafe"
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
	// Function is the function the guest trapped in, when Trap is set and
	// wazero's stack trace names one: as the module's name section spells
	// it (module text, not escaped), or "$<index>" without one. When the
	// trap is in Go's runtime (a panic ends in runtime.abort), Function is
	// the first frame outside it, and Via the runtime function that trapped.
	Function, Via string
}

// traceHeader starts the stack trace wazero appends to a trap's message
// (wasmdebug.FromRecovered); each frame follows on a line of its own, after
// one tab, its source lines (from DWARF) after two.
const traceHeader = "\nwasm stack trace:\n\t"

// signature is the end wazero adds to a frame's function name: its
// parameter and result types ("(i32,i64) i32", "() (i32,i32)").
var signature = regexp.MustCompile(`\((?:[a-z0-9]+(?:,[a-z0-9]+)*)?\)(?: [a-z0-9]+| \([a-z0-9]+(?:,[a-z0-9]+)*\))?$`)

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
			o := Outcome{Trap: class}
			o.Function, o.Via = trappedIn(err.Error())
			return o, true
		}
	}
	return Outcome{}, false
}

// maxFunctionName bounds the function name Where shows: the module
// supplies it (its name section), and a mangled C++ or Rust name can run
// to kilobytes.
const maxFunctionName = 200

// Where says where the guest trapped, for a message: " in function
// main.panicky", or by index without a name section, or "" when wazero
// named no frame. The name is the module's text, escaped and bounded. The
// offset in the function is not there to give: wazero's trace has none.
func (o Outcome) Where() string {
	switch {
	case o.Function == "":
		return ""
	case strings.HasPrefix(o.Function, "$"):
		return " in function " + termsafe.Bound(o.Function, maxFunctionName, false) + " (the module has no name section to name it)"
	case o.Via != "":
		return " in function " + termsafe.Bound(o.Function, maxFunctionName, false) + " (trapping in " + termsafe.Bound(o.Via, maxFunctionName, false) + ")"
	}
	return " in function " + termsafe.Bound(o.Function, maxFunctionName, false)
}

// goRuntime prefixes the functions of Go's runtime (and TinyGo's), where a
// Go guest's panic traps: the place worth naming is the caller that
// panicked, not runtime.abort.
const goRuntime = "runtime."

// trappedIn returns the function named by the first frame of the stack
// trace in msg, a trap's whole message, or "" when it has none; if that
// frame is in Go's runtime, the first frame outside it, and the runtime
// function as via. wazero spells a frame "<module>.<function><signature>"
// on a line after one tab (its DWARF source lines follow after two);
// warden instantiates every module under the empty name, so a frame
// starts with the dot.
func trappedIn(msg string) (function, via string) {
	_, trace, ok := strings.Cut(msg, traceHeader)
	if !ok {
		return "", ""
	}
	first := true
	for line := range strings.Lines(trace) {
		if !first && !strings.HasPrefix(line, "\t.") {
			continue // a source line, or wazero's note of omitted frames
		}
		frame := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSuffix(line, "\n"), "\t"), ".")
		if loc := signature.FindStringIndex(frame); loc != nil {
			frame = frame[:loc[0]]
		}
		if first {
			function, first = frame, false
			if !strings.HasPrefix(frame, goRuntime) {
				return function, ""
			}
			continue
		}
		if !strings.HasPrefix(frame, goRuntime) {
			return frame, function
		}
	}
	return function, ""
}
