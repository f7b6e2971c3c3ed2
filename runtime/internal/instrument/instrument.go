package instrument

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
)

// Export names of what the pass adds.
const (
	exportPrefix       = "warden:"
	FuelExport         = exportPrefix + "fuel"
	ReserveExport      = exportPrefix + "fuel-reserve"
	DepthExport        = exportPrefix + "depth"
	PagesExport        = exportPrefix + "pages"
	GlobalExportPrefix = exportPrefix + "global:"
	StartExport        = exportPrefix + "start"
)

// Costs of the dynamic part of variable-cost instructions.
const (
	// BulkBytesPerFuel: memory.copy, memory.fill and memory.init charge one
	// unit per this many bytes (native memmove moves ~16 bytes in the time
	// the compiler runs one simple instruction).
	BulkBytesPerFuel = 16
	bulkShift        = 4
	// PageFuel is charged per 64 KiB page of a successful memory.grow
	// (the engine zeroes it: 64 KiB / BulkBytesPerFuel).
	PageFuel = 65536 / BulkBytesPerFuel
	// Table bulk instructions and table.grow charge one unit per element.

	// FuelSlice is the most fuel the guest takes from the reserve at a
	// time: about a millisecond of compiled code between two passes
	// through Go, where the Go runtime can preempt the goroutine (see
	// RATIONALE.md, "Fuel and instrumentation").
	FuelSlice = 1 << 20

	// DefaultInitialFuel is the fuel global's value at instantiation, when
	// Config.InitialFuel is 0: what a start function may use before the
	// host first calls Meter.Start.
	DefaultInitialFuel = 1 << 30
	// DefaultMaxCallDepth is a depth bound that ordinary Go guests stay far
	// below; see RATIONALE.md ("Fuel and instrumentation").
	DefaultMaxCallDepth = 20000
)

// Limits bound a module's structure. Compiling a function costs time that
// grows faster than its size along some of these dimensions (wazero's
// compiler is quadratic in control nesting), so bounding each keeps
// compile time roughly linear in the module's size; see RATIONALE.md
// ("Runtime hardening"). A module past one is refused, naming the function,
// the limit and the value.
type Limits struct {
	// MaxFunctions bounds imported plus defined functions.
	MaxFunctions uint32
	// MaxBodyBytes bounds one function body's encoded size.
	MaxBodyBytes uint32
	// MaxLocals bounds one function's params plus locals.
	MaxLocals uint32
	// MaxNesting bounds open blocks, loops and ifs inside one function.
	MaxNesting uint32
	// MaxLoopNesting bounds open loops inside one function: with the fuel
	// check at every loop header, compile time grows with the cube of it.
	MaxLoopNesting uint32
	// MaxBrTableTargets bounds the labels of one br_table, default included.
	MaxBrTableTargets uint32
}

// DefaultLimits are V8's and wasmtime's agreed implementation limits
// (functions, body size, locals, br_table size), and a nesting bound of
// our own: no engine bounds nesting, but wazero compiles a function in
// time quadratic in it (10,000 levels: 0.4 s; 150,000: minutes), while
// compilers emit far less (the deepest function of a Go guest nests 549,
// of the Haskell Extism sample 1,706). Loops get a lower bound of their
// own: instrumented, 1,000 nested loops compile in 0.17 s, 4,000 in 4 s,
// 10,000 in 80 s (cubic), and real code nests loops a few levels deep.
var DefaultLimits = Limits{
	MaxFunctions:      1_000_000,
	MaxBodyBytes:      7_654_321,
	MaxLocals:         50_000,
	MaxNesting:        10_000,
	MaxLoopNesting:    1_000,
	MaxBrTableTargets: 65_520,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxFunctions == 0 {
		l.MaxFunctions = d.MaxFunctions
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = d.MaxBodyBytes
	}
	if l.MaxLocals == 0 || l.MaxLocals > d.MaxLocals {
		// wazero's own bound; it also keeps the pass's scratch locals
		// addressable.
		l.MaxLocals = d.MaxLocals
	}
	if l.MaxNesting == 0 {
		l.MaxNesting = d.MaxNesting
	}
	if l.MaxLoopNesting == 0 {
		l.MaxLoopNesting = d.MaxLoopNesting
	}
	if l.MaxBrTableTargets == 0 {
		l.MaxBrTableTargets = d.MaxBrTableTargets
	}
	return l
}

