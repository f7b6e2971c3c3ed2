package instrument

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// Modes compared by the guest benchmarks (benchstat -col /mode):
//
//	plain: uninstrumented, no deadline enforcement at all
//	close: uninstrumented, WithCloseOnContextDone and a deadline context
//	fuel:  Config{Fuel}, Meter with a deadline context
//	full:  fuel + default depth bound + VirtualMemory + ExportGlobals,
//	       Meter with a deadline context (what the runtime runs)
//
// BenchmarkInterleaved adds two:
//
//	plain2:  plain compiled a second time (a compilation cache of its
//	         own): the noise floor of the comparison
//	rewrite: the structure of fuel (wrapper block, scratch locals,
//	         appended globals, functions and exports) without any
//	         inserted fuel code, Meter with a deadline context
var benchModes = []string{"plain", "close", "fuel", "full"}

type benchGuest struct {
	mod  api.Module
	fn   api.Function
	m    *Meter
	mode string
}

func newBenchGuest(b testing.TB, wasm []byte, mode, export string, initialize bool) *benchGuest {
	return newBenchGuestCached(b, wasm, mode, export, initialize, compileCache)
}

func newBenchGuestCached(b testing.TB, wasm []byte, mode, export string, initialize bool, cache wazero.CompilationCache) *benchGuest {
	cfg := wazero.NewRuntimeConfigCompiler().WithCoreFeatures(features).WithCompilationCache(cache)
	var r *Result
	switch mode {
	case "rewrite":
		r = mustInstrument(b, wasm, Config{Fuel: true, structureOnly: true})
	case "nospills":
		r = mustInstrument(b, wasm, Config{Fuel: true, ablate: ablateSpills})
	case "nodirect":
		r = mustInstrument(b, wasm, Config{Fuel: true, ablate: ablateDirectJumps})
	case "nochecks":
		r = mustInstrument(b, wasm, Config{Fuel: true, ablate: ablateChecks})
	case "close":
		cfg = cfg.WithCloseOnContextDone(true)
	case "fuel":
		r = mustInstrument(b, wasm, Config{Fuel: true})
	case "full":
		r = mustInstrument(b, wasm, Config{Fuel: true, MaxCallDepth: DefaultMaxCallDepth, VirtualMemory: true, ExportGlobals: true})
	}
	return startBenchGuest(b, cfg, wasm, r, mode, export, initialize)
}

// startBenchGuest instantiates wasm, or r's module if r is not nil (with
// a Meter), and initializes it if asked to.
func startBenchGuest(b testing.TB, cfg wazero.RuntimeConfig, wasm []byte, r *Result, mode, export string, initialize bool) *benchGuest {
	ctx := context.Background()
	if r != nil {
		wasm = r.Wasm
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	b.Cleanup(func() { rt.Close(ctx) })
	wasiInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions())
	if err != nil {
		b.Fatal(err)
	}
	g := &benchGuest{mod: mod, fn: mod.ExportedFunction(export), mode: mode}
	if r != nil {
		if g.m, err = NewMeter(mod, r); err != nil {
			b.Fatal(err)
		}
	}
	if initialize {
		if _, err := g.call(mod.ExportedFunction("_initialize")); err != nil {
			b.Fatal(err)
		}
	}
	return g
}

