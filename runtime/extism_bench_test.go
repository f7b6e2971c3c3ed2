package runtime_test

import (
	"context"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// BenchmarkExtismVsNative runs a warm call of the same logic (echo: decode
// {"text"}, return it as text and structured content) as a native tool
// (tools-wasm/echo) and as a hyper-mcp v2 Extism plugin (v2_echo), side by
// side, under fresh state per call (call) and pooled state (shared).
func BenchmarkExtismVsNative(b *testing.B) {
	rt := extismRuntime(b, runtime.Options{})
	native := testwasm.BuildGo(b, "../tools-wasm/echo")
	for _, isolation := range []runtime.Isolation{runtime.IsolationCall, runtime.IsolationShared} {
		limits := runtime.Limits{Isolation: isolation, MaxInstances: 1}
		tools := []struct {
			name string
			tool *runtime.Tool
		}{
			{"native", loadTool(b, rt, "echo", native, limits)},
			{"extism", toolNamed(b, extismPlugin(b, rt, "v2", limits), "v2_echo")},
		}
		for _, tc := range tools {
			b.Run(tc.name+"/"+string(isolation), func(b *testing.B) {
				req := runtime.CallRequest{Arguments: echoRequest}
				if res := tc.tool.Call(context.Background(), req); res.IsError {
					b.Fatal(res.Error)
				}
				b.ReportAllocs()
				// The machine is shared: the process's CPU time per call
				// (garbage collection included) is the steadier figure.
				cpu0, n := processCPU(), 0
				for b.Loop() {
					if res := tc.tool.Call(context.Background(), req); res.IsError {
						b.Fatal(res.Error)
					}
					n++
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/op")
			})
		}
	}
}

// processCPU is the process's user and system CPU time in nanoseconds.
func processCPU() int64 {
	ns, _ := processCPUTime()
	return ns
}