// Config selects what Instrument adds.
type Config struct {
	// Fuel meters execution against the "warden:fuel" global.
	Fuel bool
	// InitialFuel is the fuel global's value at instantiation (0:
	// DefaultInitialFuel). Only a start function runs before Meter.Start.
	InitialFuel int64
	// MaxCallDepth bounds nested guest calls (0: no bound). A frame counts
	// 1 plus 1 per 16 params and locals, so the bound also limits stack
	// bytes: a guest traps when the sum over its live frames exceeds it.
	MaxCallDepth uint32
	// ExportGlobals exports every mutable global the module defines.
	ExportGlobals bool
	// VirtualMemory makes memory.size and memory.grow use the
	// "warden:pages" global (modules with a memory of their own only).
	VirtualMemory bool
	// DeferStart removes the start section and exports its function as
	// StartExport, so that the host runs it after instantiation, under a
	// Meter, instead of the engine running it unmetered inside
	// instantiation.
	DeferStart bool
	// Limits bound the module's structure (zero: DefaultLimits).
	Limits Limits

	// structureOnly (tests only) makes every change the pass makes to the
	// module's structure (wrapper block, scratch locals, appended globals,
	// functions and exports, memory.grow through its function) but inserts
	// no fuel code: BenchmarkInterleaved's "rewrite" mode, which tells the
	// cost of the structure from that of the inserted instructions.
	structureOnly bool
	// ablate (tests only) leaves out parts of the fuel code, breaking the
	// accounting, to measure what each part costs (BenchmarkAblate).
	ablate ablation
}

// ablation is a set of parts of the fuel code to leave out.
type ablation uint8

const (
	ablateSpills      ablation = 1 << iota // stores and loads around calls and returns
	ablateChecks                           // the fuel tests at loop headers and entries
	ablateDirectJumps                      // every dispatch jump goes through its loop
	countCharges                           // every charge costs 1: fuel counts the charges run
	countChecks                            // checks cost 1, nothing else: fuel counts the checks run
)

// Result is an instrumented module and what the host needs to drive it.
type Result struct {
	Wasm []byte
	// FuelGlobal is the export name of the mutable i64 fuel global ("" if
	// !Fuel): the fuel of the current slice, which the guest decrements.
	// ReserveGlobal holds the rest of the budget. When a check finds the
	// fuel negative the guest moves up to FuelSlice from the reserve,
	// passing through the engine's Go code on the way, and traps if fuel
	// plus reserve is negative. Meter drives both; fuel left is their sum.
	FuelGlobal    string
	ReserveGlobal string
	// DepthGlobal is the export name of the mutable i32 call depth global
	// ("" if MaxCallDepth is 0). After a depth trap it is MaxCallDepth+1.
	DepthGlobal  string
	MaxCallDepth uint32
	// PagesGlobal is the export name of the mutable i32 virtual page count
	// ("" if !VirtualMemory or the module has no memory). Its initial value
	// is the memory's initial page count.
	PagesGlobal string
	// Globals are the export names of every mutable global the module
	// defines, in index order (nil if !ExportGlobals).
	Globals []string
	// MutatesTables: the code contains table.set, table.grow, table.fill,
	// table.copy, table.init or elem.drop, so tables are instance state.
	MutatesTables bool
	// DropsData: the code contains data.drop, so which data segments are
	// still available is instance state that memory snapshots miss.
	DropsData bool
	// DirectJumps is how many branches to a dispatch loop the pass sent
	// straight to the block end the loop would dispatch them to (see
	// RATIONALE.md, "Dispatch jumps go straight to their target").
	DirectJumps int
	// Deepest is the deepest control nesting of any function, for
	// measurements against Limits.MaxNesting.
	Deepest uint32
	// StartExport is the export name of the module's start function when
	// Config.DeferStart removed its start section ("" if it had none).
	StartExport string
}