// call makes one call the way the runtime would in this mode.
func (g *benchGuest) call(fn api.Function, args ...uint64) ([]uint64, error) {
	if g.mode == "plain" || g.mode == "plain2" {
		return fn.Call(context.Background(), args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if g.m == nil {
		return fn.Call(ctx, args...)
	}
	stop := g.m.Start(ctx, MaxBudget)
	res, err := fn.Call(ctx, args...)
	stop()
	return res, err
}

func benchGuestCalls(b *testing.B, wasm []byte, export string, initialize bool, args ...uint64) {
	for _, mode := range benchModes {
		b.Run("mode="+mode, func(b *testing.B) {
			g := newBenchGuest(b, wasm, mode, export, initialize)
			if _, err := g.call(g.fn, args...); err != nil { // warm up
				b.Fatal(err)
			}
			// The machine is shared: CPU time is the steadier figure.
			cpu0 := cpuTime()
			n := 0
			b.ResetTimer()
			for b.Loop() {
				if _, err := g.call(g.fn, args...); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(n), "cpu-ns/op")
		})
	}
}

// BenchmarkLoop: a tight arithmetic loop of 10^6 iterations in WAT.
func BenchmarkLoop(b *testing.B) {
	benchGuestCalls(b, watFixture(b, "loops"), "count", false, 1_000_000)
}

// BenchmarkSHA256: sha256 of 1 MiB in a standard Go guest.
func BenchmarkSHA256(b *testing.B) {
	benchGuestCalls(b, goFixture(b, "goguest"), "sha", true, 1<<20)
}

// BenchmarkJSON: encode, decode and re-encode 200 records in a Go guest.
func BenchmarkJSON(b *testing.B) {
	benchGuestCalls(b, goFixture(b, "goguest"), "json", true, 200)
}

// BenchmarkRegexp: compile a regexp and find all its submatches in 4 KiB
// of text, twice, in a Go guest.
func BenchmarkRegexp(b *testing.B) {
	benchGuestCalls(b, goFixture(b, "goguest"), "regexp", true, regexpRounds)
}

// regexpRounds is the argument of the regexp benchmarks.
const regexpRounds = 2

// BenchmarkInterleaved calls the Go guest in every mode in turn, so that
// load from other processes hits all modes alike; one op is one round of
// calls, each round starting at the next instance so that no instance
// always runs right after another. Each mode runs benchInstances
// instances, because one instance of a module can be 10-20 % faster or
// slower than another instance of the same compiled code for as long as
// it lives (where its memory lands). It reports, per mode, the median
// over the rounds of the CPU time of the mode's instances divided by
// plain's in the same round (%mode: the overhead in percent); plain2
// against plain is the noise floor of the figure. CPU time is the
// calling thread's: the calls run on it, and other goroutines (the host's
// GC workers) are left out.
func BenchmarkInterleaved(b *testing.B) {
	benchInterleaved(b, "plain", "plain2", "rewrite", "fuel", "full")
}

// BenchmarkDirectJumps is BenchmarkInterleaved for the fuel pass with
// and without sending dispatch jumps straight to their target
// (nodirect), and for the pass's structure alone with them (rewrite):
// what the jumps save against what the fuel code costs.
func BenchmarkDirectJumps(b *testing.B) {
	benchInterleaved(b, "plain", "rewrite", "fuel", "nodirect")
}

// BenchmarkChargeCounts reports, per call of each Go guest, the fuel (the
// wasm instructions run), the charges and the checks run, with and
// without direct jumps. The counts are exact; the time is not the point.
func BenchmarkChargeCounts(b *testing.B) {
	wasm := goFixture(b, "goguest")
	for _, c := range []struct {
		name, export string
		arg          uint64
	}{{"SHA256", "sha", 1 << 20}, {"JSON", "json", 200}, {"Regexp", "regexp", regexpRounds}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				for _, m := range []struct {
					name   string
					ablate ablation
				}{
					{"fuel", 0}, {"charges", countCharges}, {"checks", countChecks},
					{"fuel-nodirect", ablateDirectJumps}, {"charges-nodirect", countCharges | ablateDirectJumps},
					{"checks-nodirect", countChecks | ablateDirectJumps},
				} {
					r := mustInstrument(b, wasm, Config{Fuel: true, ablate: m.ablate})
					cfg := wazero.NewRuntimeConfigCompiler().WithCoreFeatures(features).WithCompilationCache(compileCache)
					g := startBenchGuest(b, cfg, nil, r, "fuel", c.export, true)
					if _, err := g.call(g.fn, c.arg); err != nil { // warm up
						b.Fatal(err)
					}
					stop := g.m.Start(context.Background(), MaxBudget)
					if _, err := g.fn.Call(context.Background(), c.arg); err != nil {
						b.Fatal(err)
					}
					used, _ := stop()
					b.ReportMetric(float64(used), m.name+"/call")
				}
			}
		})
	}
}

