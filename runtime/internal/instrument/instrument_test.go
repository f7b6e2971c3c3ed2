package instrument

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

var fuelOnly = Config{Fuel: true}

func TestFuelExhaustion(t *testing.T) {
	r := mustInstrument(t, watFixture(t, "loops"), fuelOnly)
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			// Linear cost: each iteration of count's loop costs the same.
			var used [4]int64
			for i, n := range []uint64{100, 200, 300} {
				out, u, reason := fuelRun(t, e, r, "count", MaxBudget, n)
				if out.err != "" || reason != StopNone {
					t.Fatalf("count(%d): %+v %v", n, out, reason)
				}
				used[i] = u
			}
			per := (used[1] - used[0]) / 100
			if per <= 0 || used[2]-used[1] != used[1]-used[0] || (used[1]-used[0])%100 != 0 {
				t.Fatalf("fuel not linear in iterations: %v", used[:3])
			}
			// A budget for ~half the work stops it with an out-of-fuel trap,
			// overdrawn by at most one loop segment.
			budget := used[1] / 2
			out, u, reason := fuelRun(t, e, r, "count", budget, 200)
			if reason != StopFuel || !strings.Contains(out.err, "unreachable") {
				t.Fatalf("got %+v %v, want an out-of-fuel trap", out, reason)
			}
			if u <= budget || u > budget+per {
				t.Fatalf("consumed %d of budget %d (loop costs %d)", u, budget, per)
			}
			// The guest's own traps are not fuel traps.
			if out, _, reason := fuelRun(t, e, r, "run_unreachable", MaxBudget); out.err == "" || reason != StopNone {
				t.Fatalf("run_unreachable: %+v %v", out, reason)
			}
			// A zero budget traps at the first check, at function entry.
			if out, _, reason := fuelRun(t, e, r, "run_collatz", 0); out.err == "" || reason != StopFuel {
				t.Fatalf("zero budget: %+v %v", out, reason)
			}
		})
	}
}

