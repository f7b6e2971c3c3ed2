package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

var echoRequest = json.RawMessage(`{"text":"hello, warden"}`)

// BenchmarkEchoRaw is the baseline: the same export of the same module
// called straight through wazero, with nothing warden adds (no validation,
// no pool, no limits, no state reset).
func BenchmarkEchoRaw(b *testing.B) {
	ctx := context.Background()
	wasm := testwasm.BuildGo(b, "../tools-wasm/echo")
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	if _, err := r.NewHostModuleBuilder("warden").Instantiate(ctx); err != nil {
		b.Fatal(err)
	}
	mod, err := r.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		b.Fatal(err)
	}
	alloc, callFn := mod.ExportedFunction("warden_alloc"), mod.ExportedFunction("warden_call")
	request, _ := json.Marshal(map[string]any{"tool": "echo", "arguments": echoRequest})
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		res, err := alloc.Call(ctx, uint64(len(request)))
		if err != nil {
			b.Fatal(err)
		}
		ptr := uint32(res[0])
		mod.Memory().Write(ptr, request)
		res, err = callFn.Call(ctx, uint64(ptr)<<32|uint64(len(request)))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		var resp map[string]any
		if err := json.Unmarshal(out, &resp); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEcho(b *testing.B, isolation runtime.Isolation) {
	rt := newRuntime(b, runtime.Options{})
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{Isolation: isolation})
	ctx := context.Background()
	req := runtime.CallRequest{Arguments: echoRequest}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if res := tl.Call(ctx, req); res.IsError {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkEchoWarm is a warm call through warden's whole call path, on a
// reused instance (isolation: shared), to compare with BenchmarkEchoRaw.
func BenchmarkEchoWarm(b *testing.B) { benchEcho(b, runtime.IsolationShared) }

// BenchmarkEchoFreshState is the default: every call starts from the state
// right after _initialize.
func BenchmarkEchoFreshState(b *testing.B) { benchEcho(b, runtime.IsolationCall) }

// BenchmarkCompile compares loading the echo module with a cold and with a
// warm on-disk compilation cache.
func BenchmarkCompile(b *testing.B) {
	wasm := testwasm.BuildGo(b, "../tools-wasm/echo")
	ctx := context.Background()
	load := func(b *testing.B, dir string) {
		rt, err := runtime.New(ctx, runtime.Options{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		m, err := rt.Load(ctx, "echo", wasm, runtime.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		m.Close(ctx)
		rt.Close(ctx)
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			dir := b.TempDir()
			load(b, dir)
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "cache")
		load(b, dir)
		for b.Loop() {
			load(b, dir)
		}
	})
}

// reportCPU adds the process's CPU time per operation (user + system, all
// threads) as a metric: on a shared machine it is far steadier than wall
// time. Call the returned function after the loop.
func reportCPU(b *testing.B) func() {
	start := cpuTime(b)
	return func() {
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime(b *testing.B) int64 {
	ns, err := processCPUTime() // cputime_*_test.go
	if err != nil {
		b.Fatal(err)
	}
	return ns
}
