package instrument

import (
	"context"
	"fmt"
	"sort"
	"testing"
)

var watFixtures = []string{"loops", "recursion", "bulk", "simd", "multivalue", "tailcall", "dispatch"}

var configs = []struct {
	name string
	cfg  Config
}{
	{"none", Config{}},
	{"fuel", Config{Fuel: true}},
	{"depth", Config{MaxCallDepth: 1000}},
	{"vm", Config{VirtualMemory: true}},
	{"globals", Config{ExportGlobals: true}},
	{"all", Config{Fuel: true, MaxCallDepth: 1000, VirtualMemory: true, ExportGlobals: true}},
}

// fuelRun calls export on a fresh instance of r under a Meter (when r has
// fuel) and returns the outcome, the fuel consumed and the stop reason.
func fuelRun(t testing.TB, e engine, r *Result, export string, budget int64, args ...uint64) (outcome, int64, StopReason) {
	t.Helper()
	inst := instantiate(t, e, r.Wasm)
	if r.FuelGlobal == "" {
		return callExport(context.Background(), inst.mod, export, args...), 0, StopNone
	}
	m, err := NewMeter(inst.mod, r)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	stop := m.Start(ctx, budget)
	out := callExport(ctx, inst.mod, export, args...)
	used, reason := stop()
	if r.DepthGlobal != "" && out.err == "" {
		if d := inst.mod.ExportedGlobal(r.DepthGlobal).Get(); d != 0 {
			t.Errorf("%s: depth %d after a normal return", export, d)
		}
	}
	return out, used, reason
}

// TestDifferentialWAT: every run_* export of every WAT fixture gives the
// same results (or the same trap) instrumented as not, on both engines and
// under every configuration, and fuel accounting is identical on both
// engines.
func TestDifferentialWAT(t *testing.T) {
	for _, fx := range watFixtures {
		wasm := watFixture(t, fx)
		exports := noArgExports(t, wasm, "run_")
		sort.Strings(exports)
		for _, c := range configs {
			r := mustInstrument(t, wasm, c.cfg)
			fuel := map[string]int64{}
			for _, e := range engines {
				for _, name := range exports {
					want := callExport(context.Background(), instantiate(t, e, wasm).mod, name)
					got, used, reason := fuelRun(t, e, r, name, MaxBudget)
					if !got.equal(want) {
						t.Errorf("%s/%s/%s/%s: got %+v, want %+v", fx, c.name, e.name, name, got, want)
					}
					if reason != StopNone {
						t.Errorf("%s/%s/%s/%s: stop reason %v", fx, c.name, e.name, name, reason)
					}
					if c.cfg.Fuel && used <= 0 {
						t.Errorf("%s/%s/%s/%s: consumed %d fuel", fx, c.name, e.name, name, used)
					}
					key := name
					if prev, ok := fuel[key]; ok && prev != used {
						t.Errorf("%s/%s/%s: fuel differs between engines: %d vs %d", fx, c.name, name, prev, used)
					}
					fuel[key] = used
				}
			}
			if c.name == "fuel" {
				t.Logf("%s fuel: %v", fx, fmt.Sprint(fuel))
			}
		}
	}
}
