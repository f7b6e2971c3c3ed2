package instrument

import (
	"bytes"
	"context"
	"sort"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// FuzzInstrument: any input either errors or yields a module; if the
// engine accepts the input it accepts the output; and for small modules
// the first no-argument export behaves the same instrumented as not,
// unless fuel ran out. Instrument never panics and is deterministic.
func FuzzInstrument(f *testing.F) {
	for _, fx := range append(watFixtures, "host", "fuelpaths", "segments") {
		w := watFixture(f, fx)
		f.Add(w, uint8(0xff))
		f.Add(w, uint8(0x05))
	}
	f.Add(cFixture(f, "cguest"), uint8(0xff))
	f.Add(rawModule([]byte{0, 0x0b}), uint8(0xff))

	ctx := context.Background()
	// rt compiles with every supported feature; run executes modules
	// without tail calls only, because the interpreter's tail calls skip
	// both its context checks and function listeners, so an original that
	// tail-calls forever could not be stopped.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(features))
	run := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCloseOnContextDone(true))
	f.Cleanup(func() { rt.Close(ctx); run.Close(ctx) })

	f.Fuzz(func(t *testing.T, wasm []byte, flags uint8) {
		cfg := Config{
			Fuel:          flags&1 != 0,
			InitialFuel:   1_000_000, // bounds a start function
			VirtualMemory: flags&2 != 0,
			ExportGlobals: flags&4 != 0,
		}
		if flags&8 != 0 {
			cfg.MaxCallDepth = 10000 // above the interpreter's own 2000 frames
		}
		r, err := Instrument(wasm, cfg)
		if err != nil {
			return
		}
		if r2, err := Instrument(wasm, cfg); err != nil || !bytes.Equal(r.Wasm, r2.Wasm) {
			t.Fatalf("not deterministic: %v", err)
		}
		cm, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return // invalid input: nothing to compare
		}
		cm.Close(ctx)
		if cm, err = rt.CompileModule(ctx, r.Wasm); err != nil {
			t.Fatalf("input compiles, instrumented output does not: %v", err)
		}
		cm.Close(ctx)
		if len(wasm) > 64<<10 {
			return
		}
		// Listen to calls of the original: the engine checks its context
		// only at loop headers, and recursion can run on for ever.
		orig, err := run.CompileModule(experimental.WithFunctionListenerFactory(ctx, deadlineListener{}), wasm)
		if err != nil {
			return // uses tail calls
		}
		defer orig.Close(ctx)
		inst, err := run.CompileModule(ctx, r.Wasm)
		if err != nil {
			t.Fatalf("input compiles, instrumented output does not: %v", err)
		}
		defer inst.Close(ctx)
		var names []string
		for name, d := range orig.ExportedFunctions() {
			if len(d.ParamTypes()) == 0 {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return
		}
		sort.Strings(names)
		want, ok := fuzzRun(run, orig, nil, names[0])
		if !ok {
			return // instantiation failed, or the original ran too long
		}
		got, reason := fuzzRunMetered(t, run, inst, r, names[0])
		if reason == StopFuel || reason == StopStackOverflow {
			return
		}
		if reason == StopDeadline {
			t.Fatalf("%s: fuel did not stop the guest within 30s", names[0])
		}
		if !got.equal(want) {
			t.Fatalf("%s: instrumented %+v, original %+v", names[0], got, want)
		}
	})
}

// fuzzRun instantiates cm and calls export with a 200 ms limit; ok is
// false if it could not be instantiated or did not finish in time.
func fuzzRun(rt wazero.Runtime, cm wazero.CompiledModule, _ *Result, export string) (outcome, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		return outcome{}, false
	}
	defer mod.Close(context.Background())
	out := callExport(ctx, mod, export)
	return out, ctx.Err() == nil
}

func fuzzRunMetered(t *testing.T, rt wazero.Runtime, cm wazero.CompiledModule, r *Result, export string) (outcome, StopReason) {
	ctx := context.Background()
	mod, err := rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatalf("original instantiates, instrumented does not: %v", err)
	}
	defer mod.Close(ctx)
	if r.FuelGlobal == "" {
		return callExport(ctx, mod, export), StopNone
	}
	m, err := NewMeter(mod, r)
	if err != nil {
		t.Fatal(err)
	}
	// The deadline only keeps a guest that fuel fails to stop from hanging
	// the fuzzer; it is generous so that a loaded machine never hits it
	// while fuel does its job.
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	stop := m.Start(dctx, 1_000_000)
	out := callExport(ctx, mod, export) // ctx, not dctx: only the watchdog may stop it
	_, reason := stop()
	return out, reason
}

// deadlineListener aborts a call (by panicking, which the engine turns into
// an error) at a function entry once the call's context is done.
type deadlineListener struct{}

func (deadlineListener) NewFunctionListener(api.FunctionDefinition) experimental.FunctionListener {
	return deadlineListener{}
}

func (deadlineListener) Before(ctx context.Context, _ api.Module, _ api.FunctionDefinition, _ []uint64, _ experimental.StackIterator) {
	if ctx.Err() != nil {
		panic(ctx.Err())
	}
}

func (deadlineListener) After(context.Context, api.Module, api.FunctionDefinition, []uint64) {}

func (deadlineListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
