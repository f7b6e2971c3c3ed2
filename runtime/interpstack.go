package runtime

import (
	_ "unsafe" // for go:linkname

	"github.com/warden-run/warden/runtime/internal/instrument"
)

// interpreterCallStackCeiling is wazero's interpreter's bound on nested
// calls: 2000 frames, where its compiler allows hundreds of megabytes of
// stack. A guest recursing 2001 deep would then trap on the interpreter
// and run compiled, and the tiers of a tiered load (tier.go) would differ.
// wazero's comment on it invites changing it at build time; warden raises
// it above the call depth its instrumentation enforces on every module
// (instrument.DefaultMaxCallDepth), so that the instrumentation's own
// stack_overflow stops a deep guest at the same call, with the same fuel,
// on both tiers (TestTiersAgree's recurse fixture). The margin covers the
// frames the host adds (a host function and the entry call).
//
//go:linkname interpreterCallStackCeiling github.com/tetratelabs/wazero/internal/engine/interpreter.callStackCeiling
var interpreterCallStackCeiling int

func init() {
	interpreterCallStackCeiling = 2 * instrument.DefaultMaxCallDepth
}