func TestWatchdog(t *testing.T) {
	r := mustInstrument(t, watFixture(t, "loops"), fuelOnly)
	for _, e := range engines {
		t.Run(e.name+"/deadline", func(t *testing.T) {
			inst := instantiate(t, e, r.Wasm)
			m, err := NewMeter(inst.mod, r)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			deadline, _ := ctx.Deadline()
			stop := m.Start(ctx, MaxBudget)
			out := callExport(ctx, inst.mod, "spin")
			late := time.Since(deadline)
			used, reason := stop()
			if reason != StopDeadline || out.err == "" {
				t.Fatalf("got %+v %v, want a deadline trap", out, reason)
			}
			if used <= 0 || used >= MaxBudget {
				t.Fatalf("consumed %d", used)
			}
			t.Logf("stopped %v after the deadline (%d fuel used)", late, used)
			// The same instance works again after a new Start.
			stop = m.Start(context.Background(), MaxBudget)
			if out := callExport(context.Background(), inst.mod, "run_brtable"); out.err != "" {
				t.Fatalf("after interrupt: %v", out.err)
			}
			if _, reason := stop(); reason != StopNone {
				t.Fatalf("after interrupt: %v", reason)
			}
		})
		t.Run(e.name+"/cancel", func(t *testing.T) {
			inst := instantiate(t, e, r.Wasm)
			m, _ := NewMeter(inst.mod, r)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			stop := m.Start(ctx, MaxBudget)
			out := callExport(ctx, inst.mod, "spin")
			if _, reason := stop(); reason != StopCanceled || out.err == "" {
				t.Fatalf("got %+v %v, want a cancel trap", out, reason)
			}
		})
		t.Run(e.name+"/disarmed", func(t *testing.T) {
			// A context that ends after stop must not touch the fuel. Whether
			// a watchdog left armed would run before the check below is up to
			// the scheduler, so the test checks the cause instead: stop
			// disarmed the watchdog before it could start (context.AfterFunc's
			// stop returned true), so it never runs.
			inst := instantiate(t, e, r.Wasm)
			m, _ := NewMeter(inst.mod, r)
			var disarms []bool
			m.afterFunc = func(ctx context.Context, f func()) func() bool {
				disarm := context.AfterFunc(ctx, f)
				return func() bool {
					ok := disarm()
					disarms = append(disarms, ok)
					return ok
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			stop := m.Start(ctx, 1000)
			callExport(ctx, inst.mod, "run_trap")
			used, reason := stop()
			cancel()
			if !slices.Equal(disarms, []bool{true}) {
				t.Fatalf("stop disarmed the watchdog %v, want once, before it started", disarms)
			}
			if reason != StopNone || m.Remaining() != 1000-used {
				t.Fatalf("reason %v, remaining %d after used %d", reason, m.Remaining(), used)
			}
		})
	}
}

// TestWatchdogDuringGC: compiled guest code cannot be preempted, so a
// stop-the-world waits for the spinning guest; the guest must pass through
// Go often enough (at each fuel refill) for GC, and then the watchdog, to
// run. Without that this test deadlocks.
func TestWatchdogDuringGC(t *testing.T) {
	r := mustInstrument(t, watFixture(t, "loops"), fuelOnly) // no memory of its own
	inst := instantiate(t, engines[0], r.Wasm)
	m, _ := NewMeter(inst.mod, r)
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		gcs := make(chan struct{})
		go func() {
			defer close(gcs)
			for j := 0; j < 5; j++ {
				runtime.GC()
			}
		}()
		stop := m.Start(ctx, MaxBudget)
		out := callExport(ctx, inst.mod, "spin")
		_, reason := stop()
		cancel()
		<-gcs
		if reason != StopDeadline || out.err == "" {
			t.Fatalf("got %+v %v", out, reason)
		}
	}
}

func TestHostCharge(t *testing.T) {
	wasm := watFixture(t, "host")
	r := mustInstrument(t, wasm, fuelOnly)
	ctx := context.Background()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			rt := wazero.NewRuntimeWithConfig(ctx, e.cfg())
			defer rt.Close(ctx)
			var m *Meter
			calls := 0
			_, err := rt.NewHostModuleBuilder("env").NewFunctionBuilder().
				WithFunc(func(context.Context, uint32) { calls++; m.Charge(1_000_000) }).Export("work").
				Instantiate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			mod, err := rt.Instantiate(ctx, r.Wasm)
			if err != nil {
				t.Fatal(err)
			}
			if m, err = NewMeter(mod, r); err != nil {
				t.Fatal(err)
			}
			stop := m.Start(ctx, 4_500_000)
			_, err = mod.ExportedFunction("run_host").Call(ctx, 100)
			used, reason := stop()
			// Calls 1-5 run; the loop header after the 5th finds the fuel
			// negative.
			if err == nil || reason != StopFuel || calls != 5 || used < 5_000_000 {
				t.Fatalf("err %v, reason %v, %d calls, %d used", err, reason, calls, used)
			}
		})
	}
}

func TestStackOverflow(t *testing.T) {
	r := mustInstrument(t, watFixture(t, "recursion"), Config{Fuel: true, MaxCallDepth: 1000})
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			inst := instantiate(t, e, r.Wasm)
			m, _ := NewMeter(inst.mod, r)
			ctx := context.Background()
			stop := m.Start(ctx, MaxBudget)
			out := callExport(ctx, inst.mod, "bomb")
			_, reason := stop()
			if out.err == "" || reason != StopStackOverflow {
				t.Fatalf("got %+v %v, want a stack overflow", out, reason)
			}
			if d := inst.mod.ExportedGlobal(r.DepthGlobal).Get(); d != 1001 {
				t.Fatalf("depth after the trap: %d, want 1001", d)
			}
			// Start resets the depth: a 500-deep recursion works after.
			stop = m.Start(ctx, MaxBudget)
			out = callExport(ctx, inst.mod, "run_deep")
			if _, reason := stop(); out.err != "" || out.results[0] != 500 || reason != StopNone {
				t.Fatalf("after overflow: %+v %v", out, reason)
			}
		})
	}
	// The bound counts frames weighted by locals: a bound of 400 stops
	// run_deep's 500 frames.
	r = mustInstrument(t, watFixture(t, "recursion"), Config{Fuel: true, MaxCallDepth: 400})
	if _, _, reason := fuelRun(t, engines[0], r, "run_deep", MaxBudget); reason != StopStackOverflow {
		t.Fatalf("depth 500 under a bound of 400: %v", reason)
	}
}

