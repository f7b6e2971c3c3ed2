package guest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/runtime/internal/trap"
	"github.com/warden-run/warden/tool"
)

// Bounds on what a guest may pass to a host function in one go.
const (
	MaxLogBytes     = 16 << 10
	MaxRequestBytes = 4 << 20
)

// Fuel charged for host work done on a guest's behalf: a fixed cost per
// call (the transition out of the guest and back) plus the bytes moved, at
// the rate the pass charges guest bulk-memory instructions.
const (
	HostCallFuel     = 1000
	HostBytesPerFuel = instrument.BulkBytesPerFuel
)

// ChargeHost charges the fuel of host work done for state's call.
func ChargeHost(state *CallState, bytes int) {
	state.Inst.Meter.Charge(HostCallFuel + int64(bytes/HostBytesPerFuel))
}

// stateKey carries the *CallState of the running call to host functions.
type stateKey struct{}

// CallState is what host functions need to know about the call they serve.
type CallState struct {
	Call *hostfuncs.Call
	Inst *Instance
	// lastProgress enforces that progress only increases (ReportProgress).
	lastProgress float64
	hasProgress  bool
	// Denial is the last capability request refused during the call whose
	// refusal the guest saw as an ordinary failure (an Extism plugin's file
	// or config access); a failed call is then reported as denied.
	Denial *tool.Error
	// logs bounds the call's log lines (warden.log, Extism log functions).
	logs logBudget
	// ReplyBytes counts the bytes of capability replies the host produced
	// for the guest during the call, against the memory limit.
	ReplyBytes uint64
	// told holds the errors the host replied to the guest's requests
	// during the call (Tell), so that a guest passing one on as its own
	// failure is known to repeat warden's words (Told).
	told map[toldError]bool
}

type toldError struct {
	kind    tool.Kind
	message string
}

// maxTold bounds the errors a call remembers having told its guest.
const maxTold = 64

// Tell records that the host replied e to one of the guest's requests.
func (state *CallState) Tell(e *tool.Error) {
	if e == nil || len(state.told) >= maxTold {
		return
	}
	if state.told == nil {
		state.told = map[toldError]bool{}
	}
	state.told[toldError{e.Kind, e.Message}] = true
}

// Told reports whether the host replied an error of this kind and message
// to one of the guest's requests during the call.
func (state *CallState) Told(kind tool.Kind, message string) bool {
	return state.told[toldError{kind, message}]
}

// NewCallState is the state of a call made on in.
func NewCallState(call *hostfuncs.Call, in *Instance, limits Limits) *CallState {
	return &CallState{Call: call, Inst: in, logs: logBudget{maxBytes: limits.LogBytes, maxLines: limits.LogLines}}
}

// WithState returns ctx carrying state for the host functions the call
// reaches.
func WithState(ctx context.Context, state *CallState) context.Context {
	return context.WithValue(ctx, stateKey{}, state)
}

// StateOf returns the state ctx carries, if any, without the checks of
// StateFrom.
func StateOf(ctx context.Context) (*CallState, bool) {
	s, ok := ctx.Value(stateKey{}).(*CallState)
	return s, ok
}

// StateFrom returns the state of the call a host function serves, or
// fails the guest with a typed error when the host must not do its work:
//   - outside a call: the module is loading (a start function, _initialize
//     or warden_describe called a host function); no grants, no observer,
//     nothing to serve;
//   - from inside warden_alloc, which the host calls re-entrantly to place a
//     reply: a host call there would recurse without bound (each reply
//     allocates, each allocation calls the host);
//   - after the call's deadline or cancellation (StopIfDone).
func StateFrom(ctx context.Context, what string) *CallState {
	s, ok := ctx.Value(stateKey{}).(*CallState)
	if !ok {
		panic(tool.Errorf(tool.KindBadOutput,
			"%s called while the module loads (start function, _initialize or describe): host functions are unavailable at load, only during warden_call", what))
	}
	if s.Inst.InAlloc > 0 {
		panic(tool.Errorf(tool.KindBadOutput,
			"%s called from inside warden_alloc: warden_alloc must only allocate, a host call there would recurse (docs/abi.md)", what))
	}
	StopIfDone(ctx, what)
	return s
}

// StopIfDone ends the guest's run, from inside the host function what,
// when the call's context has ended (its deadline passed, or its caller
// cancelled): a host function that waited (a WASI sleep, a request to the
// network or to the client) calls it after the wait, so that the guest
// never runs past its deadline, not even the few instructions to its next
// fuel check. The panic unwinds the guest; whoever runs the call tells a
// timeout from a cancellation by the context, not by this error.
func StopIfDone(ctx context.Context, what string) {
	if err := ctx.Err(); err != nil {
		panic(fmt.Errorf("%s: %w", what, err))
	}
}

// logBudget bounds what a call may log: lines past maxLines or bytes past
// maxBytes are dropped and counted, and one note says so when the call ends.
type logBudget struct {
	maxBytes, maxLines int
	bytes, lines       int
	droppedBytes       int64
	droppedLines       int64
}

