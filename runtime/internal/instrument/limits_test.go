package instrument

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// shaped is a module of one function () -> () (index 0) with locals i32
// locals, depth nested blocks (or loops) and middle inside the deepest.
func shaped(depth int, op byte, middle []byte, locals uint32) []byte {
	body := []byte{0}
	if locals > 0 {
		body = append(wb.AppendU32([]byte{1}, locals), byte(wb.I32))
	}
	for range depth {
		body = append(body, op, 0x40)
	}
	body = append(body, middle...)
	for range depth {
		body = append(body, byte(wb.OpEnd))
	}
	body = append(body, byte(wb.OpEnd))
	code := wb.AppendU32(wb.AppendU32(nil, 1), uint32(len(body)))
	code = append(code, body...)
	return wasmModule(section(1, []byte{1, 0x60, 0, 0}), section(3, []byte{1, 0}), section(10, code))
}

func section(id byte, payload []byte) []byte {
	return append(wb.AppendU32([]byte{id}, uint32(len(payload))), payload...)
}

func wasmModule(sections ...[]byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	for _, s := range sections {
		m = append(m, s...)
	}
	return m
}

// brTable is middle code: a br_table of n targets (default included).
func brTable(n, depth int) []byte {
	m := append([]byte{byte(wb.OpI32Const), 0, byte(wb.OpBrTable)}, wb.AppendU32(nil, uint32(n-1))...)
	for i := range n {
		m = wb.AppendU32(m, uint32(i%(depth+1)))
	}
	return m
}

// manyFuncs is a module of n empty functions.
func manyFuncs(n int) []byte {
	funcs := wb.AppendU32(nil, uint32(n))
	code := wb.AppendU32(nil, uint32(n))
	for range n {
		funcs = append(funcs, 0)
		code = append(code, 2, 0, byte(wb.OpEnd))
	}
	return wasmModule(section(1, []byte{1, 0x60, 0, 0}), section(3, funcs), section(10, code))
}

var fullConfig = Config{Fuel: true, MaxCallDepth: DefaultMaxCallDepth, VirtualMemory: true, ExportGlobals: true, DeferStart: true}

