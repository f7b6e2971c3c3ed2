package tool

import "time"

// ReservedPrefix begins every key warden puts on the wire: the _meta keys
// below, and the keys of warden's own requests to the client (KeyConfirm,
// KeyPermission). A tool may use it for neither its request keys nor the
// _meta keys of its params: it is how a client tells warden's words from a
// tool's.
const ReservedPrefix = "warden/"

// The _meta keys of a tools/list tool: what MCP's Tool object has no field
// for, from the tool's Descriptor.
const (
	MetaVersion      = "warden/version"
	MetaTags         = "warden/tags"
	MetaCategory     = "warden/category"
	MetaCapabilities = "warden/capabilities" // requested, not granted
	MetaTimeoutMs    = "warden/timeoutMs"
	MetaPaginates    = "warden/paginates"
)

// The _meta keys of a call's result. MCP has no typed tool errors: a
// failure's kind, trap and exit code go under MetaKind, MetaTrap and
// MetaExitCode (Error.PutMeta), so that a client can tell a timeout from a
// denied capability. What the runtime measured of the call goes under
// MetaDuration, MetaFuel and MetaFreshState (Outcome.PutMeta).
const (
	MetaKind     = "warden/kind"
	MetaTrap     = "warden/trap"
	MetaExitCode = "warden/exitCode"
	MetaDuration = "warden/durationMs"
	MetaFuel     = "warden/fuel"
	// MetaFreshState is set when a session's call ran on a fresh instance
	// although its session had state: what it kept from earlier calls was
	// dropped, and the value says why, e.g. "evicted:
	// server.max_instance_memory".
	MetaFreshState = "warden/fresh_state"
	// MetaNextCursor continues a paginated tool's listing (Result.NextCursor,
	// sealed by the host); the client sends it back as MetaCursor in the
	// next call's params.
	MetaNextCursor = "warden/nextCursor"
	MetaCursor     = "warden/cursor"
	// MetaRetryAfter is set on a rate_limited result: whole seconds until
	// the call would be admitted, like HTTP's Retry-After.
	MetaRetryAfter = "warden/retryAfter"
	// MetaGate names the gate that decided a call that did not run:
	// "block", "result", "declined".
	MetaGate = "warden/gate"
	// MetaNotices lists what warden tells the person about the call beyond
	// the tool's own answer (a grant allowed "always" that could not be
	// saved).
	MetaNotices = "warden/notices"
)

// The _meta keys of list results.
const (
	// MetaLoading names, in tools/list (and the other lists), the modules
	// still loading: a list without it is complete.
	MetaLoading = "warden/loading"
	// MetaRefused lists, in tools/list, the tools not served because
	// several modules describe their name.
	MetaRefused = "warden/refused"
	// MetaIncomplete says, in resources/list, why the list is not
	// complete.
	MetaIncomplete = "warden/incomplete"
)

// The _meta keys of warden's own questions to the person (a permission
// prompt, a gate's confirmation), and the keys of those requests among a
// call's requests to the client.
const (
	// MetaQuestion says which of warden's questions it is: a client can
	// tell them from a tool's by it.
	MetaQuestion = "warden/question"
	// MetaConfig is the digest of the config in force when the question
	// was asked, so that an answer given under one config is never taken
	// for the same question asked under another.
	MetaConfig = "warden/config"
	// KeyConfirm is the request key of a gate's confirmation.
	KeyConfirm = "warden/confirm"
	// KeyPermission, followed by the prompt's number within the call
	// (1, 2, ...), is the request key of a permission prompt.
	KeyPermission = "warden/permission-"
)

// Outcome is what the runtime measured of one call of a tool, beside the
// Result's Error (whose kind, trap and exit code say how it failed). The
// host's layers read it typed; a client reads it as the result's _meta,
// which PutMeta writes.
type Outcome struct {
	// Duration is how long the call took in the runtime, from its arrival
	// to its result.
	Duration time.Duration
	// Ran is set when the guest ran on an instance; a call refused before
	// (bad arguments, no instance free in time) did not run, and has no
	// Fuel or FreshState.
	Ran bool
	// Fuel is what the guest consumed (about one unit per wasm
	// instruction).
	Fuel int64
	// FreshState, when set, says why the call started from a fresh instance
	// although its session had state.
	FreshState string
}

// PutMeta writes o into meta under MetaDuration, MetaFuel and
// MetaFreshState, and the failure err (nil for a success) under its keys
// (Error.PutMeta). It is the one place a call's outcome becomes _meta.
func (o *Outcome) PutMeta(meta map[string]any, err *Error) {
	if o.Ran {
		meta[MetaFuel] = o.Fuel
		if o.FreshState != "" {
			meta[MetaFreshState] = o.FreshState
		}
	}
	meta[MetaDuration] = float64(o.Duration.Microseconds()) / 1000
	if err != nil {
		err.PutMeta(meta)
	}
}

// PutMeta writes e into meta: its kind under MetaKind, and its trap and exit
// code, when it has them, under MetaTrap and MetaExitCode.
func (e *Error) PutMeta(meta map[string]any) {
	meta[MetaKind] = string(e.Kind)
	if e.Trap != "" {
		meta[MetaTrap] = string(e.Trap)
	}
	if e.ExitCode != nil {
		meta[MetaExitCode] = *e.ExitCode
	}
}
