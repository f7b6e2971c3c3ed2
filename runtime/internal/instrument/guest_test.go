package instrument

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// goCall is one call into the Go guest fixture.
type goCall struct {
	name string
	args []uint64
}

func goCalls(e engine) []goCall {
	calls := []goCall{
		{"sha", []uint64{64 << 10}},
		{"json", []uint64{100}},
		{"json_deep", []uint64{300}},
		{"recurse", []uint64{300}},
		{"grow", []uint64{4}},
	}
	if e.name == "compiler" {
		// The interpreter stops at 2000 frames of its own.
		calls = append(calls, goCall{"json_deep", []uint64{1000}}, goCall{"recurse", []uint64{5000}})
	}
	return calls
}

// runGo instantiates wasm, calls _initialize and then every call in
// order on the same instance; with r != nil each call runs under a Meter.
func runGo(t *testing.T, e engine, wasm []byte, r *Result, calls []goCall) ([]outcome, []int64) {
	t.Helper()
	inst := instantiate(t, e, wasm)
	var m *Meter
	if r != nil {
		var err error
		if m, err = NewMeter(inst.mod, r); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	var outs []outcome
	var fuel []int64
	for _, c := range append([]goCall{{name: "_initialize"}}, calls...) {
		var stop func() (int64, StopReason)
		if m != nil {
			stop = m.Start(ctx, MaxBudget)
		}
		out := callExport(ctx, inst.mod, c.name, c.args...)
		if stop != nil {
			used, reason := stop()
			if reason != StopNone {
				t.Errorf("%s%v: stop reason %v", c.name, c.args, reason)
			}
			fuel = append(fuel, used)
		}
		if out.err != "" {
			t.Errorf("%s: %s%v: %s", e.name, c.name, c.args, out.err)
		}
		outs = append(outs, out)
	}
	return outs, fuel
}

// TestDifferentialGo: a standard Go wasip1 reactor computes the same
// results instrumented (everything on, default depth bound) as not, on
// both engines, and uses the same fuel on both.
func TestDifferentialGo(t *testing.T) {
	wasm := goFixture(t, "goguest")
	r := mustInstrument(t, wasm, Config{Fuel: true, MaxCallDepth: DefaultMaxCallDepth, VirtualMemory: true, ExportGlobals: true})
	fuel := map[string][]int64{}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			calls := goCalls(e)
			want, _ := runGo(t, e, wasm, nil, calls)
			got, used := runGo(t, e, r.Wasm, r, calls)
			for i := range want {
				if !got[i].equal(want[i]) {
					t.Errorf("call %d: got %+v, want %+v", i, got[i], want[i])
				}
			}
			fuel[e.name] = used
			t.Logf("fuel per call (_initialize first): %v", used)
		})
	}
	c, i := fuel["compiler"], fuel["interpreter"]
	for k := range i {
		if c[k] != i[k] {
			t.Errorf("call %d: fuel %d on the compiler, %d on the interpreter", k, c[k], i[k])
		}
	}
}

// TestDifferentialC: the same for a clang-built module (bulk memory and
// SIMD from -O2 autovectorisation), every run_* export.
func TestDifferentialC(t *testing.T) {
	wasm := cFixture(t, "cguest")
	exports := noArgExports(t, wasm, "run_")
	sort.Strings(exports)
	for _, c := range configs {
		r := mustInstrument(t, wasm, c.cfg)
		fuel := map[string]int64{}
		for _, e := range engines {
			for _, name := range exports {
				want := callExport(context.Background(), instantiate(t, e, wasm).mod, name)
				got, used, reason := fuelRun(t, e, r, name, MaxBudget)
				if !got.equal(want) || reason != StopNone || want.err != "" {
					t.Errorf("%s/%s/%s: got %+v (%v), want %+v", c.name, e.name, name, got, reason, want)
				}
				if prev, ok := fuel[name]; ok && prev != used {
					t.Errorf("%s/%s: fuel %d vs %d between engines", c.name, name, prev, used)
				}
				fuel[name] = used
			}
		}
	}
}

// depthListener tracks the weighted call depth the depth bound would see.
type depthListener struct {
	weights []int32
	cur     int64
	max     int64
}

func (l *depthListener) NewFunctionListener(api.FunctionDefinition) experimental.FunctionListener {
	return l
}

func (l *depthListener) Before(_ context.Context, _ api.Module, def api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if int(def.Index()) < len(l.weights) {
		l.cur += int64(l.weights[def.Index()])
		l.max = max(l.max, l.cur)
	}
}

func (l *depthListener) After(_ context.Context, _ api.Module, def api.FunctionDefinition, _ []uint64) {
	if int(def.Index()) < len(l.weights) {
		l.cur -= int64(l.weights[def.Index()])
	}
}

func (l *depthListener) Abort(ctx context.Context, mod api.Module, def api.FunctionDefinition, _ error) {
	l.After(ctx, mod, def, nil)
}

// frameWeights is the depth weight of every function of wasm (0 for imports).
func frameWeights(t testing.TB, wasm []byte) []int32 {
	mod, err := wb.Parse(wasm)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decode(mod, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	w := make([]int32, len(m.funcTypes))
	for i, c := range m.codes {
		fn := int(m.importedFuncs) + i
		_, n, err := wb.NewReader(m.Bytes, c.Start, c.End).Locals()
		if err != nil {
			t.Fatal(err)
		}
		w[fn] = frameWeight(uint64(len(m.types[m.funcTypes[fn]].Params)) + n)
	}
	return w
}

// TestGoDepth measures the weighted call depth ordinary Go work needs and
// checks DefaultMaxCallDepth leaves a wide margin; the figures are in
// RATIONALE.md.
func TestGoDepth(t *testing.T) {
	wasm := goFixture(t, "goguest")
	l := &depthListener{weights: frameWeights(t, wasm)}
	ctx := experimental.WithFunctionListenerFactory(context.Background(), l)
	e := engines[0]
	inst := instantiateCtx(t, ctx, e, wasm)
	callExport(ctx, inst.mod, "_initialize")
	report := ""
	for _, c := range []goCall{{"sha", []uint64{1 << 20}}, {"json", []uint64{1000}}, {"json_deep", []uint64{1000}}, {"recurse", []uint64{1000}}, {"recurse", []uint64{10000}}} {
		l.max = 0
		if out := callExport(ctx, inst.mod, c.name, c.args...); out.err != "" {
			t.Fatalf("%s: %s", c.name, out.err)
		}
		report += fmt.Sprintf(" %s%v=%d", c.name, c.args, l.max)
		if c.name == "json_deep" && l.max*4 > DefaultMaxCallDepth {
			t.Errorf("json of depth 1000 needs weighted depth %d: DefaultMaxCallDepth %d leaves less than 4x", l.max, DefaultMaxCallDepth)
		}
	}
	t.Logf("weighted call depth:%s", report)
}
