package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/runtime/internal/trap"
	"github.com/warden-run/warden/tool"
)

// ABIVersion is the tool ABI this runtime speaks (docs/abi.md).
const ABIVersion = 1

// Export names of the tool ABI.
const (
	exportMemory     = "memory"
	exportInitialize = "_initialize"
	exportStart      = "_start"
	exportABIVersion = "warden_abi_version"
	exportAlloc      = "warden_alloc"
	exportDescribe   = "warden_describe"
	exportCall       = "warden_call"
)

type funcSig struct{ params, results []api.ValueType }

func (s funcSig) String() string {
	names := func(ts []api.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = api.ValueTypeName(t)
		}
		return strings.Join(parts, ", ")
	}
	return fmt.Sprintf("(%s) -> (%s)", names(s.params), names(s.results))
}

func (s funcSig) matches(def api.FunctionDefinition) bool {
	return slices.Equal(s.params, def.ParamTypes()) && slices.Equal(s.results, def.ResultTypes())
}

var requiredExports = map[string]funcSig{
	exportABIVersion: {results: []api.ValueType{api.ValueTypeI32}},
	exportAlloc:      {params: []api.ValueType{api.ValueTypeI32}, results: []api.ValueType{api.ValueTypeI32}},
	exportDescribe:   {results: []api.ValueType{api.ValueTypeI64}},
	exportCall:       {params: []api.ValueType{api.ValueTypeI64}, results: []api.ValueType{api.ValueTypeI64}},
}

// Module is a loaded tool module: compiled, checked, described, and ready to
// call. It is safe for concurrent use.
type Module struct {
	rt       *Runtime
	name     string
	sha256   string
	compiled wazero.CompiledModule
	limits   Limits
	imports  []string
	tools    []*Tool
	rejected []Rejection
	pool     *pool
	// snapshot is the state after _initialize that IsolationCall restores;
	// nil when the module cannot be snapshotted (it is then re-instantiated).
	snapshot *snapshot
	// instrumented tells where the pass put the fuel, depth and snapshot
	// globals.
	instrumented *instrument.Result
	// plugin is set when the module is an Extism plugin (extism.go): its
	// instances are made and called through the Extism SDK, everything else
	// is shared with the native ABI.
	plugin *extismPlugin
	// pinned is set by the Registry (see Registry.Put).
	pinned pinState
}

// Tool is one tool provided by a Module.
type Tool struct {
	Descriptor tool.Descriptor
	schemas    *tool.Schemas
	module     *Module
}

// Module returns the module that provides t.
func (t *Tool) Module() *Module { return t.module }

// Rejection is a tool a module describes but the runtime refused to load.
type Rejection struct {
	Name   string // as the module spelled it; may be invalid
	Reason error
}

// Name is the module's name: its file name without .wasm, or as given to Load.
func (m *Module) Name() string { return m.name }

// SHA256 is the hex digest of the module's bytes as loaded.
func (m *Module) SHA256() string { return m.sha256 }

// Tools lists the module's valid tools in the order it describes them.
func (m *Module) Tools() []*Tool { return m.tools }

// Rejected lists the tools the module describes that failed validation.
func (m *Module) Rejected() []Rejection { return m.rejected }

// Imports lists the module's imports as "module.name", sorted.
func (m *Module) Imports() []string { return m.imports }

// Exports lists the module's exported functions and memories, sorted.
func (m *Module) Exports() []string {
	var names []string
	for name := range m.compiled.ExportedFunctions() {
		if name == instrument.StartExport {
			continue // the module's start function, exported by the pass
		}
		names = append(names, name)
	}
	for name := range m.compiled.ExportedMemories() {
		// The instrumentation pass adds no memories, only "warden:" globals
		// (and warden:start, skipped above), which this list leaves out.
		names = append(names, name+" (memory)")
	}
	slices.Sort(names)
	return names
}

// Limits returns the module's limits, defaults filled in.
func (m *Module) Limits() Limits { return m.limits }

// LoadFile loads the module at path, named after the file.
func (r *Runtime) LoadFile(ctx context.Context, path string, limits Limits) (*Module, error) {
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), ".wasm")
	m, err := r.Load(ctx, name, wasm, limits)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return m, nil
}