func TestDepthWeight(t *testing.T) {
	for n, want := range map[uint64]int32{0: 1, 15: 1, 16: 2, 40: 3, 50000: 3126} {
		if got := frameWeight(n); got != want {
			t.Errorf("frameWeight(%d) = %d, want %d", n, got, want)
		}
	}
}

// rawModule builds a module from raw sections: type () -> (), one function
// with the given body (locals included), exported as "f", plus extra
// sections appended verbatim.
func rawModule(body []byte, extra ...byte) []byte {
	m := []byte{0, 'a', 's', 'm', 1, 0, 0, 0,
		1, 4, 1, 0x60, 0, 0, // type
		3, 2, 1, 0, // function
		7, 5, 1, 1, 'f', 0, 0, // export
	}
	code := append([]byte{1}, wb.AppendU32(nil, uint32(len(body)))...)
	code = append(code, body...)
	m = append(m, 10)
	m = wb.AppendU32(m, uint32(len(code)))
	return append(append(m, code...), extra...)
}

func TestRejections(t *testing.T) {
	// The function body (locals count first) starts at offset 0x1d in rawModule().
	for _, tc := range []struct {
		name string
		wasm []byte
		cfg  Config
		want string
	}{
		{"unknown opcode", rawModule([]byte{0, 0x01, 0x27, 0x0b}), fuelOnly, "offset 0x1f: unknown opcode 0x27"},
		{"atomics", rawModule([]byte{0, 0x01, 0xfe, 0x03, 0x00, 0x0b}), fuelOnly, "offset 0x1f: unsupported opcode 0xfe (threads/atomics)"},
		{"exceptions", rawModule([]byte{0, 0x06, 0x40, 0x0b, 0x0b}), fuelOnly, "offset 0x1e: unsupported opcode 0x6 (exception handling)"},
		{"relaxed simd", rawModule([]byte{0, 0xfd, 0x80, 0x02, 0x0b}), fuelOnly, "offset 0x1e: unsupported opcode 0xfd 0x100"},
		{"truncated immediate", rawModule([]byte{0, 0x41}), fuelOnly, "offset 0x1e: i32.const: malformed or truncated immediate"},
		{"no end", rawModule([]byte{0, 0x01}), fuelOnly, "offset 0x1f: function body ends without end"},
		{"trailing code", rawModule([]byte{0, 0x0b, 0x01}), fuelOnly, "offset 0x1f: bytes after the end"},
		{"global out of range", rawModule([]byte{0, 0x23, 0x00, 0x1a, 0x0b}), fuelOnly, "offset 0x1e: global.get: global 0 out of range (0)"},
		{"function out of range", rawModule([]byte{0, 0x10, 0x01, 0x0b}), fuelOnly, "function 1 out of range"},
		{"local out of range", rawModule([]byte{1, 1, 0x7f, 0x20, 0x01, 0x1a, 0x0b}), fuelOnly, "local 1 out of range (1)"},
		{"label out of range", rawModule([]byte{0, 0x0c, 0x01, 0x0b}), Config{MaxCallDepth: 10}, "label 1 out of range"},
		{"br_table label out of range", rawModule([]byte{0, 0x41, 0, 0x0e, 1, 0, 1, 0x0b}), Config{MaxCallDepth: 10}, "label 1 out of range"},
		{"memory.size without memory", rawModule([]byte{0, 0x3f, 0x00, 0x1a, 0x0b}), Config{VirtualMemory: true}, "memory.size without a memory"},
		{"truncated module", rawModule([]byte{0, 0x0b})[:16], fuelOnly, "offset 0xe: section 3: size 2 exceeds module end"},
		{"bad magic", []byte("\x00wasm\x01\x00\x00"), fuelOnly, "offset 0x0: not a WebAssembly module"},
		{"name clash", append(rawModule([]byte{0, 0x0b})[:18:18], 7, 15, 1, 11, 'w', 'a', 'r', 'd', 'e', 'n', ':', 'f', 'u', 'e', 'l', 0, 0, 10, 4, 1, 2, 0, 0x0b), fuelOnly, `module already exports "warden:fuel"`},
		{"name clash without fuel", append(rawModule([]byte{0, 0x0b})[:18:18], 7, 11, 1, 7, 'w', 'a', 'r', 'd', 'e', 'n', ':', 0, 0, 10, 4, 1, 2, 0, 0x0b), Config{}, `module already exports "warden:"`},
		{"imported memory", append([]byte{0, 'a', 's', 'm', 1, 0, 0, 0}, 2, 8, 1, 1, 'm', 1, 'm', 2, 0, 1), Config{VirtualMemory: true}, "imports its memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Instrument(tc.wasm, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			var we *wb.Error
			if strings.Contains(tc.want, "offset") && !errors.As(err, &we) {
				t.Fatalf("%v is not a *wasmbin.Error", err)
			}
		})
	}
	// The rawModule() builder itself is fine.
	if _, err := Instrument(rawModule([]byte{0, 0x0b}), Config{Fuel: true, MaxCallDepth: 5}); err != nil {
		t.Fatal(err)
	}
}

