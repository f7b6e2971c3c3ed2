package instrument

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tetratelabs/wazero"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// segLayout describes a module for the data merge tests: a memory of
// minPages (imported when imported, else defined and exported as "mem")
// and its data segments in order.
type segLayout struct {
	minPages uint32
	imported bool
	dataCnt  bool // add a data count section (as bulk-memory toolchains do)
	segs     []testSeg
}

type testSeg struct {
	flag   byte   // 0 active, 1 passive
	global bool   // offset is global.get 0 of an imported i32 global (value globalOffset)
	offset uint32 // i32.const value when !global
	init   []byte
}

// globalOffset is the value the tests give the imported offset global.
const globalOffset = 100

func (l segLayout) wasm() []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 'a', 's', 'm', 1, 0, 0, 0})
	section := func(id byte, payload []byte) {
		b.WriteByte(id)
		b.Write(wb.AppendU32(nil, uint32(len(payload))))
		b.Write(payload)
	}
	// Imports: env.g (i32 const global) and, if imported, env.mem.
	imp := wb.AppendU32(nil, 1+b2u(l.imported))
	imp = wb.AppendName(wb.AppendName(imp, "env"), "g")
	imp = append(imp, 3, byte(wb.I32), 0)
	if l.imported {
		imp = wb.AppendName(wb.AppendName(imp, "env"), "mem")
		imp = append(imp, 2, 0)
		imp = wb.AppendU32(imp, l.minPages)
	}
	section(wb.SectionImport, imp)
	if !l.imported {
		section(wb.SectionMemory, append([]byte{1, 0}, wb.AppendU32(nil, l.minPages)...))
	}
	exp := wb.AppendU32(nil, 1)
	exp = append(wb.AppendName(exp, "mem"), 2, 0)
	section(wb.SectionExport, exp)
	if l.dataCnt {
		section(wb.SectionDataCount, wb.AppendU32(nil, uint32(len(l.segs))))
	}
	data := wb.AppendU32(nil, uint32(len(l.segs)))
	for _, s := range l.segs {
		data = append(data, s.flag)
		if s.flag == 0 {
			if s.global {
				data = append(data, byte(wb.OpGlobalGet), 0, byte(wb.OpEnd))
			} else {
				data = append(wb.AppendS32(append(data, byte(wb.OpI32Const)), int32(s.offset)), byte(wb.OpEnd))
			}
		}
		data = wb.AppendU32(data, uint32(len(s.init)))
		data = append(data, s.init...)
	}
	section(wb.SectionData, data)
	return b.Bytes()
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// envModule provides env.g and, for an imported memory, env.mem of
// minPages filled with a pattern, so that bridging a gap with zeros in
// an imported memory would show.
func envModule(minPages uint32) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 'a', 's', 'm', 1, 0, 0, 0})
	section := func(id byte, payload []byte) {
		b.WriteByte(id)
		b.Write(wb.AppendU32(nil, uint32(len(payload))))
		b.Write(payload)
	}
	section(wb.SectionMemory, append([]byte{1, 0}, wb.AppendU32(nil, minPages)...))
	glob := append(wb.AppendU32(nil, 1), byte(wb.I32), 0, byte(wb.OpI32Const))
	glob = append(wb.AppendS32(glob, globalOffset), byte(wb.OpEnd))
	section(wb.SectionGlobal, glob)
	exp := wb.AppendU32(nil, 2)
	exp = append(wb.AppendName(exp, "mem"), 2, 0)
	exp = append(wb.AppendName(exp, "g"), 3, 0)
	section(wb.SectionExport, exp)
	if minPages > 0 {
		pattern := bytes.Repeat([]byte{0xa5}, int(minPages)*65536)
		data := append(wb.AppendU32(nil, 1), 0, byte(wb.OpI32Const), 0, byte(wb.OpEnd))
		data = append(wb.AppendU32(data, uint32(len(pattern))), pattern...)
		section(wb.SectionData, data)
	}
	return b.Bytes()
}

// instantiateData instantiates wasm against a fresh env module and returns
// the memory it sees (imported or its own) and the instantiation error.
func instantiateData(t testing.TB, rt wazero.Runtime, wasm []byte, minPages uint32) ([]byte, string) {
	t.Helper()
	ctx := context.Background()
	env, err := rt.InstantiateWithConfig(ctx, envModule(minPages), wazero.NewModuleConfig().WithName("env"))
	if err != nil {
		t.Fatalf("env: %v", err)
	}
	defer env.Close(ctx)
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		// A failed instantiation's writes to an imported memory persist.
		mem, _ := env.Memory().Read(0, env.Memory().Size())
		return bytes.Clone(mem), err.Error()
	}
	defer mod.Close(ctx)
	mem, _ := mod.Memory().Read(0, mod.Memory().Size())
	return bytes.Clone(mem), ""
}