// Load compiles, checks and describes a module. Invalid tools inside a valid
// module are listed by Module.Rejected; an error means nothing was loaded.
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte, limits Limits) (*Module, error) {
	if err := limits.Validate(); err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	limits = limits.WithDefaults()
	sum := sha256.Sum256(wasm)
	m := &Module{rt: r, name: name, sha256: hex.EncodeToString(sum[:]), limits: limits}
	if isExtismPlugin(wasm) {
		if err := r.loadExtism(ctx, m, wasm); err != nil {
			return nil, err
		}
		return m, nil
	}

	// Instrument before anything else parses the module: a malformed module
	// is refused by the pass, with the offset, before the compiler sees it.
	instrumented, err := instrument.Instrument(wasm, instrument.Config{
		Fuel:          true,
		MaxCallDepth:  instrument.DefaultMaxCallDepth,
		ExportGlobals: true,
		VirtualMemory: true,
		DeferStart:    true,
	})
	if err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	m.instrumented = instrumented
	compiled, err := r.compile(ctx, instrumented.Wasm, limits.CompileBudget)
	if err != nil {
		return nil, err
	}
	m.compiled = compiled
	if err := m.checkABI(); err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	if err := m.initialize(ctx); err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	return m, nil
}

// checkABI verifies exports, imports and the memory minimum before any guest
// code runs, and reports every problem at once.
func (m *Module) checkABI() error {
	var problems []string
	exports := m.compiled.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(requiredExports)) {
		want := requiredExports[name]
		def, ok := exports[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing export %s %s", name, want))
		case !want.matches(def):
			problems = append(problems, fmt.Sprintf("export %s has signature %s, want %s",
				name, funcSig{def.ParamTypes(), def.ResultTypes()}, want))
		}
	}
	if def, ok := exports[exportInitialize]; ok && (len(def.ParamTypes()) > 0 || len(def.ResultTypes()) > 0) {
		problems = append(problems, "export _initialize must take and return nothing")
	}
	if _, ok := exports[exportStart]; ok {
		problems = append(problems, "exports _start: a tool must be a reactor (build Go with -buildmode=c-shared, C with -mexec-model=reactor)")
	}
	memories := m.compiled.ExportedMemories()
	if mem, ok := memories[exportMemory]; !ok {
		problems = append(problems, "missing export memory")
	} else if minBytes := uint64(mem.Min()) * 65536; minBytes > m.limits.Memory {
		problems = append(problems, fmt.Sprintf("memory minimum %d pages (%d MiB) is above the tool's limit of %d MiB",
			mem.Min(), minBytes>>20, m.limits.Memory>>20))
	}

	host := m.rt.hostImports()
	wasi := m.rt.wz.Module("wasi_snapshot_preview1").ExportedFunctionDefinitions()
	for _, def := range m.compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		m.imports = append(m.imports, mod+"."+name)
		var want *funcSig
		switch mod {
		case hostModuleName:
			if sig, ok := host[name]; ok {
				want = &sig
			}
		case "wasi_snapshot_preview1":
			if provided, ok := wasi[name]; ok {
				want = &funcSig{provided.ParamTypes(), provided.ResultTypes()}
			}
		}
		got := funcSig{def.ParamTypes(), def.ResultTypes()}
		switch {
		case want == nil:
			problems = append(problems, fmt.Sprintf("imports %s.%s, which this host does not provide", mod, name))
		case !want.matches(def):
			problems = append(problems, fmt.Sprintf("imports %s.%s with signature %s, want %s", mod, name, got, *want))
		}
	}
	slices.Sort(m.imports)
	m.imports = slices.Compact(m.imports)
	if len(problems) > 0 {
		return fmt.Errorf("not a warden tool module (ABI v%d, docs/abi.md): %s", ABIVersion, strings.Join(problems, "; "))
	}
	return nil
}

