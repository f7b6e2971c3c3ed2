package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// tieredRun is a tiered runtime whose background compiles wait until
// release is called (or the test ends): until then every module it loads
// runs on the interpreter. started receives the name of each module whose
// background compile is waiting, swapped the outcome of each that ended.
type tieredRun struct {
	rt      *runtime.Runtime
	started chan string
	swapped chan error
	release func()
}

func heldTiered(t *testing.T, opts runtime.Options) *tieredRun {
	t.Helper()
	opts.Tiered = true
	rt := newRuntime(t, opts)
	hold := make(chan struct{})
	var once sync.Once
	tr := &tieredRun{rt: rt, started: make(chan string, 64), swapped: make(chan error, 64),
		release: func() { once.Do(func() { close(hold) }) }}
	// Registered after newRuntime's Close: runs before it, so that Close
	// does not wait for a compile the test still holds.
	t.Cleanup(tr.release)
	runtime.SetBackgroundCompileHook(rt, func(module string) {
		tr.started <- module
		<-hold
	})
	runtime.SetSwapHook(rt, func(module string, err error) { tr.swapped <- err })
	return tr
}

func wantTier(t *testing.T, m *runtime.Module, want runtime.Tier) {
	t.Helper()
	if got, err := m.Tier(); got != want || err != nil {
		t.Fatalf("module %s tier = %q (background compile error %v), want %q", m.Name(), got, err, want)
	}
}

// outcome is what a differential comparison of two calls compares: all a
// caller sees of a result, and the fuel it consumed.
type outcome struct {
	IsError    bool
	Error      *tool.Error
	Content    []tool.Content
	Structured string
	Details    string
	Fuel       any
}

func outcomeOf(res *tool.Result) outcome {
	return outcome{IsError: res.IsError, Error: res.Error, Content: res.Content, Structured: string(res.StructuredContent),
		Details: string(res.Details), Fuel: res.Meta[tool.MetaFuel]}
}