// Instrument rewrites wasm according to cfg. The input is not modified.
func Instrument(wasm []byte, cfg Config) (*Result, error) {
	mod, err := wb.Parse(wasm)
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	return InstrumentModule(mod, cfg)
}

// InstrumentModule is Instrument for a module already parsed, so that a
// loader that parsed it to tell its kind and check its imports does not
// parse it again. It consumes mod: the pass rewrites its sections in
// place. The bytes mod was parsed from are not modified.
func InstrumentModule(mod *wb.Module, cfg Config) (*Result, error) {
	res, err := instrument(mod, cfg)
	if err != nil {
		return nil, fmt.Errorf("instrument: %w", err)
	}
	return res, nil
}

// module is what the pass reads from the original module.
type module struct {
	*wb.Module
	types         []wb.FuncType
	funcTypes     []uint32 // type index of every function, imports first
	importedFuncs uint32
	globals       []wb.GlobalType // every global, imports first
	importedGlobs uint32
	memory        *wb.Limits // nil: no memory
	memImported   bool
	exports       []wb.Export
	codes         []wb.Code
}

func decode(mod *wb.Module, limits Limits) (*module, error) {
	var err error
	m := &module{Module: mod}
	if s := mod.Section(wb.SectionType); s != nil {
		if m.types, err = mod.SectionReader(s).Types(); err != nil {
			return nil, err
		}
	}
	if imps, err := mod.Imports(); err != nil {
		return nil, err
	} else {
		for _, im := range imps {
			switch im.Kind {
			case wb.KindFunc:
				m.funcTypes = append(m.funcTypes, im.TypeIndex)
				m.importedFuncs++
			case wb.KindGlobal:
				m.globals = append(m.globals, im.Global)
				m.importedGlobs++
			case wb.KindMemory:
				if m.memory != nil {
					return nil, errors.New("multiple memories are not supported")
				}
				l := im.Limits
				m.memory, m.memImported = &l, true
			}
		}
	}
	if s := mod.Section(wb.SectionFunction); s != nil {
		fs, err := mod.SectionReader(s).Functions()
		if err != nil {
			return nil, err
		}
		m.funcTypes = append(m.funcTypes, fs...)
	}
	if n := len(m.funcTypes); uint64(n) > uint64(limits.MaxFunctions) {
		return nil, fmt.Errorf("%d functions, over the limit of %d", n, limits.MaxFunctions)
	}
	for i, t := range m.funcTypes {
		if t >= uint32(len(m.types)) {
			return nil, fmt.Errorf("function %d: type index %d out of range", i, t)
		}
	}
	if s := mod.Section(wb.SectionMemory); s != nil {
		ms, err := mod.SectionReader(s).Memories()
		if err != nil {
			return nil, err
		}
		if len(ms) > 1 || len(ms) == 1 && m.memory != nil {
			return nil, errors.New("multiple memories are not supported")
		}
		if len(ms) == 1 {
			m.memory = &ms[0]
		}
	}
	if m.memory != nil && (m.memory.Min > 65536 || m.memory.HasMax && m.memory.Max > 65536) {
		return nil, errors.New("memory limits exceed 65536 pages")
	}
	if s := mod.Section(wb.SectionGlobal); s != nil {
		gs, err := mod.SectionReader(s).Globals()
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			m.globals = append(m.globals, g.Type)
		}
	}
	if s := mod.Section(wb.SectionExport); s != nil {
		if m.exports, err = mod.SectionReader(s).Exports(); err != nil {
			return nil, err
		}
	}
	if s := mod.Section(wb.SectionCode); s != nil {
		if m.codes, err = mod.SectionReader(s).Codes(); err != nil {
			return nil, err
		}
	}
	if defined := len(m.funcTypes) - int(m.importedFuncs); len(m.codes) != defined {
		return nil, fmt.Errorf("%d function bodies for %d functions", len(m.codes), defined)
	}
	for _, e := range m.exports {
		if strings.HasPrefix(e.Name, exportPrefix) {
			return nil, fmt.Errorf("module already exports %q: names starting with %q are reserved", e.Name, exportPrefix)
		}
		var n int
		switch e.Kind {
		case wb.KindFunc:
			n = len(m.funcTypes)
		case wb.KindGlobal:
			n = len(m.globals)
		default:
			continue // tables are not counted; memory index is checked by the engine
		}
		if uint64(e.Index) >= uint64(n) {
			return nil, fmt.Errorf("export %q: index %d out of range", e.Name, e.Index)
		}
	}
	return m, nil
}