// initialize runs the module's first instance through _initialize and
// describe within the load budget, and builds the pool around it.
func (m *Module) initialize(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, m.limits.LoadBudget)
	defer cancel()
	m.pool = newPool(m)
	in, err := m.newInstance(ctx)
	if err != nil {
		return err
	}
	in.callCtx.Store(&ctx)
	fail := func(stage string, err error, reason instrument.StopReason) error {
		in.close(context.Background())
		return fmt.Errorf("%s: %w", stage, m.loadError(ctx, in, err, reason))
	}
	if reason, err := m.runInit(ctx, in); err != nil {
		return fail(exportInitialize, err, reason)
	}
	stop := in.meter.Start(ctx, m.limits.Fuel)
	results, err := in.mod.ExportedFunction(exportABIVersion).Call(ctx)
	if _, reason := stop(); err != nil {
		return fail(exportABIVersion, err, reason)
	}
	if v := uint32(results[0]); v != ABIVersion {
		in.close(context.Background())
		return fmt.Errorf("module speaks tool ABI v%d; this warden speaks v%d", v, ABIVersion)
	}
	stop = in.meter.Start(ctx, m.limits.Fuel)
	results, err = in.mod.ExportedFunction(exportDescribe).Call(ctx)
	if _, reason := stop(); err != nil {
		return fail(exportDescribe, err, reason)
	}
	raw, terr := readResponse(in.mod, results[0], m.limits.MaxOutput, "descriptor")
	if terr != nil {
		in.close(context.Background())
		return fmt.Errorf("%s: %w", exportDescribe, terr)
	}
	if err := m.describe(raw); err != nil {
		in.close(context.Background())
		return err
	}
	in.stdout.take()
	in.stderr.take()
	// Snapshot the state right after _initialize (describe only reads), so
	// later instances and resets skip the guest's own start-up. Tables and
	// dropped data segments are instance state a memory snapshot misses;
	// modules that change them are re-instantiated instead.
	if !m.instrumented.MutatesTables && !m.instrumented.DropsData {
		globals := append(slices.Clone(m.instrumented.Globals), m.instrumented.PagesGlobal)
		snap, err := takeSnapshot(in, globals, true)
		if err != nil {
			in.close(context.Background())
			return fmt.Errorf("snapshot: %w", err)
		}
		m.snapshot = snap
	}
	in.random.settle()
	m.pool.putLoaded(in)
	return nil
}

// runInit runs the module's start function (which the instrumentation pass
// moved out of instantiation, so that it runs metered) and then
// _initialize, if the module has them, under the load budget's fuel and
// deadline.
func (m *Module) runInit(ctx context.Context, in *instance) (instrument.StopReason, error) {
	for _, name := range []string{m.instrumented.StartExport, exportInitialize} {
		if name == "" {
			continue
		}
		fn := in.mod.ExportedFunction(name)
		if fn == nil {
			continue
		}
		stop := in.meter.Start(ctx, m.limits.Fuel)
		_, err := fn.Call(ctx)
		if _, reason := stop(); err != nil {
			return reason, err
		}
	}
	return instrument.StopNone, nil
}

// compile compiles wasm within budget. wazero's compiler does not watch a
// context, so a compile past the budget is abandoned: it finishes in the
// background (the structural limits of the instrumentation pass keep that
// bounded) and its result is closed, while Load reports the refusal at
// once and other modules load meanwhile. Runtime.Close waits for it.
func (r *Runtime) compile(ctx context.Context, wasm []byte, budget time.Duration) (wazero.CompiledModule, error) {
	type outcome struct {
		compiled wazero.CompiledModule
		err      error
	}
	timer := time.NewTimer(budget)
	defer timer.Stop()
	// Waiting for a slot counts against the budget: a compile that cannot
	// start in time is refused like one that cannot finish in time. A free
	// slot is taken at once, whatever the budget.
	select {
	case r.compileSlots <- struct{}{}:
	default:
		select {
		case r.compileSlots <- struct{}{}:
		case <-timer.C:
			return nil, fmt.Errorf("compile: did not start within the compile budget of %s: %d compiles are running (tools.defaults.compile_budget allows more)",
				budget, cap(r.compileSlots))
		case <-ctx.Done():
			return nil, fmt.Errorf("compile: %w", ctx.Err())
		}
	}
	done := make(chan outcome, 1)
	r.compiles.Add(1)
	go func() {
		defer r.compiles.Done()
		defer func() { <-r.compileSlots }()
		c, err := r.wz.CompileModule(context.WithoutCancel(ctx), wasm)
		done <- outcome{c, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, fmt.Errorf("invalid module: %w", o.err)
		}
		return o.compiled, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	r.compiles.Add(1)
	go func() {
		defer r.compiles.Done()
		if o := <-done; o.err == nil {
			o.compiled.Close(context.Background())
		}
	}()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("compile: %w", ctx.Err())
	}
	return nil, fmt.Errorf("compile: did not finish within the compile budget of %s (tools.defaults.compile_budget, or tools.limits.<module>.compile_budget, allows more)", budget)
}

