package trap

import (
	"errors"
	"fmt"
	"testing"

	"github.com/warden-run/warden/tool"
)

// wasmError stands for wazero's internal *wasmruntime.Error: what Classify
// matches is its text.
type wasmError string

func (e wasmError) Error() string { return string(e) }

// TestClassifyFunction: the function is the first frame of wazero's trace,
// without the module prefix and the signature, whatever the signature.
func TestClassifyFunction(t *testing.T) {
	for trace, want := range map[string]string{
		// A Go panic traps in runtime.abort: its caller outside the
		// runtime is the place.
		".runtime.abort()\n\t.runtime.fatalpanic(i32)\n\t\t/go/src/runtime/panic.go:1\n\t.runtime.gopanic(i32)\n\t.main.call() i32": "main.call via runtime.abort",
		".runtime.abort()\n\t.runtime.exit(i32)":    "runtime.abort",
		".main.panicky(i32)\n\t.$4(i64) i64":        "main.panicky",
		".$7() (i32,i64)":                           "$7",
		".f(i32,i64,f32) f64\n\t\t/src/main.rs:3:1": "f",
		".core::fmt::write(x)(i32)":                 "core::fmt::write(x)",
		".noSignature":                              "noSignature",
	} {
		err := fmt.Errorf("wasm error: %w\nwasm stack trace:\n\t%s", wasmError("unreachable"), trace)
		o, ok := Classify(err)
		got := o.Function
		if o.Via != "" {
			got += " via " + o.Via
		}
		if !ok || o.Trap != tool.TrapUnreachable || got != want {
			t.Errorf("%q: %+v, %v; want function %q", trace, o, ok, want)
		}
	}
	// A trap without a trace (the compiler's bare stack overflow) names none.
	if o, ok := Classify(wasmError("stack overflow")); !ok || o.Function != "" || o.Where() != "" {
		t.Errorf("bare trap: %+v, %v", o, ok)
	}
	// A guest cannot make its own error text a trap with a place.
	if _, ok := Classify(errors.New("wasm error: unreachable\nwasm stack trace:\n\t.f()")); ok {
		t.Error("a plain error's text was classified")
	}
}
