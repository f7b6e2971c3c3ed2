package extism

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime/internal/instrument"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// moduleImports parses wasm anew and decodes its imports.
func moduleImports(wasm []byte) ([]wb.Import, error) {
	mod, err := wb.Parse(wasm)
	if err != nil {
		return nil, err
	}
	return mod.Imports()
}

// FuzzMoveImports: moving imports never panics on any bytes, and on a
// module it accepts changes exactly the moved imports' module names.
func FuzzMoveImports(f *testing.F) {
	for _, src := range []string{
		`(module (import "extism:host/env" "http_request" (func (param i64 i64) (result i64))) (import "extism:host/env" "alloc" (func (param i64) (result i64))))`,
		`(module (import "extism:host/env" "log_info" (func (param i64))) (import "m" "t" (table 1 funcref)) (import "m" "g" (global (mut i32))) (import "m" "mem" (memory 1 2)))`,
		`(module (import "extism:host/env" "config_get" (func (param i64) (result i64))) (import "extism:host/env" "config_get" (func (param i64) (result i64))))`,
		`(module)`,
	} {
		f.Add(testwasm.WATString(f, src))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ping.wat")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		mod, err := wb.Parse(wasm)
		if err != nil {
			return
		}
		moved, err := moveImports(mod, extismEnvModule, extismWardenModule, extismServed)
		if err != nil {
			return
		}
		out := mod.Encode()
		before, err1 := moduleImports(wasm)
		after, err2 := moduleImports(out)
		if err1 != nil || err2 != nil || len(before) != len(after) {
			t.Fatalf("imports before %v (%v), after %v (%v)", before, err1, after, err2)
		}
		for i := range before {
			want := before[i]
			if want.Module == extismEnvModule && extismServed[want.Name] {
				want.Module = extismWardenModule
			}
			if after[i] != want {
				t.Fatalf("import %d: %+v, want %+v", i, after[i], want)
			}
		}
		if !moved {
			for _, s := range mod.Sections {
				if s.Offset < 0 {
					t.Fatalf("nothing moved, yet section %d was replaced", s.ID)
				}
			}
		}
		if moved == slices.EqualFunc(before, after, func(a, b wb.Import) bool { return a == b }) {
			t.Fatalf("moveImports reported moved=%v, imports before %v, after %v", moved, before, after)
		}
	})
}

// FuzzLoggingMessage: any notify_logging_message payload is either refused
// or becomes a level and a valid message.
func FuzzLoggingMessage(f *testing.F) {
	for _, seed := range []string{
		`{"level":"warning","logger":"l","data":"careful"}`, `{"level":"nope","data":{"k":[1,2]}}`,
		`{"data":null}`, `{"level":1}`, `"x"`, ``, `{"level":"error","data":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		level, msg, err := loggingMessage(raw)
		if err != nil {
			return
		}
		if _, known := map[int]bool{-4: true, 0: true, 4: true, 8: true}[int(level)]; !known {
			t.Fatalf("level %v", level)
		}
		if utf8.Valid(raw) && !utf8.ValidString(msg) {
			t.Fatalf("valid input, invalid message %q", msg)
		}
	})
}

// FuzzOneParse: the load path on one parse (imports moved in place, the
// same parse handed to the instrumentation pass) refuses exactly what the
// step-by-step path refused (parse, move, encode, parse again, instrument)
// and produces the same bytes.
func FuzzOneParse(f *testing.F) {
	for _, src := range []string{
		`(module (import "extism:host/env" "http_request" (func (param i64 i64) (result i64))) (import "extism:host/env" "alloc" (func (param i64) (result i64))) (memory (export "memory") 1) (func (export "call") (result i32) (loop (br 0)) i32.const 0))`,
		`(module (import "extism:host/env" "log_info" (func (param i64))) (import "m" "g" (global (mut i32))) (memory 1) (start 1) (func (call 0 (i64.const 1))))`,
		`(module (import "extism:host/env" "alloc" (func (param i64) (result i64))))`,
		`(module (memory 1) (func (export "f")))`,
		`(module)`,
	} {
		f.Add(testwasm.WATString(f, src))
	}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		// Step by step, as the loader did before.
		old, err := wb.Parse(wasm)
		if err != nil {
			return
		}
		moved, errOldMove := moveImports(old, extismEnvModule, extismWardenModule, extismServed)
		var resOld *instrument.Result
		var errOld error
		if errOldMove == nil {
			input := wasm
			if moved {
				input = old.Encode()
			}
			resOld, errOld = instrument.Instrument(input, loadConfig)
		}
		// One parse.
		mod, err := wb.Parse(wasm)
		if err != nil {
			t.Fatalf("parses differ: %v", err)
		}
		_, errMove := moveImports(mod, extismEnvModule, extismWardenModule, extismServed)
		if (errMove == nil) != (errOldMove == nil) {
			t.Fatalf("moveImports: %v, before: %v", errMove, errOldMove)
		}
		if errMove != nil {
			return
		}
		res, err := instrument.InstrumentModule(mod, loadConfig)
		switch {
		case (err == nil) != (errOld == nil):
			t.Fatalf("instrument: %v, step by step: %v", err, errOld)
		case err == nil && !bytes.Equal(res.Wasm, resOld.Wasm):
			t.Fatalf("instrumented bytes differ (%d vs %d bytes)", len(res.Wasm), len(resOld.Wasm))
		}
	})
}
