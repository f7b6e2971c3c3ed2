package warden_test

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/internal/testwasm"
)

// BenchmarkDispatch measures the SDK's own cost per call on the host:
// decoding the request and arguments, running a trivial tool, encoding.
func BenchmarkDispatch(b *testing.B) {
	r := warden.NewRegistry(wordCount{})
	req := []byte(`{"tool":"word_count","callId":"c-1","arguments":{"text":"to be or not to be"}}`)
	b.ReportAllocs()
	for b.Loop() {
		r.Dispatch(req, nil)
	}
}

// BenchmarkWasmEcho measures one warden_alloc + warden_call + response read
// of the bundled echo tool on a warm instance (no per-call isolation: that
// is the runtime's to measure).
func BenchmarkWasmEcho(b *testing.B) {
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compiled))
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)
	mod, err := r.InstantiateWithConfig(ctx, testwasm.BuildGo(b, "../../../tools-wasm/echo"),
		wazero.NewModuleConfig().WithStartFunctions("_initialize"))
	if err != nil {
		b.Fatal(err)
	}
	alloc, call := mod.ExportedFunction("warden_alloc"), mod.ExportedFunction("warden_call")
	req := []byte(`{"tool":"echo","callId":"c-1","arguments":{"text":"hello"}}`)
	want := `{"content":[{"type":"text","text":"hello"}],"structuredContent":{"text":"hello"}}`
	b.ResetTimer()
	for b.Loop() {
		res, err := alloc.Call(ctx, uint64(len(req)))
		if err != nil {
			b.Fatal(err)
		}
		mod.Memory().Write(uint32(res[0]), req)
		res, err = call.Call(ctx, pack(uint32(res[0]), uint32(len(req))))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := mod.Memory().Read(uint32(res[0]>>32), uint32(res[0]))
		if string(out) != want {
			b.Fatalf("response %s", out)
		}
	}
}