// admit reports whether a line of n bytes still fits, counting it either way.
func (b *logBudget) admit(n int) bool {
	if b.lines+1 > b.maxLines || b.bytes+n > b.maxBytes {
		b.droppedLines++
		b.droppedBytes += int64(n)
		return false
	}
	b.lines++
	b.bytes += n
	return true
}

// note returns the line that reports what was dropped, or "" if nothing was.
func (b *logBudget) note() string {
	if b.droppedLines == 0 {
		return ""
	}
	return fmt.Sprintf("dropped %d log lines (%d bytes) over the per-call limit of %d lines and %d bytes (tools.defaults.log_lines, log_bytes)",
		b.droppedLines, b.droppedBytes, b.maxLines, b.maxBytes)
}

// LogLine sends one guest log line to the call's observer if the call's log
// budget admits it.
func (state *CallState) LogLine(level slog.Level, msg string) {
	if state.logs.admit(len(msg)) {
		state.Call.Observer.Log(level, msg)
	}
}

// ReportProgress sends p to the call's observer if it is above the last
// report; otherwise it drops p and returns false and the last progress.
func (state *CallState) ReportProgress(p tool.Progress) (last float64, sent bool) {
	if state.hasProgress && p.Progress <= state.lastProgress {
		return state.lastProgress, false
	}
	state.lastProgress, state.hasProgress = p.Progress, true
	state.Call.Observer.Progress(p)
	return p.Progress, true
}

// FinishLogs emits the note of what the log budget dropped, once per call.
func (state *CallState) FinishLogs() {
	if note := state.logs.note(); note != "" {
		state.Call.Observer.Log(slog.LevelWarn, note)
	}
}

// AsToolError returns err's *tool.Error, or wraps it as internal.
func AsToolError(err error) *tool.Error {
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	return &tool.Error{Kind: tool.KindInternal, Message: err.Error()}
}

// FuncSig is a function signature, for import and export checks.
type FuncSig struct{ Params, Results []api.ValueType }

func (s FuncSig) String() string {
	names := func(ts []api.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = api.ValueTypeName(t)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("(%s) -> (%s)", names(s.Params), names(s.Results))
}

// Matches reports whether def has the signature s.
func (s FuncSig) Matches(def api.FunctionDefinition) bool {
	return slices.Equal(s.Params, def.ParamTypes()) && slices.Equal(s.Results, def.ResultTypes())
}

// DiscardObserver drops a call's progress and log lines.
type DiscardObserver struct{}

func (DiscardObserver) Progress(tool.Progress) {}
func (DiscardObserver) Log(slog.Level, string) {}

// LoadError explains why guest code failed during load (a start function,
// _initialize, describe or an Extism plugin's listing).
func LoadError(ctx context.Context, in *Instance, limits Limits, err error, reason instrument.StopReason) error {
	switch {
	case reason == instrument.StopCanceled || errors.Is(ctx.Err(), context.Canceled):
		return errors.New("cancelled while loading")
	case reason == instrument.StopDeadline || ctx.Err() != nil:
		return fmt.Errorf("did not finish within the load budget of %s", limits.LoadBudget)
	case reason == instrument.StopFuel:
		return fmt.Errorf("ran out of fuel (budget %d)%s", limits.Fuel, limits.FuelHint)
	case reason == instrument.StopStackOverflow:
		return fmt.Errorf("trapped (%s)", tool.TrapStackOverflow)
	case in.Memory.Refused.Load():
		return fmt.Errorf("ran out of memory (limit %d MiB)", limits.Memory>>20)
	}
	if o, ok := trap.Classify(err); ok {
		stderr, _ := in.Stderr.Take()
		switch {
		case o.Trap != "":
			err = fmt.Errorf("trapped (%s)%s", o.Trap, o.Where())
		case o.Exit != nil:
			err = fmt.Errorf("exited with code %d", o.Exit.ExitCode())
		case o.Host != nil:
			err = o.Host
		}
		if stderr = strings.TrimSpace(stderr); stderr != "" {
			err = fmt.Errorf("%w; stderr: %s", err, FirstLines(stderr, 5))
		}
	}
	return err
}

// FirstLines joins the first n lines of s on one line, marking a cut.
func FirstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, " | ")
}

// maxCause bounds the stderr line a trap's message quotes.
const maxCause = 240

// Cause picks the line of a trapped guest's stderr that says why, for the
// error the model sees: a guest that panics and then traps (Rust's panic
// aborts with `unreachable`; AssemblyScript's abort) explains itself only
// there. It prefers a Go "panic: " line, then a Rust "panicked at" line
// with the message on the line after it (Rust 1.73+) or inside it
// (older), then the last line that is not a backtrace hint. The line is
// escaped (control characters, bidi overrides) and bounded; "" when stderr
// says nothing.
func Cause(stderr string) string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	pick := ""
	for i, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "panic: "):
			return termsafe.Bound(l, maxCause, false)
		case strings.Contains(l, " panicked at "):
			if strings.HasSuffix(l, ":") && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
				l += " " + strings.TrimSpace(lines[i+1])
			}
			return termsafe.Bound(l, maxCause, false)
		case l == "", strings.HasPrefix(l, "note: run with `RUST_BACKTRACE"):
		default:
			pick = l
		}
	}
	return termsafe.Bound(pick, maxCause, false)
}
