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
// kind, checking the imports, moving the served imports (Extism) and
// instrumenting, for an Extism plugin (the v1 fixture) and a native module
// (the goguest/state fixture), Go modules of several MB. "each-step" is how
// it was done before the loaders shared one parse: every step parsed the
// bytes anew (four parses for a plugin, the moved imports re-encoded in
// between; two for a native module); "once" is the load path now. Compare:
//
//	go test ./runtime/internal/extism -run '^$' -bench LoadParse -benchmem -count 8 > parse.txt
//	benchstat -col /path parse.txt
func BenchmarkLoadParse(b *testing.B) {
	for _, kind := range []struct{ name, dir string }{
		{"extism", "../../testdata/extism/v1"},
		{"native", "../../testdata/goguest/state"},
	} {
		wasm := testwasm.BuildGo(b, kind.dir)
		b.Run("kind="+kind.name+"/path=each-step", func(b *testing.B) {
			b.SetBytes(int64(len(wasm)))
			for b.Loop() {
				eachStep(b, wasm)
			}
		})
		b.Run("kind="+kind.name+"/path=once", func(b *testing.B) {
			b.SetBytes(int64(len(wasm)))
			for b.Loop() {
				once(b, wasm)
			}
		})
	}
}

// eachStep is the load path as it was: detection, the Extism import check
// and the move each parsed the bytes, and the pass parsed them again.
func eachStep(b *testing.B, wasm []byte) {
	parse := func(wasm []byte) *wb.Module {
		mod, err := wb.Parse(wasm)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := mod.Imports(); err != nil {
			b.Fatal(err)
		}
		return mod
	}
	input := wasm
	if (Loader{}).Claims(parse(wasm)) { // detection
		parse(wasm) // the import check
		mod := parse(wasm)
		if moved, err := moveImports(mod, extismEnvModule, extismWardenModule, extismServed); err != nil {
			b.Fatal(err)
		} else if moved {
			input = mod.Encode()
		}
	}
	if _, err := instrument.Instrument(input, loadConfig); err != nil {
		b.Fatal(err)
	}
}

// once is the load path now: one parse for every step.
func once(b *testing.B, wasm []byte) {
	mod, err := wb.Parse(wasm)
	if err != nil {
		b.Fatal(err)
	}
	if (Loader{}).Claims(mod) {
		if _, err := mod.Imports(); err != nil { // the import check
			b.Fatal(err)
		}
		if _, err := moveImports(mod, extismEnvModule, extismWardenModule, extismServed); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := instrument.InstrumentModule(mod, loadConfig); err != nil {
		b.Fatal(err)
	}
}