// BenchmarkAblate is BenchmarkInterleaved for fuel and fuel with parts
// left out (unsafe, to locate the cost): nospills keeps the counter out of
// the global around calls and returns, nochecks never tests it.
func BenchmarkAblate(b *testing.B) {
	benchInterleaved(b, "plain", "fuel", "nospills", "nochecks")
}

// benchInterleaved runs the Go guest calls in modes, modes[0] being the
// base of the reported ratios.
func benchInterleaved(b *testing.B, modes ...string) {
	wasm := goFixture(b, "goguest")
	cache2 := wazero.NewCompilationCache()
	b.Cleanup(func() { cache2.Close(context.Background()) })
	for _, c := range []struct {
		name, export string
		arg          uint64
	}{{"SHA256", "sha", 1 << 20}, {"JSON", "json", 200}, {"Regexp", "regexp", regexpRounds}} {
		b.Run(c.name, func(b *testing.B) {
			var gs []*benchGuest
			var modeOf []int
			for i, mode := range modes {
				cache := compileCache
				if mode == "plain2" {
					cache = cache2
				}
				for range benchInstances {
					g := newBenchGuestCached(b, wasm, mode, c.export, true, cache)
					if _, err := g.call(g.fn, c.arg); err != nil { // warm up
						b.Fatal(err)
					}
					gs = append(gs, g)
					modeOf = append(modeOf, i)
				}
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ratios := make([][]float64, len(modes))
			took := make([]int64, len(modes))
			round := 0
			for b.Loop() {
				clear(took)
				for k := range gs {
					i := (round + k) % len(gs)
					g := gs[i]
					t0 := threadCPUTime()
					if _, err := g.call(g.fn, c.arg); err != nil {
						b.Fatal(err)
					}
					took[modeOf[i]] += threadCPUTime() - t0
				}
				if took[0] > 0 {
					for i := range modes {
						ratios[i] = append(ratios[i], float64(took[i])/float64(took[0]))
					}
				}
				round++
			}
			for i, mode := range modes[1:] {
				b.ReportMetric(100*(median(ratios[i+1])-1), "%"+mode)
			}
		})
	}
}

// benchInstances is how many instances of each mode BenchmarkInterleaved
// runs.
const benchInstances = 4

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2
	}
	return v[len(v)/2]
}

// BenchmarkInstrumentGo: the pass itself on a ~3.5 MB Go module.
func BenchmarkInstrumentGo(b *testing.B) {
	wasm := goFixture(b, "goguest")
	b.SetBytes(int64(len(wasm)))
	b.ReportAllocs()
	cfg := Config{Fuel: true, MaxCallDepth: DefaultMaxCallDepth, VirtualMemory: true, ExportGlobals: true}
	for b.Loop() {
		if _, err := Instrument(wasm, cfg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecursionBomb: unbounded recursion under the default depth
// bound on the compiler engine; reports the RSS the first bomb added.
func BenchmarkRecursionBomb(b *testing.B) {
	r := mustInstrument(b, watFixture(b, "recursion"), Config{Fuel: true, MaxCallDepth: DefaultMaxCallDepth})
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(features))
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, r.Wasm)
	if err != nil {
		b.Fatal(err)
	}
	m, _ := NewMeter(mod, r)
	before := rssKiB(b)
	first := true
	for b.Loop() {
		stop := m.Start(ctx, MaxBudget)
		_, err := mod.ExportedFunction("bomb").Call(ctx)
		if _, reason := stop(); err == nil || reason != StopStackOverflow {
			b.Fatalf("err %v, reason %v", err, reason)
		}
		if first {
			b.ReportMetric(float64(rssKiB(b)-before)/1024, "MiB-rss-added")
			first = false
		}
	}
}
