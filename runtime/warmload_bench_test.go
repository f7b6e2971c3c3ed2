package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/runtime/internal/instrument"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// BenchmarkWarmFirstCall is what the first call of a module costs after a
// restart, its compile cache warm (docs/performance.md): total is a fresh
// runtime opening echo from its cached manifest and calling it once; the
// other sub-benchmarks are that load's phases, one at a time, each timed
// alone on the same bytes and caches:
//
//	read        read the module file and check its sha256 (Module.reload)
//	parse       warden's parse of the module (wasmbin)
//	instrument  the instrumentation pass's result, from the instcache
//	compile     the runtime's compile of the instrumented bytes, a hit in
//	            the file cache the guard verified (decode, read and map the
//	            code; no validation: codecache.CompileVerified)
//	compile-wazero  wazero's own CompileModule of the same bytes, which
//	            validates them again before it looks in its file cache
//	codefile    reading wazero's cache file alone (part of compile)
//	instantiate a new instance of the compiled module
//	init        the guest's start-up (_initialize), metered
//	snapshot    the snapshot of the state after start-up
//
// The phases add up to about total less the call and the bookkeeping.
func BenchmarkWarmFirstCall(b *testing.B) {
	ctx := context.Background()
	path := testwasm.BuildGoFile(b, "../tools-wasm/echo")
	cache := b.TempDir()
	limits := Limits{}
	{ // Warm the cache: compiled code, instrumented module, manifest.
		rt, err := New(ctx, Options{CacheDir: cache})
		if err != nil {
			b.Fatal(err)
		}
		m, err := rt.OpenFile(ctx, "echo", path, limits, OpenOptions{})
		if err != nil {
			b.Fatal(err)
		}
		m.Close(ctx)
		rt.Close(ctx)
	}
	args := json.RawMessage(`{"text":"hi"}`)

	b.Run("total", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			rt, err := New(ctx, Options{CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			m, err := rt.OpenFile(ctx, "echo", path, limits, OpenOptions{CachedOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			if res := m.Tools()[0].Call(ctx, CallRequest{Arguments: args}); res.IsError {
				b.Fatalf("call: %+v", res)
			}
			b.StopTimer()
			if m.rt.bodyLoads.Load() != 1 {
				b.Fatalf("%d body loads, want 1", m.rt.bodyLoads.Load())
			}
			m.Close(ctx)
			rt.Close(ctx)
			b.StartTimer()
		}
	})

	rt, err := New(ctx, Options{CacheDir: cache})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	wasm, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	spec := guest.Spec{Name: "echo", SHA256: hex.EncodeToString(sum[:]), Limits: limits.WithDefaults().loadGuest()}
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			w, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			sha256.Sum256(w)
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if _, err := wb.Parse(wasm); err != nil {
				b.Fatal(err)
			}
		}
	})
	mod, err := wb.Parse(wasm)
	if err != nil {
		b.Fatal(err)
	}
	// The native loader's pass (native.go); a miss would run the pass.
	cfg := instrument.Config{Fuel: true, MaxCallDepth: instrument.DefaultMaxCallDepth, ExportGlobals: true, VirtualMemory: true, DeferStart: true}
	var instrumented *instrument.Result
	b.Run("instrument", func(b *testing.B) {
		for b.Loop() {
			if instrumented, err = rt.host.Instrument(spec, "native", mod, cfg); err != nil {
				b.Fatal(err)
			}
		}
		if rt.host.Passes.Load() != 0 {
			b.Fatal("the instrumented module was not in the cache")
		}
	})
	if instrumented == nil {
		b.Skip("instrument did not run")
	}
	b.Run("compile", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			fresh, err := New(ctx, Options{CacheDir: cache})
			if err != nil {
				b.Fatal(err)
			}
			end := fresh.codeGuard.Begin()
			b.StartTimer()
			if _, err := fresh.compileModule(ctx, instrumented.Wasm); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			end()
			fresh.Close(ctx)
			b.StartTimer()
		}
	})
	wzConfig := wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(65536)
	b.Run("compile-wazero", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			cc, err := wazero.NewCompilationCacheWithDir(cache)
			if err != nil {
				b.Fatal(err)
			}
			wz := wazero.NewRuntimeWithConfig(ctx, wzConfig.WithCompilationCache(cc))
			b.StartTimer()
			if _, err := wz.CompileModule(ctx, instrumented.Wasm); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			wz.Close(ctx)
			cc.Close(ctx)
			b.StartTimer()
		}
	})
	codeFiles, _ := filepath.Glob(filepath.Join(cache, "wazero-*", "*"))
	b.Run("codefile", func(b *testing.B) {
		for b.Loop() {
			for _, f := range codeFiles {
				if _, err := os.ReadFile(f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	compiled, err := rt.compile(ctx, instrumented.Wasm, spec.Limits.CompileBudget)
	if err != nil {
		b.Fatal(err)
	}
	e := &native{rt: rt, spec: spec, instrumented: instrumented}
	e.code.Store(&code{wz: rt.wz, compiled: compiled, tier: TierCompiler})
	b.Run("instantiate", func(b *testing.B) {
		for b.Loop() {
			in, err := e.newInstance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			in.Close(ctx)
			b.StartTimer()
		}
	})
	b.Run("init", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			in, err := e.newInstance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			in.CallCtx.Store(&ctx)
			b.StartTimer()
			if err := e.runInit(ctx, in); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			in.Close(ctx)
			b.StartTimer()
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		in, err := e.newInstance(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer in.Close(ctx)
		in.CallCtx.Store(&ctx)
		if err := e.runInit(ctx, in); err != nil {
			b.Fatal(err)
		}
		globals := append(append([]string(nil), instrumented.Globals...), instrumented.PagesGlobal)
		for b.Loop() {
			if _, err := guest.TakeSnapshot(in, globals, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