// checkMerge instruments l's module and checks that the result, and the
// original, instantiate to the same memory bytes with the same error.
// It returns how many data segments the output has and the error.
func checkMerge(t testing.TB, rt wazero.Runtime, l segLayout) (int, string) {
	t.Helper()
	orig := l.wasm()
	res, err := Instrument(orig, Config{})
	if err != nil {
		t.Fatalf("instrument: %v", err)
	}
	if again, err := Instrument(orig, Config{}); err != nil || !bytes.Equal(again.Wasm, res.Wasm) {
		t.Fatalf("not deterministic: %v", err)
	}
	ctx := context.Background()
	cm, err := rt.CompileModule(ctx, orig)
	if err != nil {
		t.Fatalf("test module does not compile: %v", err)
	}
	cm.Close(ctx)
	cm, err = rt.CompileModule(ctx, res.Wasm)
	if err != nil {
		t.Fatalf("merged module does not compile: %v", err)
	}
	cm.Close(ctx)
	wantMem, wantErr := instantiateData(t, rt, orig, l.minPages)
	gotMem, gotErr := instantiateData(t, rt, res.Wasm, l.minPages)
	if gotErr != wantErr {
		t.Fatalf("instantiation error %q, the original's %q", gotErr, wantErr)
	}
	if !bytes.Equal(gotMem, wantMem) {
		for i := range gotMem {
			if gotMem[i] != wantMem[i] {
				t.Fatalf("memory differs from byte %#x: %#x, the original's %#x", i, gotMem[i], wantMem[i])
			}
		}
		t.Fatalf("memory size %d, the original's %d", len(gotMem), len(wantMem))
	}
	return dataSegments(t, res.Wasm), gotErr
}

func dataSegments(t testing.TB, wasm []byte) int {
	t.Helper()
	mod, err := wb.Parse(wasm)
	if err != nil {
		t.Fatal(err)
	}
	s := mod.Section(wb.SectionData)
	if s == nil {
		return 0
	}
	n, err := mod.SectionReader(s).Count()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func dataRuntime(t testing.TB) wazero.Runtime {
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(features))
	t.Cleanup(func() { rt.Close(ctx) })
	return rt
}

// TestMergeData pins which layouts merge and into how many segments.
func TestMergeData(t *testing.T) {
	rt := dataRuntime(t)
	seg := func(off uint32, s string) testSeg { return testSeg{offset: off, init: []byte(s)} }
	for _, tc := range []struct {
		name string
		l    segLayout
		want int
	}{
		{"adjacent", segLayout{minPages: 1, segs: []testSeg{seg(0, "ab"), seg(2, "cd"), seg(4, "ef")}}, 1},
		{"overlap: later wins", segLayout{minPages: 1, segs: []testSeg{seg(10, "aaaa"), seg(12, "bb"), seg(8, "cc")}}, 1},
		{"short gap bridged", segLayout{minPages: 1, segs: []testSeg{seg(0, "a"), seg(1+maxDataGap, "b")}}, 1},
		{"long gap kept", segLayout{minPages: 1, segs: []testSeg{seg(0, "a"), seg(2+maxDataGap, "b")}}, 2},
		{"out of order", segLayout{minPages: 1, segs: []testSeg{seg(300, "c"), seg(0, "a"), seg(200, "b"), seg(301, "d")}}, 3},
		{"imported: only touching merge", segLayout{minPages: 1, imported: true,
			segs: []testSeg{seg(0, "ab"), seg(2, "c"), seg(4, "d")}}, 2},
		{"out of bounds keeps every segment", segLayout{minPages: 1,
			segs: []testSeg{seg(0, "a"), seg(1, "b"), seg(65535, "cd")}}, 3},
		{"at the end in bounds", segLayout{minPages: 1, segs: []testSeg{seg(65534, "a"), seg(65535, "b")}}, 1},
		{"no memory pages", segLayout{minPages: 0, segs: []testSeg{seg(0, ""), seg(0, "")}}, 1},
		{"negative offset", segLayout{minPages: 1, segs: []testSeg{seg(0, "a"), seg(0xffffffff, "")}}, 2},
		{"global offset keeps every segment", segLayout{minPages: 1,
			segs: []testSeg{seg(0, "a"), {global: true, init: []byte("b")}}}, 2},
		{"passive keeps every segment", segLayout{minPages: 1,
			segs: []testSeg{seg(0, "a"), {flag: 1, init: []byte("b")}, seg(1, "c")}}, 3},
		{"data count keeps every segment", segLayout{minPages: 1, dataCnt: true,
			segs: []testSeg{seg(0, "a"), seg(1, "b")}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := checkMerge(t, rt, tc.l); got != tc.want {
				t.Fatalf("%d data segments, want %d", got, tc.want)
			}
		})
	}
}

