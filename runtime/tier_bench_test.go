package runtime_test

import (
	"context"
	"os"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// BenchmarkFirstCall is a cold start with an empty compile cache: from a new
// runtime to echo's first answered call, tiered (interpreter first, the
// compiler in the background) and not. The background compile, and Close
// waiting for it, run outside the timer: the figure is what a person
// waits for the first answer.
func BenchmarkFirstCall(b *testing.B) {
	wasm := testwasm.BuildGo(b, "../tools-wasm/echo")
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		tiered bool
	}{{"tiered", true}, {"compiled", false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				rt, err := runtime.New(ctx, runtime.Options{CacheDir: dir, Tiered: c.tiered})
				if err != nil {
					b.Fatal(err)
				}
				m, err := rt.Load(ctx, "echo", wasm, runtime.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if res := m.Tools()[0].Call(ctx, runtime.CallRequest{Arguments: echoRequest}); res.IsError {
					b.Fatal(res.Error)
				}
				b.StopTimer()
				rt.Close(ctx)
				os.RemoveAll(dir)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkEchoWarmTiered is BenchmarkEchoWarm on a tiered load once its
// compiled code has taken over: the compiled tier's warm call costs what an
// untiered load's does.
func BenchmarkEchoWarmTiered(b *testing.B) {
	rt := newRuntime(b, runtime.Options{Tiered: true})
	swapped := make(chan error, 1)
	runtime.SetSwapHook(rt, func(_ string, err error) { swapped <- err })
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{Isolation: runtime.IsolationShared})
	if err := <-swapped; err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := runtime.CallRequest{Arguments: echoRequest}
	// The first call retires the interpreter's instance.
	if res := tl.Call(ctx, req); res.IsError {
		b.Fatal(res.Error)
	}
	runtime.WaitSpare(tl.Module())
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if res := tl.Call(ctx, req); res.IsError {
			b.Fatal(res.Error)
		}
	}
	if st := rt.TierStats(); st.CompilerCalls < uint64(b.N) {
		b.Fatalf("stats %+v: want the timed calls compiled", st)
	}
}
