package runtime_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// BenchmarkSessionFirstCall is a new session's first call of a loaded tool
// (isolation: session, the default), the latency a client meets when it
// connects. Between iterations, with the timer stopped, the session ends
// and the benchmark waits until the module has an instance ready, as a
// server between two clients would (WaitSpare: the spare made in the
// background is idle; Live >= 1: an instance exists at all): what is timed
// is the call alone.
func BenchmarkSessionFirstCall(b *testing.B) {
	rt := newRuntime(b, runtime.Options{})
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{})
	m := tl.Module()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		session := "s" + strconv.Itoa(i)
		res := tl.Call(ctx, runtime.CallRequest{Arguments: echoRequest, Session: session})
		if res.IsError {
			b.Fatal(res.Error)
		}
		b.StopTimer()
		m.EndSession(ctx, session)
		runtime.WaitSpare(m)
		for m.Live() < 1 {
			time.Sleep(100 * time.Microsecond)
		}
		b.StartTimer()
	}
}

// BenchmarkNewInstance is what making one instance of the echo module
// costs (isolation: session makes one per session, in the background):
// instantiating its compiled code, which applies its data segments, and
// restoring the snapshot taken after _initialize.
func BenchmarkNewInstance(b *testing.B) {
	rt := newRuntime(b, runtime.Options{})
	tl := loadTool(b, rt, "echo", testwasm.BuildGo(b, "../tools-wasm/echo"), runtime.Limits{})
	m := tl.Module()
	runtime.WaitSpare(m)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := runtime.NewInstance(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}
