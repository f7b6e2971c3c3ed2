package runtime_test

import (
	"slices"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// echoWarmFuelBudget bounds the fuel (wasm instructions, exact) of a warm
// echo call through the whole call path. It sits just above what the guest
// SDK's fast paths reach (19,978 to 20,285 units; 42,095 before them, see
// docs/performance.md, "Where the rest of the gap goes"): a change that puts
// reflection, encoding/json or an allocation back on the common path fails
// here, deterministically, where a timing benchmark would only drift.
const echoWarmFuelBudget = 20_500

// TestGoEchoFuelBudget: the median of five warm echo calls stays within
// echoWarmFuelBudget. The median, not each call: a call on which the Go
// allocator refills a span or the collector runs costs thousands more, and
// which call that is moves with any allocation anywhere in the module.
// Fuel is deterministic, so the same module gives the same figures on
// every run and machine.
func TestGoEchoFuelBudget(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	// Shared isolation reuses the instance: the calls are warm, as calls of
	// one session are.
	tl := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{Isolation: runtime.IsolationShared})
	wantOK(t, call(t, tl, `{"text":"hello"}`), "hello") // the first call caches the argument type's shape
	var fuel []int64
	for range 5 {
		res := call(t, tl, `{"text":"hello"}`)
		wantOK(t, res, "hello")
		fuel = append(fuel, res.Meta[tool.MetaFuel].(int64))
	}
	sorted := slices.Sorted(slices.Values(fuel))
	if median := sorted[len(sorted)/2]; median > echoWarmFuelBudget {
		t.Fatalf("warm echo calls cost %v units of fuel (median %d), over the budget of %d", fuel, median, echoWarmFuelBudget)
	}
	t.Logf("warm echo calls: %v units of fuel", fuel)
}
