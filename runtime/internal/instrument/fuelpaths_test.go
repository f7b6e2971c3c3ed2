package instrument

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// fuelPathsInstance instantiates testdata/fuelpaths.wat, instrumented with
// cfg, with a host function "observe" that records Meter.Remaining and
// charges charge units.
type fuelPathsInstance struct {
	mod      api.Module
	m        *Meter
	seen     []int64
	charge   int64
	r        *Result
	observed func(i uint32)
}

func newFuelPaths(t *testing.T, e engine, cfg Config) *fuelPathsInstance {
	t.Helper()
	ctx := context.Background()
	r := mustInstrument(t, watFixture(t, "fuelpaths"), cfg)
	rt := wazero.NewRuntimeWithConfig(ctx, e.cfg())
	t.Cleanup(func() { rt.Close(ctx) })
	f := &fuelPathsInstance{r: r}
	_, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
		WithFunc(func(_ context.Context, i uint32) {
			f.seen = append(f.seen, f.m.Remaining())
			if f.charge != 0 {
				f.m.Charge(f.charge)
			}
			if f.observed != nil {
				f.observed(i)
			}
		}).Export("observe").Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if f.mod, err = rt.Instantiate(ctx, r.Wasm); err != nil {
		t.Fatal(err)
	}
	if f.m, err = NewMeter(f.mod, r); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fuelPathsInstance) run(ctx context.Context, budget int64, export string, args ...uint64) (outcome, int64, StopReason) {
	f.seen = f.seen[:0]
	stop := f.m.Start(ctx, budget)
	out := callExport(ctx, f.mod, export, args...)
	used, reason := stop()
	return out, used, reason
}

var spinExports = []string{"leaf_spin", "indirect_spin", "tail_spin", "indirect_leaf_spin", "brtable_spin", "host_spin"}

// TestRunawayLoops: every kind of unbounded loop (in a leaf function,
// through call_indirect, through tail calls, by br_table, around a host
// function) is stopped by fuel, overdrawn by at most a few units, and by
// the watchdog.
func TestRunawayLoops(t *testing.T) {
	for _, cfg := range []Config{fuelOnly, fullConfig} {
		for _, e := range engines {
			f := newFuelPaths(t, e, cfg)
			for _, name := range spinExports {
				const budget = 3_000_000 // more than two slices
				out, used, reason := f.run(context.Background(), budget, name)
				if out.err == "" || reason != StopFuel || used <= budget || used > budget+20 {
					t.Errorf("%s/%s: budget %d: %+v, %v, used %d", e.name, name, budget, out, reason, used)
				}
				// Deterministic: the same again.
				if _, again, _ := f.run(context.Background(), budget, name); again != used {
					t.Errorf("%s/%s: used %d then %d", e.name, name, used, again)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				out, used, reason = f.run(ctx, MaxBudget, name)
				cancel()
				if out.err == "" || reason != StopDeadline || used <= 0 {
					t.Errorf("%s/%s: deadline: %+v, %v, used %d", e.name, name, out, reason, used)
				}
			}
		}
	}
}

// TestLeafLoopMetered: a loop inside a function without calls (whose
// entry does not check) is charged per iteration.
func TestLeafLoopMetered(t *testing.T) {
	for _, e := range engines {
		f := newFuelPaths(t, e, fuelOnly)
		var used [3]int64
		for i, n := range []uint64{1000, 2000, 3000} {
			out, u, reason := f.run(context.Background(), MaxBudget, "leaf_count", n)
			if out.err != "" || reason != StopNone {
				t.Fatalf("%s: leaf_count(%d): %+v %v", e.name, n, out, reason)
			}
			used[i] = u
		}
		per := used[1] - used[0]
		if per < 1000*10 || used[2]-used[1] != per {
			t.Fatalf("%s: leaf loop fuel %v: want linear, at least 10 per iteration", e.name, used)
		}
	}
}

// TestCalleeFuelVisibleToHost: the fuel a callee spent, in a loop of its
// own, is in the global when the caller next calls the host; what the host
// charges is seen by the guest at once; both are deterministic.
func TestCalleeFuelVisibleToHost(t *testing.T) {
	for _, e := range engines {
		f := newFuelPaths(t, e, fuelOnly)
		// Per round: the callee's m iterations plus the caller's loop.
		round := func(m uint64, charge int64) []int64 {
			f.charge = charge
			out, used, reason := f.run(context.Background(), MaxBudget, "callee_then_host", 4, m)
			if out.err != "" || reason != StopNone {
				t.Fatalf("%s: %+v %v", e.name, out, reason)
			}
			if len(f.seen) != 4 {
				t.Fatalf("%s: %d host calls", e.name, len(f.seen))
			}
			d := []int64{MaxBudget - f.seen[0]}
			for i := 1; i < len(f.seen); i++ {
				d = append(d, f.seen[i-1]-f.seen[i])
			}
			return append(d, used)
		}
		small, big := round(100, 0), round(1100, 0)
		for i := 1; i < 4; i++ {
			// Every round costs the same, and 1000 more iterations of
			// the callee cost the host-visible difference.
			if small[i] != small[1] || big[i] != big[1] {
				t.Fatalf("%s: rounds differ: %v, %v", e.name, small, big)
			}
		}
		perIter := (big[1] - small[1]) / 1000
		if perIter < 10 || big[1]-small[1] != 1000*perIter || big[0]-small[0] != 1000*perIter {
			t.Fatalf("%s: callee fuel not visible to the host: %v, %v", e.name, small, big)
		}
		// A host charge is seen by the guest: each round costs it more.
		charged := round(100, 5000)
		if charged[1] != small[1]+5000 || charged[4] != small[4]+4*5000 {
			t.Fatalf("%s: host charges: %v vs %v", e.name, charged, small)
		}
		if again := round(100, 5000); again[4] != charged[4] {
			t.Fatalf("%s: not deterministic: %d vs %d", e.name, again[4], charged[4])
		}
	}
}
