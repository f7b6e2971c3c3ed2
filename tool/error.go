package tool

import (
	"errors"
	"fmt"
)

// Kind classifies why a call failed. Every failure a caller can observe has
// exactly one Kind; the set is closed so that clients can switch on it.
type Kind string

const (
	// KindInvalidArguments: the arguments did not match the tool's input schema
	// or were refused by the tool's own validation.
	KindInvalidArguments Kind = "invalid_arguments"
	// KindNotFound: the tool, or something the tool looked for, does not exist.
	KindNotFound Kind = "not_found"
	// KindDenied: a capability the call needed was not granted by config.
	KindDenied Kind = "denied"
	// KindFailed: the tool ran and reported a failure of its own.
	KindFailed Kind = "failed"
	// KindCancelled: the caller cancelled the call.
	KindCancelled Kind = "cancelled"
	// KindTimeout: the call ran past its deadline.
	KindTimeout Kind = "timeout"
	// KindOutOfFuel: the call used up its fuel budget.
	KindOutOfFuel Kind = "out_of_fuel"
	// KindOutOfMemory: the guest needed more linear memory than its limit.
	KindOutOfMemory Kind = "out_of_memory"
	// KindTrapped: the guest trapped; Error.Trap names the trap class.
	KindTrapped Kind = "trapped"
	// KindGuestExit: the guest called proc_exit; Error.ExitCode holds the code.
	KindGuestExit Kind = "guest_exit"
	// KindBadOutput: the guest's response was not valid (not JSON, outside its
	// memory, over the output limit, or not matching the output schema).
	KindBadOutput Kind = "bad_output"
	// KindInternal: warden itself failed; a bug, never the tool's fault.
	KindInternal Kind = "internal"
	// KindUnavailable: the call could not run for an operational condition
	// that may pass: a shared resource every instance is holding
	// (server.max_instance_memory, a full call queue), or a module file that
	// could not be read when its code was to be loaded. Nothing was wrong
	// with the call or the module, and a later call may run.
	KindUnavailable Kind = "unavailable"
	// KindUnsupported: the call needed something of the MCP client that it
	// cannot give: a client feature it did not declare (elicitation,
	// sampling, roots), or a client that cannot be asked at all. Nothing ran
	// on the tool's behalf that needed it.
	KindUnsupported Kind = "unsupported"
	// KindRateLimited: the call was refused before it ran because its
	// client or tool used up its rate limit (server.rate_limit,
	// tools.limits.<tool>.rate); the result's _meta[MetaRetryAfter]
	// says in how many seconds a call would be admitted.
	KindRateLimited Kind = "rate_limited"
)

// Kinds lists every Kind, in documentation order.
var Kinds = []Kind{
	KindInvalidArguments, KindNotFound, KindDenied, KindFailed, KindCancelled,
	KindTimeout, KindOutOfFuel, KindOutOfMemory, KindTrapped, KindGuestExit,
	KindBadOutput, KindInternal, KindUnavailable, KindUnsupported, KindRateLimited,
}

// Valid reports whether k is one of the defined kinds.
func (k Kind) Valid() bool {
	for _, known := range Kinds {
		if k == known {
			return true
		}
	}
	return false
}

// TrapClass names the WebAssembly trap behind a KindTrapped error.
type TrapClass string

const (
	TrapUnreachable          TrapClass = "unreachable"
	TrapOutOfBoundsMemory    TrapClass = "out_of_bounds_memory"
	TrapIntegerDivideByZero  TrapClass = "integer_divide_by_zero"
	TrapIntegerOverflow      TrapClass = "integer_overflow"
	TrapInvalidConversion    TrapClass = "invalid_conversion"
	TrapStackOverflow        TrapClass = "stack_overflow"
	TrapIndirectCallMismatch TrapClass = "indirect_call_mismatch"
	TrapTableOutOfBounds     TrapClass = "table_out_of_bounds"
	// TrapOther covers traps wazero reports that fit none of the classes above
	// (for example an uninitialized table element).
	TrapOther TrapClass = "other"
)

// Error is a typed tool failure. It travels as JSON between guest and host
// ({"kind": "...", "message": "..."}) and is returned by host capabilities.
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	// Trap is set when Kind is KindTrapped.
	Trap TrapClass `json:"trap,omitempty"`
	// ExitCode is set when Kind is KindGuestExit.
	ExitCode *uint32 `json:"exitCode,omitempty"`
	// Need is, on a denial, the grant that would have allowed the request:
	// what a permission prompt may offer the person. Deny-list refusals
	// never carry one. It stays in the host (never sent to a guest).
	Need *Need `json:"-"`
}

// Need is one grant, as `warden grant` spells it: Key is "fs.read",
// "fs.write", "net" or "env", Value the entry.
type Need struct {
	Key   string
	Value string
}

// DeniedFor returns a denial that names the grant that would allow it.
func DeniedFor(need Need, format string, args ...any) *Error {
	e := Errorf(KindDenied, format, args...)
	e.Need = &need
	return e
}

// Errorf returns an *Error of the given kind with a formatted message.
func Errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	switch {
	case e.Kind == KindTrapped && e.Trap != "":
		return fmt.Sprintf("%s (%s): %s", e.Kind, e.Trap, e.Message)
	case e.Kind == KindGuestExit && e.ExitCode != nil:
		return fmt.Sprintf("%s (code %d): %s", e.Kind, *e.ExitCode, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

// KindOf returns the Kind of the first *Error in err's chain, or KindInternal
// when err carries none. KindOf(nil) is "".
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}