func TestStructuralLimits(t *testing.T) {
	small := Limits{MaxFunctions: 10, MaxBodyBytes: 1000, MaxLocals: 100, MaxNesting: 50, MaxLoopNesting: 30, MaxBrTableTargets: 20}
	for _, tc := range []struct {
		name, want  string
		under, over []byte
	}{
		{"nesting", "function 0: wasm offset 0x7d: control nesting 51, over the limit of 50",
			shaped(50, byte(wb.OpBlock), nil, 0), shaped(51, byte(wb.OpBlock), nil, 0)},
		{"nesting of loops", "loop nesting 31, over the limit of 30",
			shaped(30, byte(wb.OpLoop), nil, 0), shaped(31, byte(wb.OpLoop), nil, 0)},
		{"loops in blocks", "control nesting 51, over the limit of 50",
			shaped(25, byte(wb.OpLoop), nil, 0), loopsInBlocks(30, 21)},
		{"body", "function 0: body is 1001 bytes, over the limit of 1000",
			shaped(0, 0, []byte(strings.Repeat("\x01", 997)), 0), shaped(0, 0, []byte(strings.Repeat("\x01", 999)), 0)},
		{"locals", "function 0: 101 locals, over the limit of 100", shaped(0, 0, nil, 100), shaped(0, 0, nil, 101)},
		{"br_table", "br_table of 21 targets, over the limit of 20",
			shaped(3, byte(wb.OpBlock), brTable(20, 3), 0), shaped(3, byte(wb.OpBlock), brTable(21, 3), 0)},
		{"functions", "11 functions, over the limit of 10", manyFuncs(10), manyFuncs(11)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fullConfig
			cfg.Limits = small
			if _, err := Instrument(tc.under, cfg); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			_, err := Instrument(tc.over, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("over the limit: error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDefaultNestingRefusesDeepModules: the hostile module of issue 11
// (150,000 nested blocks, 450 KB) is refused by the pass, before the
// compiler sees it.
func TestDefaultNestingRefusesDeepModules(t *testing.T) {
	_, err := Instrument(shaped(150_000, byte(wb.OpBlock), nil, 0), fullConfig)
	want := fmt.Sprintf("control nesting %d, over the limit of %d", DefaultLimits.MaxNesting+1, DefaultLimits.MaxNesting)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// BenchmarkCompileWorstCase compiles (instrument + wazero compiler) the
// worst cases just under each default limit, per function:
//
//	go test ./runtime/internal/instrument -run '^$' -bench CompileWorstCase -benchtime 3x
func BenchmarkCompileWorstCase(b *testing.B) {
	d := DefaultLimits
	for _, bc := range []struct {
		name string
		wasm []byte
	}{
		{"nesting=max/blocks", shaped(int(d.MaxNesting), byte(wb.OpBlock), nil, 0)},
		{"loops=max", shaped(int(d.MaxLoopNesting), byte(wb.OpLoop), nil, 0)},
		{"loops=max/in-blocks=max", loopsInBlocks(int(d.MaxNesting-d.MaxLoopNesting), int(d.MaxLoopNesting))},
		{"nesting=max/br_table=max", shaped(int(d.MaxNesting), byte(wb.OpBlock), brTable(int(d.MaxBrTableTargets), int(d.MaxNesting)), 0)},
		{"br_table=max", shaped(2, byte(wb.OpBlock), brTable(int(d.MaxBrTableTargets), 2), 0)},
		{"locals=max/set-each", shaped(0, 0, setEach(d.MaxLocals-2), d.MaxLocals-2)},
		{"nesting=1000/locals=max", shaped(1000, byte(wb.OpBlock), setEach(d.MaxLocals-2), d.MaxLocals-2)},
		{"functions=100k", manyFuncs(100_000)},
		{"body=max", shaped(0, 0, []byte(strings.Repeat("\x41\x01\x1a", int(d.MaxBodyBytes-16)/3)), 0)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportMetric(float64(len(bc.wasm)), "bytes")
			ctx := context.Background()
			for b.Loop() {
				r, err := Instrument(bc.wasm, fullConfig)
				if err != nil {
					b.Fatal(err)
				}
				rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
				if _, err := rt.CompileModule(ctx, r.Wasm); err != nil {
					b.Fatal(err)
				}
				rt.Close(ctx)
			}
		})
	}
}

// setEach sets each of n i32 locals once.
func setEach(n uint32) []byte {
	var m []byte
	for i := range n {
		m = append(m, byte(wb.OpI32Const), 1, byte(wb.OpLocalSet))
		m = wb.AppendU32(m, i)
	}
	return m
}

// loopsInBlocks nests loops inside blocks.
func loopsInBlocks(blocks, loops int) []byte {
	var middle []byte
	for range loops {
		middle = append(middle, byte(wb.OpLoop), 0x40)
	}
	for range loops {
		middle = append(middle, byte(wb.OpEnd))
	}
	return shaped(blocks, byte(wb.OpBlock), middle, 0)
}

// FuzzLimits runs the pass over arbitrary modules under small structural
// limits: it must refuse or accept without panicking, and whatever it
// accepts stays within the limits' measure.
func FuzzLimits(f *testing.F) {
	f.Add(shaped(3, byte(wb.OpBlock), nil, 2))
	f.Add(shaped(3, byte(wb.OpLoop), brTable(4, 3), 0))
	f.Add(loopsInBlocks(2, 3))
	f.Add(manyFuncs(3))
	small := Limits{MaxFunctions: 8, MaxBodyBytes: 256, MaxLocals: 16, MaxNesting: 6, MaxLoopNesting: 3, MaxBrTableTargets: 5}
	f.Fuzz(func(t *testing.T, wasm []byte) {
		cfg := fullConfig
		cfg.Limits = small
		r, err := Instrument(wasm, cfg)
		if err == nil && r.Deepest > small.MaxNesting {
			t.Fatalf("accepted nesting %d over the limit %d", r.Deepest, small.MaxNesting)
		}
	})
}

// DeferStart moves the start section to an export the host calls metered.
func TestDeferStart(t *testing.T) {
	typ := section(1, []byte{2, 0x60, 0, 0, 0x60, 1, byte(wb.I32), 0})
	code := section(10, []byte{2, 2, 0, byte(wb.OpEnd), 2, 0, byte(wb.OpEnd)})
	withStart := func(fn byte) []byte {
		return wasmModule(typ, section(3, []byte{2, 0, 1}), section(8, []byte{fn}), code)
	}
	r, err := Instrument(withStart(0), fullConfig)
	if err != nil {
		t.Fatal(err)
	}
	if r.StartExport != StartExport {
		t.Fatalf("StartExport = %q", r.StartExport)
	}
	m, err := wb.Parse(r.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	if m.Section(wb.SectionStart) != nil {
		t.Fatal("start section still present")
	}
	exports, err := m.SectionReader(m.Section(wb.SectionExport)).Exports()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(exports, func(e wb.Export) bool { return e.Name == StartExport && e.Index == 0 && e.Kind == wb.KindFunc }) {
		t.Fatalf("exports %v lack %s", exports, StartExport)
	}
	if _, err := Instrument(withStart(1), fullConfig); err == nil || !strings.Contains(err.Error(), "start function 1 must take and return nothing") {
		t.Fatalf("start function with a param: %v", err)
	}
	if _, err := Instrument(withStart(5), fullConfig); err == nil || !strings.Contains(err.Error(), "start function 5 out of range") {
		t.Fatalf("start function out of range: %v", err)
	}
}