func instrument(mod *wb.Module, cfg Config) (*Result, error) {
	cfg.Limits = cfg.Limits.withDefaults()
	m, err := decode(mod, cfg.Limits)
	if err != nil {
		return nil, err
	}
	if cfg.VirtualMemory && m.memImported {
		return nil, errors.New("VirtualMemory needs a module-defined memory, this module imports its memory")
	}
	res := &Result{MaxCallDepth: cfg.MaxCallDepth}
	p := &pass{m: m, cfg: cfg, res: res, nTypes: uint32(len(m.types))}
	var (
		globals []byte
		nGlob   uint32
		exports []byte
		nExp    uint32
	)
	addGlobal := func(t wb.ValType, init []byte, name string) uint32 {
		idx := uint32(len(m.globals)) + nGlob
		globals = wb.AppendGlobal(globals, wb.Global{Type: wb.GlobalType{Type: t, Mutable: true}, Init: init})
		nGlob++
		exports = wb.AppendExport(exports, wb.Export{Name: name, Kind: wb.KindGlobal, Index: idx})
		nExp++
		return idx
	}
	if cfg.Fuel {
		fuel := cfg.InitialFuel
		if fuel == 0 {
			fuel = DefaultInitialFuel
		}
		p.fuel = addGlobal(wb.I64, append(wb.AppendS64([]byte{byte(wb.OpI64Const)}, fuel), byte(wb.OpEnd)), FuelExport)
		p.reserve = addGlobal(wb.I64, []byte{byte(wb.OpI64Const), 0, byte(wb.OpEnd)}, ReserveExport)
		res.FuelGlobal, res.ReserveGlobal = FuelExport, ReserveExport
	}
	if cfg.MaxCallDepth > 0 {
		p.depth = addGlobal(wb.I32, []byte{byte(wb.OpI32Const), 0, byte(wb.OpEnd)}, DepthExport)
		res.DepthGlobal = DepthExport
	}
	if cfg.VirtualMemory && m.memory != nil {
		init := append(wb.AppendS32([]byte{byte(wb.OpI32Const)}, int32(m.memory.Min)), byte(wb.OpEnd))
		p.pages = addGlobal(wb.I32, init, PagesExport)
		p.virtual = true
		res.PagesGlobal = PagesExport
	}
	if s := m.Section(wb.SectionStart); s != nil && cfg.DeferStart {
		r := m.SectionReader(s)
		fn, err := r.U32()
		if err != nil {
			return nil, fmt.Errorf("start section: %w", err)
		}
		if err := r.End("start section"); err != nil {
			return nil, err
		}
		if fn >= uint32(len(m.funcTypes)) {
			return nil, fmt.Errorf("start function %d out of range (%d)", fn, len(m.funcTypes))
		}
		if t := m.types[m.funcTypes[fn]]; len(t.Params) > 0 || len(t.Results) > 0 {
			return nil, fmt.Errorf("start function %d must take and return nothing", fn)
		}
		exports = wb.AppendExport(exports, wb.Export{Name: StartExport, Kind: wb.KindFunc, Index: fn})
		nExp++
		res.StartExport = StartExport
		m.RemoveSection(wb.SectionStart)
	}
	if cfg.ExportGlobals {
		res.Globals = []string{}
		for i := m.importedGlobs; i < uint32(len(m.globals)); i++ {
			if m.globals[i].Mutable {
				name := GlobalExportPrefix + strconv.FormatUint(uint64(i), 10)
				exports = wb.AppendExport(exports, wb.Export{Name: name, Kind: wb.KindGlobal, Index: i})
				nExp++
				res.Globals = append(res.Globals, name)
			}
		}
	}
	// memory.grow becomes a call to an appended function when it must
	// work on the virtual size or charge fuel for the pages it added.
	var funcs, bodies []byte
	var nFuncs uint32
	addFunc := func(t wb.FuncType, body []byte) uint32 {
		idx := uint32(len(m.funcTypes)) + nFuncs
		funcs = wb.AppendU32(funcs, p.typeIndex(t))
		bodies = wb.AppendU32(bodies, uint32(len(body)))
		bodies = append(bodies, body...)
		nFuncs++
		return idx
	}
	if m.memory != nil && (p.virtual || cfg.Fuel) {
		p.rewriteGrow = true
		p.grow = addFunc(wb.FuncType{Params: []wb.ValType{wb.I32}, Results: []wb.ValType{wb.I32}}, p.growBody())
	}
	if cfg.Fuel {
		// The refill function needs a memory.grow to pass through Go; a
		// module without memory gets a private one of zero pages.
		p.ownMemory = m.memory == nil
		p.refill = addFunc(wb.FuncType{Params: []wb.ValType{wb.I64}, Results: []wb.ValType{wb.I64}}, p.refillBody())
	}

	code, err := p.rewriteCode()
	if err != nil {
		return nil, err
	}
	if data := mergeData(m, res.DropsData); data != nil {
		mod.SetSection(wb.SectionData, data)
	}

	// Nothing to add and no body changed: hand back the input unchanged
	// (re-encoded only if the caller replaced a section before the pass).
	if nGlob == 0 && nExp == 0 && nFuncs == 0 && code == nil {
		res.Wasm = mod.Bytes
		for _, s := range mod.Sections {
			if s.Offset < 0 {
				res.Wasm = mod.Encode()
				break
			}
		}
		return res, nil
	}
	if len(p.newTypes) > 0 {
		var extra []byte
		for _, t := range p.newTypes {
			extra = wb.AppendFuncType(extra, t)
		}
		mod.SetSection(wb.SectionType, wb.AppendVector(payload(mod, wb.SectionType), uint32(len(m.types)), uint32(len(p.newTypes)), extra))
	}
	defined := uint32(len(m.funcTypes)) - m.importedFuncs
	if nFuncs > 0 {
		mod.SetSection(wb.SectionFunction, wb.AppendVector(payload(mod, wb.SectionFunction), defined, nFuncs, funcs))
	}
	if p.ownMemory {
		mod.SetSection(wb.SectionMemory, []byte{1, 1, 0, 0}) // one memory, min 0, max 0
	}
	if nGlob > 0 {
		mod.SetSection(wb.SectionGlobal, wb.AppendVector(payload(mod, wb.SectionGlobal), uint32(len(m.globals))-m.importedGlobs, nGlob, globals))
	}
	if nExp > 0 {
		mod.SetSection(wb.SectionExport, wb.AppendVector(payload(mod, wb.SectionExport), uint32(len(m.exports)), nExp, exports))
	}
	if code != nil || nFuncs > 0 {
		if code == nil {
			code = payload(mod, wb.SectionCode)
		}
		mod.SetSection(wb.SectionCode, wb.AppendVector(code, defined, nFuncs, bodies))
	}
	res.Wasm = mod.Encode()
	return res, nil
}

func payload(m *wb.Module, id byte) []byte {
	if s := m.Section(id); s != nil {
		return s.Payload
	}
	return nil
}

// typeIndex returns the index of a type equal to t, appending it if the
// module has none.
func (p *pass) typeIndex(t wb.FuncType) uint32 {
	for i, u := range p.m.types {
		if u.Equal(t) {
			return uint32(i)
		}
	}
	for i, u := range p.newTypes {
		if u.Equal(t) {
			return uint32(len(p.m.types) + i)
		}
	}
	p.newTypes = append(p.newTypes, t)
	return uint32(len(p.m.types) + len(p.newTypes) - 1)
}