// loadError explains why guest code failed during load.
func (m *Module) loadError(ctx context.Context, in *instance, err error, reason instrument.StopReason) error {
	switch {
	case reason == instrument.StopCanceled || errors.Is(ctx.Err(), context.Canceled):
		return errors.New("cancelled while loading")
	case reason == instrument.StopDeadline || ctx.Err() != nil:
		return fmt.Errorf("did not finish within the load budget of %s", m.limits.LoadBudget)
	case reason == instrument.StopFuel:
		return fmt.Errorf("ran out of fuel (budget %d)", m.limits.Fuel)
	case reason == instrument.StopStackOverflow:
		return fmt.Errorf("trapped (%s)", tool.TrapStackOverflow)
	case in.memory.refused.Load():
		return fmt.Errorf("ran out of memory (limit %d MiB)", m.limits.Memory>>20)
	}
	if o, ok := trap.Classify(err); ok {
		stderr, _ := in.stderr.take()
		switch {
		case o.Trap != "":
			err = fmt.Errorf("trapped (%s)", o.Trap)
		case o.Exit != nil:
			err = fmt.Errorf("exited with code %d", o.Exit.ExitCode())
		case o.Host != nil:
			err = o.Host
		}
		if stderr = strings.TrimSpace(stderr); stderr != "" {
			err = fmt.Errorf("%w; stderr: %s", err, firstLines(stderr, 5))
		}
	}
	return err
}

// describe parses and validates the descriptor JSON. A bad descriptor
// document fails the module; a bad tool inside it is rejected alone.
func (m *Module) describe(raw []byte) error {
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("descriptor is not valid JSON of the form {\"tools\": [...]}: %w", err)
	}
	if len(doc.Tools) == 0 {
		return errors.New(`descriptor lists no tools`)
	}
	seen := make(map[string]bool)
	for i, rawTool := range doc.Tools {
		var d tool.Descriptor
		dec := json.NewDecoder(bytes.NewReader(rawTool))
		if err := dec.Decode(&d); err != nil {
			m.rejected = append(m.rejected, Rejection{Name: fmt.Sprintf("#%d", i), Reason: fmt.Errorf("tools[%d]: %w", i, err)})
			continue
		}
		schemas, err := d.Validate()
		if err == nil {
			err = validateRequested(&d.Capabilities)
		}
		// Tool names are unique ignoring case: config keys fold case, so
		// "Echo" and "echo" would share a grant entry.
		if err == nil && seen[strings.ToLower(d.Name)] {
			err = fmt.Errorf("name %q is used by another tool of this module (names are unique ignoring case)", d.Name)
		}
		if err != nil {
			m.rejected = append(m.rejected, Rejection{Name: d.Name, Reason: fmt.Errorf("tool %q: %w", d.Name, err)})
			continue
		}
		seen[strings.ToLower(d.Name)] = true
		m.tools = append(m.tools, &Tool{Descriptor: d, schemas: schemas, module: m})
	}
	if len(m.tools) == 0 {
		reasons := make([]string, len(m.rejected))
		for i, r := range m.rejected {
			reasons[i] = r.Reason.Error()
		}
		return fmt.Errorf("no valid tools: %s", strings.Join(reasons, "; "))
	}
	return nil
}

// readResponse copies a packed range the guest returned, enforcing the bound.
func readResponse(mod api.Module, packed uint64, limit int, what string) ([]byte, *tool.Error) {
	ptr, size := uint32(packed>>32), uint32(packed)
	if uint64(size) > uint64(limit) {
		return nil, tool.Errorf(tool.KindBadOutput, "%s is %d bytes, over the output limit of %d", what, size, limit)
	}
	view, ok := mod.Memory().Read(ptr, size)
	if !ok {
		return nil, tool.Errorf(tool.KindBadOutput, "%s at [%d, %d) lies outside guest memory (%d bytes)",
			what, ptr, uint64(ptr)+uint64(size), mod.Memory().Size())
	}
	return bytes.Clone(view), nil
}

// EndSession discards the instance kept for a client session (IsolationSession).
func (m *Module) EndSession(ctx context.Context, session string) { m.pool.endSession(ctx, session) }

// Close releases the module's instances and compiled code.
func (m *Module) Close(ctx context.Context) error {
	m.pool.close(ctx)
	err := m.compiled.Close(ctx)
	if m.plugin != nil {
		if perr := m.plugin.close(ctx); err == nil {
			err = perr
		}
	}
	return err
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, " | ")
}
