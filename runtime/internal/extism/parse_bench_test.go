package extism

import (
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime/internal/instrument"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// loadConfig is the instrumentation both loaders ask for.
var loadConfig = instrument.Config{
	Fuel: true, MaxCallDepth: instrument.DefaultMaxCallDepth,
	ExportGlobals: true, VirtualMemory: true, DeferStart: true,
}

// BenchmarkLoadParse measures the load path before compiling: telling the
// kind, checking the imports, moving the served imports and instrumenting,
// for an Extism plugin (the v1 fixture, a Go module of several MB).
// "each-step" is how it was done before the loaders shared one parse
// (every step parsed the bytes anew: four parses, the moved imports
// re-encoded in between); "once" is the load path now. Compare with
// benchstat:
//
//	go test ./runtime/internal/extism -run '^$' -bench LoadParse -benchmem -count 8 > parse.txt; benchstat -col /path parse.txt
func BenchmarkLoadParse(b *testing.B) {
	wasm := testwasm.BuildGo(b, "../../testdata/extism/v1")
	b.Run("path=each-step", func(b *testing.B) {
		b.SetBytes(int64(len(wasm)))
		for b.Loop() {
			mod, err := wb.Parse(wasm) // detection
			if err != nil {
				b.Fatal(err)
			}
			if _, err := mod.Imports(); err != nil {
				b.Fatal(err)
			}
			mod, err = wb.Parse(wasm) // import check
			if err != nil {
				b.Fatal(err)
			}
			if _, err := mod.Imports(); err != nil {
				b.Fatal(err)
			}
			mod, err = wb.Parse(wasm) // moving the served imports
			if err != nil {
				b.Fatal(err)
			}
			if _, err := moveImports(mod, extismEnvModule, extismWardenModule, extismServed); err != nil {
				b.Fatal(err)
			}
			if _, err := instrument.Instrument(mod.Encode(), loadConfig); err != nil { // parses again
				b.Fatal(err)
			}
		}
	})
	b.Run("path=once", func(b *testing.B) {
		b.SetBytes(int64(len(wasm)))
		for b.Loop() {
			mod, err := wb.Parse(wasm)
			if err != nil {
				b.Fatal(err)
			}
			if !(Loader{}).Claims(mod) {
				b.Fatal("not claimed")
			}
			if _, err := mod.Imports(); err != nil {
				b.Fatal(err)
			}
			if _, err := moveImports(mod, extismEnvModule, extismWardenModule, extismServed); err != nil {
				b.Fatal(err)
			}
			if _, err := instrument.InstrumentModule(mod, loadConfig); err != nil {
				b.Fatal(err)
			}
		}
	})
}