// TestMergeDataDifferential: modules with generated segment layouts,
// overlapping, touching, sparse, out of bounds, in defined and imported
// memories, instantiate to the same memory and the same error merged as
// not.
func TestMergeDataDifferential(t *testing.T) {
	rt := dataRuntime(t)
	rng := rand.New(rand.NewPCG(31, 6))
	merged, trapped := 0, 0
	for range 400 {
		l := randomLayout(rng)
		n, err := checkMerge(t, rt, l)
		if n < len(l.segs) {
			merged++
		}
		if err != "" {
			trapped++
		}
	}
	if merged < 120 || trapped < 20 {
		t.Fatalf("%d of 400 layouts merged, %d trapped: the generator no longer exercises the merge", merged, trapped)
	}
}

func randomLayout(rng *rand.Rand) segLayout {
	l := segLayout{minPages: 1 + uint32(rng.IntN(2)), imported: rng.IntN(4) == 0, dataCnt: rng.IntN(16) == 0}
	if rng.IntN(16) == 0 {
		l.minPages = 0
	}
	span := int(l.minPages) * 65536
	if rng.IntN(3) != 0 {
		span = min(span, 512) // crowd the segments together
	}
	overflow := rng.IntN(8) == 0 // let a segment end past the memory
	odd := 1 << 30               // no passive, global or negative segments
	if rng.IntN(4) == 0 {
		odd = 16
	}
	for range rng.IntN(40) {
		s := testSeg{init: make([]byte, rng.IntN(80))}
		if overflow {
			s.offset = uint32(max(int(l.minPages)*65536-rng.IntN(400), 0)) // crowd the end
		} else if room := span - len(s.init); room > 0 {
			s.offset = uint32(rng.IntN(room + 1))
		}
		for j := range s.init {
			s.init[j] = byte(rng.IntN(255) + 1)
		}
		switch rng.IntN(odd) {
		case 0:
			s.flag = 1
		case 1:
			s.global = true
		case 2:
			s.offset = uint32(int32(-rng.IntN(4) - 1))
		}
		l.segs = append(l.segs, s)
	}
	return l
}

// FuzzMergeData: layouts decoded from the fuzzer's bytes behave the same
// merged as not (see checkMerge).
func FuzzMergeData(f *testing.F) {
	f.Add([]byte{1, 0, 0, 10, 3, 1, 0, 12, 3, 2})
	f.Add([]byte{0x81, 0xff, 0xff, 2, 0, 0, 0, 0, 4, 4})
	rt := dataRuntime(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 1 {
			return
		}
		l := segLayout{minPages: uint32(b[0] & 3), imported: b[0]&4 != 0, dataCnt: b[0]&8 != 0}
		// Each segment: kind byte, offset (2 bytes, scaled), length.
		for b = b[1:]; len(b) >= 4 && len(l.segs) < 64; b = b[4:] {
			s := testSeg{offset: uint32(b[1])<<8 | uint32(b[2])}
			if b[0]&0x80 != 0 {
				s.offset <<= 8 // reach the end of a page and beyond
			}
			switch b[0] & 0x70 {
			case 0x10:
				s.flag = 1
			case 0x20:
				s.global = true
			case 0x30:
				s.offset = ^s.offset // negative as an i32
			}
			s.init = bytes.Repeat([]byte{b[0] | 1}, int(b[3]))
			l.segs = append(l.segs, s)
		}
		checkMerge(t, rt, l)
	})
}

// TestMergeDataGoGuest: a Go guest's thousands of per-symbol segments
// become a handful, and the instance's memory is the same.
func TestMergeDataGoGuest(t *testing.T) {
	wasm := goFixture(t, "goguest")
	res := mustInstrument(t, wasm, Config{}) // only the merge changes the module
	before, after := dataSegments(t, wasm), dataSegments(t, res.Wasm)
	t.Logf("data segments: %d before, %d after", before, after)
	if before < 1000 || after > 16 {
		t.Fatalf("%d data segments merged into %d: want thousands into at most 16", before, after)
	}
	ctx := context.Background()
	for _, e := range engines[1:] { // the interpreter: compiling a Go guest twice is slow
		var mems [][]byte
		for _, w := range [][]byte{wasm, res.Wasm} {
			inst := instantiate(t, e, w)
			m, _ := inst.mod.Memory().Read(0, inst.mod.Memory().Size())
			mems = append(mems, bytes.Clone(m))
			inst.mod.Close(ctx)
		}
		if !bytes.Equal(mems[0], mems[1]) {
			t.Fatalf("%s: memory after instantiation differs merged from not", e.name)
		}
	}
}