// TestPreservesSections: sections the pass does not change come out byte
// for byte, in the same order, including DataCount, data and custom ones.
func TestPreservesSections(t *testing.T) {
	for _, fx := range []string{"bulk", "multivalue"} {
		wasm := watFixture(t, fx)
		// Append a custom section at the end and check it survives too.
		wasm = append(append([]byte{}, wasm...), 0, 6, 4, 'x', '-', 'y', 'z', 0xff)
		r := mustInstrument(t, wasm, Config{Fuel: true, MaxCallDepth: 100, VirtualMemory: true, ExportGlobals: true})
		before, _ := wb.Parse(wasm)
		after, err := wb.Parse(r.Wasm)
		if err != nil {
			t.Fatal(err)
		}
		changed := map[byte]bool{wb.SectionType: true, wb.SectionFunction: true, wb.SectionGlobal: true, wb.SectionExport: true, wb.SectionCode: true}
		if before.Section(wb.SectionMemory) == nil {
			// A module without memory gets a private one of zero pages.
			changed[wb.SectionMemory] = true
			if s := after.Section(wb.SectionMemory); s == nil || !bytes.Equal(s.Payload, []byte{1, 1, 0, 0}) {
				t.Errorf("%s: added memory section %v", fx, s)
			}
		}
		var ids []byte
		for _, s := range after.Sections {
			if !changed[s.ID] {
				ids = append(ids, s.ID)
			}
		}
		var want []byte
		for _, s := range before.Sections {
			if !changed[s.ID] {
				want = append(want, s.ID)
				if got := after.Section(s.ID); s.ID != wb.SectionCustom && !bytes.Equal(got.Payload, s.Payload) {
					t.Errorf("%s: section %d changed", fx, s.ID)
				}
			}
		}
		if !bytes.Equal(ids, want) {
			t.Errorf("%s: unchanged sections %v, want %v", fx, ids, want)
		}
		if !bytes.HasSuffix(r.Wasm, []byte{0, 6, 4, 'x', '-', 'y', 'z', 0xff}) {
			t.Errorf("%s: trailing custom section lost", fx)
		}
		if fx == "bulk" && before.Section(wb.SectionDataCount) == nil {
			t.Fatal("bulk fixture has no DataCount section")
		}
	}
	// Without anything to do the input comes back as is.
	wasm := watFixture(t, "loops")
	if r := mustInstrument(t, wasm, Config{ExportGlobals: true}); &r.Wasm[0] != &wasm[0] || len(r.Globals) != 0 {
		t.Fatal("no-op instrumentation copied the module")
	}
}

func TestFlags(t *testing.T) {
	for fx, want := range map[string][2]bool{"bulk": {true, true}, "loops": {false, false}, "recursion": {false, false}, "multivalue": {true, false}} {
		r := mustInstrument(t, watFixture(t, fx), Config{})
		if got := [2]bool{r.MutatesTables, r.DropsData}; got != want {
			t.Errorf("%s: MutatesTables, DropsData = %v, want %v", fx, got, want)
		}
	}
}

