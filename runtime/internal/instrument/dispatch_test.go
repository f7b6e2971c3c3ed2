package instrument

import (
	"context"
	"testing"
	"time"
)

// TestDirectJumps: in testdata/dispatch.wat the pass redirects exactly
// the forward jumps of dispatch loops that do not enter a loop, and a
// redirected jump costs the
// loop header's two units (local.get, br_table) less and nothing else:
// the results are the same (TestDifferentialWAT), and the fuel differs
// from the pass without redirection by 2 per direct jump taken.
func TestDirectJumps(t *testing.T) {
	wasm := watFixture(t, "dispatch")
	for _, cfg := range []Config{fuelOnly, fullConfig} {
		direct := mustInstrument(t, wasm, cfg)
		noDirect := cfg
		noDirect.ablate = ablateDirectJumps
		through := mustInstrument(t, wasm, noDirect)
		// count 1, dispatch_spin 1, edges 1, lookalikes 2, nested 2,
		// twice 2, busy and valued none.
		if direct.DirectJumps != 9 || through.DirectJumps != 0 {
			t.Fatalf("direct jumps: %d and %d, want 9 and 0", direct.DirectJumps, through.DirectJumps)
		}
		for _, c := range []struct {
			export string
			arg    uint64
			taken  int64 // direct jumps the call takes
		}{
			{"count", 0, 1}, {"count", 1000, 1}, {"nested", 0, 1}, {"nested", 10, 11}, {"twice", 5, 2},
			{"edges", 0, 1}, {"edges", 1, 0},
			{"lookalikes", 0, 1}, {"lookalikes", 1, 1}, {"lookalikes", 2, 1}, {"lookalikes", 3, 1},
			{"busy", 1, 0}, {"valued", 1, 0},
		} {
			for _, e := range engines {
				got, used, reason := fuelRun(t, e, direct, c.export, MaxBudget, c.arg)
				want, usedThrough, _ := fuelRun(t, e, through, c.export, MaxBudget, c.arg)
				if reason != StopNone || !got.equal(want) {
					t.Errorf("%s(%d) on %s: %+v (%v), through the loop %+v", c.export, c.arg, e.name, got, reason, want)
				}
				if usedThrough-used != 2*c.taken {
					t.Errorf("%s(%d) on %s: fuel %d, through the loop %d: want %d less", c.export, c.arg, e.name, used, usedThrough, 2*c.taken)
				}
			}
		}
	}
}

// TestDispatchLoopStopped: a dispatch loop that jumps back for ever (one
// direct jump forward, one back through the loop) is stopped by fuel,
// deterministically, and by the watchdog.
func TestDispatchLoopStopped(t *testing.T) {
	wasm := watFixture(t, "dispatch")
	for _, cfg := range []Config{fuelOnly, fullConfig} {
		r := mustInstrument(t, wasm, cfg)
		for _, e := range engines {
			const budget = 3_000_000 // more than two slices
			out, used, reason := fuelRun(t, e, r, "dispatch_spin", budget)
			if out.err == "" || reason != StopFuel || used <= budget || used > budget+20 {
				t.Errorf("%s: budget %d: %+v, %v, used %d", e.name, budget, out, reason, used)
			}
			if _, again, _ := fuelRun(t, e, r, "dispatch_spin", budget); again != used {
				t.Errorf("%s: used %d then %d", e.name, used, again)
			}
			inst := instantiate(t, e, r.Wasm)
			m, err := NewMeter(inst.mod, r)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			stop := m.Start(ctx, MaxBudget)
			out = callExport(ctx, inst.mod, "dispatch_spin")
			_, reason = stop()
			cancel()
			if out.err == "" || reason != StopDeadline {
				t.Errorf("%s: deadline: %+v, %v", e.name, out, reason)
			}
		}
	}
}