// TestTiersAgree is the differential test of the two tiers: each bundled
// tool's calls and each fuel, memory and trap fixture give the same result
// and (unless its collector's pacing reads the clock: grow, hugeoutput)
// consume the same fuel, unit for unit, on the interpreter tier of a
// tiered load (its background compile held) as on compiled code; fuel runs
// out at the same count, and a guest recursing too deep is stopped at the
// same call (interpstack.go). A deadline stops both tiers the same way,
// though not after the same amount of work, so there only the result is
// compared.
func TestTiersAgree(t *testing.T) {
	tiered := heldTiered(t, runtime.Options{}).rt
	compiled := newRuntime(t, runtime.Options{})
	type callCase struct {
		args       string
		sameFuel   bool
		wantKind   tool.Kind // "" for success
		wantInText string
		// refused is a call the host refuses before the guest runs: it
		// consumes no fuel.
		refused bool
	}
	cases := []struct {
		name   string
		wasm   []byte
		limits runtime.Limits
		calls  []callCase
	}{
		{"echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{}, []callCase{
			{args: `{"text":"hello"}`, sameFuel: true, wantInText: "hello"},
			{args: `{"text":"` + strings.Repeat("é", 5000) + `"}`, sameFuel: true},
			{args: `{"text":7}`, sameFuel: true, wantKind: tool.KindInvalidArguments, refused: true},
		}},
		{"hash", testwasm.BuildGo(t, "../tools-wasm/hash"), runtime.Limits{}, []callCase{
			{args: `{"text":"the same bytes, every time","algorithms":["sha256","sha512"]}`, sameFuel: true},
		}},
		{"jq", testwasm.BuildGo(t, "../tools-wasm/jq"), runtime.Limits{}, []callCase{
			{args: `{"filter":"[.[] | select(. % 3 == 0)] | add","input":[1,2,3,4,5,6,7,8,9,10,11,12]}`, sameFuel: true},
			{args: `{"filter":"error(\"no\")","input":1}`, sameFuel: true, wantKind: tool.KindInvalidArguments, wantInText: "jq: error: no"},
		}},
		{"ping", testwasm.WAT(t, "testdata/ping.wat"), runtime.Limits{}, []callCase{{args: `{}`, sameFuel: true}}},
		{"panic", goGuest(t, "panic"), runtime.Limits{}, []callCase{{args: `{}`, sameFuel: true, wantKind: tool.KindFailed}}},
		{"exit", goGuest(t, "exit"), runtime.Limits{}, []callCase{{args: `{}`, sameFuel: true, wantKind: tool.KindGuestExit}}},
		{"loop", goGuest(t, "loop"), runtime.Limits{Fuel: 20_000_000}, []callCase{
			{args: `{}`, sameFuel: true, wantKind: tool.KindOutOfFuel, wantInText: "out of fuel after 20000000 units"}}},
		{"recurse", goGuest(t, "recurse"), runtime.Limits{}, []callCase{
			{args: `{}`, sameFuel: true, wantKind: tool.KindTrapped, wantInText: "went deeper than 20000 nested calls"}}},
		// Like hugeoutput below: growing the heap runs the collector.
		{"grow", goGuest(t, "grow"), runtime.Limits{Memory: 32 << 20}, []callCase{
			{args: `{}`, wantKind: tool.KindOutOfMemory, wantInText: "32 MiB"}}},
		{"badptr", goGuest(t, "badptr"), runtime.Limits{}, []callCase{{args: `{}`, sameFuel: true, wantKind: tool.KindBadOutput}}},
		// Allocating 5 MiB runs Go's collector, whose pacing reads the
		// clock: its fuel varies by a few units between two compiled runs
		// too (241537845 and 241537851 in one run), so only its answer is
		// compared. Fuel per call is deterministic where the guest's work
		// does not depend on the time (TestFuelDeterministic), and there
		// the tiers agree unit for unit.
		{"hugeoutput", goGuest(t, "hugeoutput"), runtime.Limits{}, []callCase{{args: `{}`, wantKind: tool.KindBadOutput, wantInText: "over the output limit"}}},
		{"deadline", goGuest(t, "loop"), runtime.Limits{Timeout: 200 * time.Millisecond}, []callCase{
			{args: `{}`, wantKind: tool.KindTimeout, wantInText: "did not finish within 200ms"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.limits.Isolation = runtime.IsolationCall
			onInterp := loadTool(t, tiered, c.name, c.wasm, c.limits)
			onCompiled := loadTool(t, compiled, c.name, c.wasm, c.limits)
			wantTier(t, onInterp.Module(), runtime.TierInterpreter)
			wantTier(t, onCompiled.Module(), runtime.TierCompiler)
			if !reflect.DeepEqual(onInterp.Module().Tools()[0].Descriptor, onCompiled.Module().Tools()[0].Descriptor) {
				t.Fatal("the tiers describe the module differently")
			}
			for _, cc := range c.calls {
				// Twice: the load-time instance, then a fresh one from the
				// snapshot the interpreter took.
				for round := range 2 {
					a, b := outcomeOf(call(t, onInterp, cc.args)), outcomeOf(call(t, onCompiled, cc.args))
					if !cc.sameFuel {
						a.Fuel, b.Fuel = nil, nil
					}
					if !reflect.DeepEqual(a, b) {
						t.Fatalf("round %d, %s:\ninterpreter: %+v (error %+v)\ncompiled:    %+v (error %+v)", round, cc.args, a, a.Error, b, b.Error)
					}
					switch {
					case cc.wantKind == "" && a.IsError:
						t.Fatalf("call failed on both tiers: %+v", a.Error)
					case cc.wantKind != "" && (a.Error == nil || a.Error.Kind != cc.wantKind):
						t.Fatalf("error %+v, want kind %s", a.Error, cc.wantKind)
					}
					text := ""
					if a.Error != nil {
						text = a.Error.Message
					} else if len(a.Content) > 0 {
						text = a.Content[0].Text
					}
					if !strings.Contains(text, cc.wantInText) {
						t.Fatalf("answer %q does not say %q", text, cc.wantInText)
					}
					if cc.sameFuel && !cc.refused {
						if f, _ := a.Fuel.(int64); f <= 0 {
							t.Fatalf("fuel = %v", a.Fuel)
						}
					}
				}
			}
		})
	}
	st := tiered.TierStats()
	if st.InterpreterCalls == 0 || st.CompilerCalls != 0 || st.Swaps != 0 {
		t.Fatalf("tiered runtime's stats %+v: want every call on the interpreter", st)
	}
	if st := compiled.TierStats(); st.InterpreterCalls != 0 || st.CompilerCalls == 0 {
		t.Fatalf("compiled runtime's stats %+v: want every call compiled", st)
	}
}