// TestExportGlobals: the module's mutable globals are exported in index
// order, and restoring them restores behaviour.
func TestExportGlobals(t *testing.T) {
	r := mustInstrument(t, watFixture(t, "multivalue"), Config{ExportGlobals: true, Fuel: true})
	if want := []string{"warden:global:0", "warden:global:1"}; strings.Join(r.Globals, ",") != strings.Join(want, ",") {
		t.Fatalf("Globals = %v, want %v", r.Globals, want)
	}
	for _, e := range engines {
		inst := instantiate(t, e, r.Wasm)
		g := inst.mod.ExportedGlobal(r.Globals[0]).(api.MutableGlobal)
		saved := g.Get()
		first := callExport(context.Background(), inst.mod, "run_multi")
		second := callExport(context.Background(), inst.mod, "run_multi")
		if first.equal(second) {
			t.Fatalf("%s: run_multi does not change its global", e.name)
		}
		g.Set(saved)
		if again := callExport(context.Background(), inst.mod, "run_multi"); !again.equal(first) {
			t.Fatalf("%s: after restoring globals got %+v, want %+v", e.name, again, first)
		}
	}
}

// TestVirtualMemory: after the real memory grew, resetting the page
// count (and zeroing the tail, as the runtime does) makes the instance
// behave like a fresh one, without growing the real memory again.
func TestVirtualMemory(t *testing.T) {
	r := mustInstrument(t, watFixture(t, "bulk"), Config{VirtualMemory: true, Fuel: true})
	if r.PagesGlobal != PagesExport {
		t.Fatalf("PagesGlobal %q", r.PagesGlobal)
	}
	for _, e := range engines {
		inst := instantiate(t, e, r.Wasm)
		pages := inst.mod.ExportedGlobal(r.PagesGlobal).(api.MutableGlobal)
		mem := inst.mod.ExportedMemory("memory")
		if mem == nil {
			// bulk.wat does not export its memory: read it through the
			// module's only memory.
			mem = inst.mod.Memory()
		}
		if pages.Get() != 1 {
			t.Fatalf("initial pages %d, want 1", pages.Get())
		}
		snap := append([]byte{}, mustRead(t, mem, 0, 65536)...)
		first := callExport(context.Background(), inst.mod, "run_grow")
		real := mem.Size()
		for i := 0; i < 3; i++ {
			// restore: memory back, tail zeroed, page count reset
			mem.Write(0, snap)
			mem.Write(65536, make([]byte, real-65536))
			pages.Set(1)
			if got := callExport(context.Background(), inst.mod, "run_grow"); !got.equal(first) {
				t.Fatalf("%s: after restore %+v, want %+v", e.name, got, first)
			}
			if mem.Size() != real {
				t.Fatalf("%s: real memory grew from %d to %d", e.name, real, mem.Size())
			}
		}
	}
}

func mustRead(t *testing.T, mem api.Memory, off, n uint32) []byte {
	b, ok := mem.Read(off, n)
	if !ok {
		t.Fatalf("read %d+%d out of range", off, n)
	}
	return b
}

// TestStructureOnly: BenchmarkInterleaved's "rewrite" mode keeps the fuel
// pass's structure (the fuel globals are there for a Meter) but charges
// nothing, and computes what the module computes.
func TestStructureOnly(t *testing.T) {
	wasm := watFixture(t, "loops")
	r := mustInstrument(t, wasm, Config{Fuel: true, structureOnly: true})
	if r.FuelGlobal == "" || len(r.Wasm) <= len(wasm) {
		t.Fatalf("fuel global %q, %d bytes from %d: want the structure", r.FuelGlobal, len(r.Wasm), len(wasm))
	}
	plain := &Result{Wasm: wasm}
	for _, e := range engines {
		want, _, _ := fuelRun(t, e, plain, "count", MaxBudget, 1000)
		got, used, reason := fuelRun(t, e, r, "count", MaxBudget, 1000)
		if !got.equal(want) || used != 0 || reason != StopNone {
			t.Errorf("%s: count(1000) = %+v, used %d, %v; want %+v, no fuel used", e.name, got, used, reason, want)
		}
	}
}