// TestTierSwap: a tiered load answers from the interpreter while its
// background compile is held; once released, an instance in a call when
// the compiled code arrives ends its call on the interpreter and is retired
// as it comes back, never during the call, and the next calls run compiled
// code, with the same fuel.
func TestTierSwap(t *testing.T) {
	tr := heldTiered(t, runtime.Options{})
	rt := tr.rt
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{Isolation: runtime.IsolationCall, MaxInstances: 1})
	m := tl.Module()
	if got := <-tr.started; got != "counter" {
		t.Fatalf("background compile of %q, want counter", got)
	}
	wantTier(t, m, runtime.TierInterpreter)
	first := call(t, tl, `{}`)
	wantCount(t, first, "1", false)
	if st := rt.TierStats(); st.InterpreterCalls != 1 || st.CompilerCalls != 0 {
		t.Fatalf("stats %+v after the first call, want it on the interpreter", st)
	}

	obs := &holdingObserver{entered: make(chan struct{}), release: make(chan struct{})}
	done := make(chan *tool.Result, 1)
	go func() {
		done <- tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"hold":true}`), Observer: obs})
	}()
	<-obs.entered
	tr.release()
	if err := <-tr.swapped; err != nil {
		t.Fatal(err)
	}
	wantTier(t, m, runtime.TierCompiler)
	if live := runtime.LiveInstances(m); live != 1 {
		t.Fatalf("%d live instances during the call, want 1: the busy interpreter instance", live)
	}
	close(obs.release)
	wantCount(t, <-done, "1", false)
	if st := rt.TierStats(); st.InterpreterCalls != 2 || st.CompilerCalls != 0 {
		t.Fatalf("stats %+v: the call that began on the interpreter must end there", st)
	}
	runtime.WaitSpare(m)
	second := call(t, tl, `{}`)
	wantCount(t, second, "1", false)
	if st := rt.TierStats(); st.InterpreterCalls != 2 || st.CompilerCalls != 1 || st.Swaps != 1 {
		t.Fatalf("stats %+v: want the call after the swap compiled", st)
	}
	if f1, f2 := first.Meta[tool.MetaFuel], second.Meta[tool.MetaFuel]; f1 != f2 {
		t.Fatalf("fuel %v on the interpreter, %v compiled", f1, f2)
	}
	runtime.WaitSpare(m)
	if live := runtime.LiveInstances(m); live != 1 {
		t.Fatalf("%d live instances, want 1 (the interpreter's retired)", live)
	}
}

// syncBuffer is a log sink safe for the compile's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestTierCompileFailureKeepsServing: a background compile that fails
// leaves the module on the interpreter, serving, and says why (Module.Tier,
// TierStats, the log).
func TestTierCompileFailureKeepsServing(t *testing.T) {
	var logs syncBuffer
	rt := newRuntime(t, runtime.Options{Tiered: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	swapped := make(chan error, 1)
	runtime.SetSwapHook(rt, func(module string, err error) { swapped <- err })
	runtime.SetCompileHook(rt, func(ctx context.Context, wasm []byte, compile func() (wazero.CompiledModule, error)) (wazero.CompiledModule, error) {
		return nil, errors.New("injected compiler failure")
	})
	tl := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{Isolation: runtime.IsolationCall})
	if err := <-swapped; err == nil || !strings.Contains(err.Error(), "injected compiler failure") {
		t.Fatalf("background compile ended with %v, want the injected failure", err)
	}
	tier, err := tl.Module().Tier()
	if tier != runtime.TierInterpreter || err == nil || !strings.Contains(err.Error(), "injected compiler failure") {
		t.Fatalf("tier %q, error %v: want the interpreter, and the compile's error", tier, err)
	}
	for range 3 {
		wantOK(t, call(t, tl, `{"text":"still here"}`), "still here")
	}
	if st := rt.TierStats(); st.InterpreterCalls != 3 || st.Swaps != 0 || st.Failed != 1 {
		t.Fatalf("stats %+v", st)
	}
	if !strings.Contains(logs.String(), "module keeps running on the interpreter: its background compile failed") ||
		!strings.Contains(logs.String(), "injected compiler failure") {
		t.Fatalf("log does not report the failure:\n%s", logs.String())
	}
}

// TestTierWarmCacheLoadsCompiled: once a tiered load's compile is in the
// disk cache, the next runtime loads the module compiled at once, with no
// interpreter tier.
func TestTierWarmCacheLoadsCompiled(t *testing.T) {
	dir := t.TempDir()
	wasm := testwasm.BuildGo(t, "../tools-wasm/echo")
	first, err := runtime.New(context.Background(), runtime.Options{CacheDir: dir, Tiered: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := first.Load(context.Background(), "echo", wasm, runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	wantTier(t, m, runtime.TierInterpreter)
	// Close waits for the background compile, which fills the cache.
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	second := newRuntime(t, runtime.Options{CacheDir: dir, Tiered: true})
	tl := loadTool(t, second, "echo", wasm, runtime.Limits{})
	wantTier(t, tl.Module(), runtime.TierCompiler)
	wantOK(t, call(t, tl, `{"text":"warm"}`), "warm")
	if st := second.TierStats(); st.CompilerCalls != 1 || st.InterpreterCalls != 0 {
		t.Fatalf("stats %+v: want the call compiled", st)
	}
}

// TestTierBudgetHolds: instances of both tiers are charged to the same
// memory budget: with room for two instances, sessions on interpreter
// instances and on compiled ones together never pass it, a session keeps
// its interpreter instance (and state) across the swap, and the least
// recently used is evicted, whatever its tier.
func TestTierBudgetHolds(t *testing.T) {
	tr := heldTiered(t, runtime.Options{MaxInstanceMemory: 2 * page})
	rt := tr.rt
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{Isolation: runtime.IsolationSession})
	m := tl.Module()
	<-tr.started
	wantCount(t, sessionCall(t, tl, "a"), "1", false) // the load-time instance
	runtime.WaitSpare(m)
	wantCount(t, sessionCall(t, tl, "b"), "1", false) // the spare, interpreted too
	runtime.WaitSpare(m)                              // no room for another
	if s := withinBudget(t, rt); s.Used != 2*page || s.Evictions != 0 {
		t.Fatalf("before the swap: %+v", s)
	}
	tr.release()
	if err := <-tr.swapped; err != nil {
		t.Fatal(err)
	}
	wantCount(t, sessionCall(t, tl, "a"), "2", false) // still its interpreter instance
	// Each new session needs a compiled instance and evicts the session
	// used least recently: b, a, new0, new1.
	for i := range 4 {
		wantCount(t, sessionCall(t, tl, fmt.Sprintf("new%d", i)), "1", false)
		runtime.WaitSpare(m)
		if s := withinBudget(t, rt); s.Used != 2*page || s.Evictions != uint64(i+1) {
			t.Fatalf("after new%d: %+v", i, s)
		}
	}
	wantCount(t, sessionCall(t, tl, "a"), "1", true)
	if s := withinBudget(t, rt); s.Peak > 2*page || s.Evictions != 5 {
		t.Fatalf("at the end: %+v", s)
	}
	if st := rt.TierStats(); st.InterpreterCalls != 3 || st.CompilerCalls != 5 {
		t.Fatalf("stats %+v: want three calls interpreted, five compiled", st)
	}
	if live := m.Live(); live != 2 {
		t.Fatalf("%d instances alive, want 2 (the budget's worth)", live)
	}
}

// TestTierOneShotStartsNoCompile: a runtime for a one-shot command
// (ForOneShot) loads a module not in the cache on the interpreter and
// starts no background compile, whose code it would never run: the module
// serves there, nothing is compiled into the cache, and the next runtime
// loads it interpreted again. A module the cache holds compiled still
// loads compiled.
func TestTierOneShotStartsNoCompile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	oneShot := func() *runtime.Runtime {
		rt, err := runtime.New(ctx, runtime.Options{CacheDir: dir, Tiered: true})
		if err != nil {
			t.Fatal(err)
		}
		rt.ForOneShot()
		runtime.SetBackgroundCompileHook(rt, func(module string) {
			t.Errorf("a one-shot runtime started a background compile of %s", module)
		})
		return rt
	}
	for range 2 {
		rt := oneShot()
		tl := loadTool(t, rt, "ping", wasm, runtime.Limits{})
		wantTier(t, tl.Module(), runtime.TierInterpreter)
		wantPong(t, tl)
		if err := rt.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if st := rt.TierStats(); st.InterpreterCalls != 1 || st.Swaps != 0 || st.Failed != 0 {
			t.Fatalf("stats %+v: want one call on the interpreter, no compile", st)
		}
		if compiled, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*")); len(compiled) != 0 {
			t.Fatalf("the one-shot runtime compiled into the cache: %v", compiled)
		}
	}
	// A long-lived runtime compiles it in the background (Close waits)...
	long, err := runtime.New(ctx, runtime.Options{CacheDir: dir, Tiered: true})
	if err != nil {
		t.Fatal(err)
	}
	loadTool(t, long, "ping", wasm, runtime.Limits{})
	if err := long.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// ...and a one-shot runtime then loads it compiled from the cache.
	rt := oneShot()
	defer rt.Close(ctx)
	tl := loadTool(t, rt, "ping", wasm, runtime.Limits{})
	wantTier(t, tl.Module(), runtime.TierCompiler)
	wantPong(t, tl)
}
