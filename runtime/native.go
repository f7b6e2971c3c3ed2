package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/runtime/internal/instcache"
	"github.com/warden-run/warden/runtime/internal/instrument"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
	"github.com/warden-run/warden/tool"
)

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

var requiredExports = map[string]guest.FuncSig{
	exportABIVersion: {Results: []api.ValueType{api.ValueTypeI32}},
	exportAlloc:      {Params: []api.ValueType{api.ValueTypeI32}, Results: []api.ValueType{api.ValueTypeI32}},
	exportDescribe:   {Results: []api.ValueType{api.ValueTypeI64}},
	exportCall:       {Params: []api.ValueType{api.ValueTypeI64}, Results: []api.ValueType{api.ValueTypeI64}},
}

// nativeLoader loads modules of warden's own tool ABI (docs/abi.md). It is
// the runtime's last loader: it claims every module no other loader did,
// and refuses with the ABI's rules whatever is not a tool module.
type nativeLoader struct{ rt *Runtime }

var _ guest.Loader = nativeLoader{}

func (nativeLoader) Claims(*wb.Module) bool { return true }

// Load instruments, compiles and checks mod, then runs its first instance
// through its start-up and describe.
func (l nativeLoader) Load(ctx context.Context, spec guest.Spec, mod *wb.Module) (*guest.Loaded, error) {
	// Instrument before anything else reads the module: a malformed module
	// is refused by the pass, with the offset, before the compiler sees it.
	cfg := instrument.Config{
		Fuel:          true,
		MaxCallDepth:  instrument.DefaultMaxCallDepth,
		ExportGlobals: true,
		VirtualMemory: true,
		DeferStart:    true,
	}
	instrumented, err := l.rt.host.Instrument(spec, "native", mod, cfg)
	if err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	// What the pass made of these bytes under cfg, named without hashing
	// its output: the name of the module's compiled-code mark (tier.go).
	id := instcache.Key(spec.SHA256, "native", cfg)
	c, tiered, err := l.rt.firstTier(ctx, id, instrumented.Wasm, spec.Limits.CompileBudget)
	if err != nil {
		return nil, err
	}
	loaded, err := l.start(ctx, spec, instrumented, c, tiered, id)
	var slow *overBudget
	if tiered && errors.As(err, &slow) && ctx.Err() == nil {
		// Start-up that fits the load budget compiled may not fit it
		// interpreted: only time differs between the tiers, so only a
		// load over its budget is done again, compiled (not when the
		// caller's own context has ended: its compile could not finish).
		l.rt.log.Info("module start-up too slow interpreted; compiling it first", "module", spec.Name)
		compiled, cerr := l.rt.compile(ctx, instrumented.Wasm, spec.Limits.CompileBudget)
		if cerr != nil {
			return nil, cerr
		}
		loaded, err = l.start(ctx, spec, instrumented, &code{wz: l.rt.wz, compiled: compiled, tier: TierCompiler}, false, id)
	}
	return loaded, err
}

// start checks the ABI of c, the module's code, and runs its first
// instance through its start-up and describe.
func (l nativeLoader) start(ctx context.Context, spec guest.Spec, instrumented *instrument.Result, c *code, tiered bool, id string) (*guest.Loaded, error) {
	e := &native{rt: l.rt, spec: spec, instrumented: instrumented, tiered: tiered, id: id}
	e.code.Store(c)
	imports, err := e.checkABI()
	if err != nil {
		c.compiled.Close(ctx)
		return nil, err
	}
	first, raw, err := e.initialize(ctx)
	if err != nil {
		c.compiled.Close(ctx)
		return nil, err
	}
	return &guest.Loaded{
		Kind: guest.KindNative, Engine: e, First: first, Descriptor: raw,
		Imports: imports, Exports: guest.ExportNames(c.compiled), MaxCallDepth: instrumented.MaxCallDepth,
	}, nil
}

// native is the engine of a loaded native module.
type native struct {
	rt   *Runtime
	spec guest.Spec
	// code is what new instances are made from: the compiler's code, or
	// the interpreter's until a tiered load's compile is done (tier.go).
	code atomic.Pointer[code]
	// tiered is set when the module was loaded on the interpreter, to be
	// compiled in the background (compileInBackground).
	tiered bool
	// id names the instrumented bytes (instcache.Key), for compiledMarks.
	id string
	// mu orders instantiations (read) with the swap and Close (write), so
	// that no instance is being made from code they close; tierErr is the
	// background compile's failure, closed set by Close.
	mu      sync.RWMutex
	tierErr error
	closed  bool
	// instrumented tells where the pass put the fuel, depth and snapshot
	// globals.
	instrumented *instrument.Result
	// snapshot is the state after _initialize that resets restore; nil
	// when the module cannot be snapshotted (it is then re-instantiated).
	snapshot *guest.Snapshot
}

// checkABI verifies exports, imports and the memory minimum before any guest
// code runs, and reports every problem at once.
func (e *native) checkABI() ([]string, error) {
	var problems []string
	compiled := e.code.Load().compiled
	exports := compiled.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(requiredExports)) {
		want := requiredExports[name]
		def, ok := exports[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing export %s %s", name, want))
		case !want.Matches(def):
			problems = append(problems, fmt.Sprintf("export %s has signature %s, want %s",
				name, guest.FuncSig{Params: def.ParamTypes(), Results: def.ResultTypes()}, want))
		}
	}
	if def, ok := exports[exportInitialize]; ok && (len(def.ParamTypes()) > 0 || len(def.ResultTypes()) > 0) {
		problems = append(problems, "export _initialize must take and return nothing")
	}
	if _, ok := exports[exportStart]; ok {
		problems = append(problems, "exports _start: a tool must be a reactor (build Go with -buildmode=c-shared, C with -mexec-model=reactor)")
	}
	memories := compiled.ExportedMemories()
	if mem, ok := memories[exportMemory]; !ok {
		problems = append(problems, "missing export memory")
	} else if minBytes := uint64(mem.Min()) * 65536; minBytes > e.spec.Limits.Memory {
		problems = append(problems, fmt.Sprintf("memory minimum %d pages (%d MiB) is above the tool's limit of %d MiB",
			mem.Min(), minBytes>>20, e.spec.Limits.Memory>>20))
	}

	host := e.rt.hostImports()
	wasi := e.rt.wz.Module("wasi_snapshot_preview1").ExportedFunctionDefinitions()
	var imports []string
	for _, def := range compiled.ImportedFunctions() {
		mod, name, _ := def.Import()
		imports = append(imports, mod+"."+name)
		var want *guest.FuncSig
		switch mod {
		case hostModuleName:
			if sig, ok := host[name]; ok {
				want = &sig
			}
		case "wasi_snapshot_preview1":
			if provided, ok := wasi[name]; ok {
				want = &guest.FuncSig{Params: provided.ParamTypes(), Results: provided.ResultTypes()}
			}
		}
		got := guest.FuncSig{Params: def.ParamTypes(), Results: def.ResultTypes()}
		switch {
		case want == nil:
			problems = append(problems, fmt.Sprintf("imports %s.%s, which this host does not provide", mod, name))
		case !want.Matches(def):
			problems = append(problems, fmt.Sprintf("imports %s.%s with signature %s, want %s", mod, name, got, *want))
		}
	}
	slices.Sort(imports)
	imports = slices.Compact(imports)
	if len(problems) > 0 {
		return nil, fmt.Errorf("not a warden tool module (ABI v%d, docs/abi.md): %s", ABIVersion, strings.Join(problems, "; "))
	}
	return imports, nil
}

// initialize runs the module's first instance through _initialize and
// describe within the load budget, snapshots the state after _initialize,
// and returns the instance and the descriptor.
func (e *native) initialize(ctx context.Context) (*guest.Instance, []byte, error) {
	limits := e.spec.Limits
	ctx, cancel := context.WithTimeout(ctx, limits.LoadBudget)
	defer cancel()
	in, err := e.newInstance(ctx)
	if err != nil {
		return nil, nil, err
	}
	in.CallCtx.Store(&ctx)
	fail := func(stage string, err error) (*guest.Instance, []byte, error) {
		in.Close(context.Background())
		return nil, nil, fmt.Errorf("%s: %w", stage, err)
	}
	loadError := func(err error, reason instrument.StopReason) error {
		return loadFailure(ctx, in, limits, err, reason)
	}
	if err := e.runInit(ctx, in); err != nil {
		in.Close(context.Background())
		return nil, nil, err
	}
	stop := in.Meter.Start(ctx, limits.Fuel)
	results, err := in.Mod.ExportedFunction(exportABIVersion).Call(ctx)
	if _, reason := stop(); err != nil {
		return fail(exportABIVersion, loadError(err, reason))
	}
	if v := uint32(results[0]); v != ABIVersion {
		in.Close(context.Background())
		return nil, nil, fmt.Errorf("module speaks tool ABI v%d; this warden speaks v%d", v, ABIVersion)
	}
	stop = in.Meter.Start(ctx, limits.Fuel)
	results, err = in.Mod.ExportedFunction(exportDescribe).Call(ctx)
	if _, reason := stop(); err != nil {
		return fail(exportDescribe, loadError(err, reason))
	}
	raw, terr := readResponse(in.Mod, results[0], limits.MaxOutput, "", "descriptor")
	if terr != nil {
		return fail(exportDescribe, terr)
	}
	in.Stdout.Take()
	in.Stderr.Take()
	// Snapshot the state right after _initialize (describe only reads), so
	// later instances and resets skip the guest's own start-up. Tables and
	// dropped data segments are instance state a memory snapshot misses;
	// modules that change them are re-instantiated instead.
	if !e.instrumented.MutatesTables && !e.instrumented.DropsData {
		globals := append(slices.Clone(e.instrumented.Globals), e.instrumented.PagesGlobal)
		take := guest.TakeSnapshot
		if e.rt.copySnapshots {
			take = guest.TakeCopiedSnapshot
		}
		snap, err := take(in, globals, true)
		if err != nil {
			in.Close(context.Background())
			return nil, nil, fmt.Errorf("snapshot: %w", err)
		}
		e.snapshot = snap
		if snap.Shared() {
			// The load-time instance holds a private copy of the memory it
			// initialized; the instance that waits in the pool for the
			// first call maps the image like every later one.
			mapped, err := e.NewInstance(ctx)
			if err == nil {
				in.Close(context.Background())
				return mapped, raw, nil
			}
			e.rt.log.Warn("module keeps its load-time instance", "module", e.spec.Name, "error", err)
		}
	}
	in.Random.Settle()
	return in, raw, nil
}

// runInit runs the module's start function (which the instrumentation pass
// moved out of instantiation, so that it runs metered) and then
// _initialize, if the module has them, under the load budget's fuel and
// deadline (ctx, also in.CallCtx). A failure names the one that failed:
// "start function (func 3 $spin): ..." or "_initialize: ...".
func (e *native) runInit(ctx context.Context, in *guest.Instance) error {
	for _, name := range []string{e.instrumented.StartExport, exportInitialize} {
		if name == "" {
			continue
		}
		fn := in.Mod.ExportedFunction(name)
		if fn == nil {
			continue
		}
		stop := in.Meter.Start(ctx, e.spec.Limits.Fuel)
		_, err := fn.Call(ctx)
		if _, reason := stop(); err != nil {
			stage := name
			if name == e.instrumented.StartExport {
				stage = guest.StartFunction(e.code.Load().compiled)
			}
			return fmt.Errorf("%s: %w", stage, loadFailure(ctx, in, e.spec.Limits, err, reason))
		}
	}
	return nil
}

// loadFailure is guest.LoadError, marked overBudget when the load ran out
// of time.
func loadFailure(ctx context.Context, in *guest.Instance, limits guest.Limits, err error, reason instrument.StopReason) error {
	lerr := guest.LoadError(ctx, in, limits, err, reason)
	if reason == instrument.StopDeadline || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &overBudget{lerr}
	}
	return lerr
}

// newInstance instantiates e's compiled code. It runs no guest code: the
// caller either runs _initialize or restores a snapshot.
func (e *native) newInstance(ctx context.Context) (*guest.Instance, error) {
	in, config := guest.NewShell(ctx, e.spec.SHA256, e.spec.Limits)
	if e.snapshot != nil {
		in.Memory.Cow = e.snapshot.NewMemory(e.spec.Limits.Memory)
	}
	e.mu.RLock()
	c := e.code.Load()
	mod, err := c.wz.InstantiateModule(experimental.WithMemoryAllocator(ctx, in.Memory), c.compiled,
		config.WithName("").WithStartFunctions())
	e.mu.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	in.Mod, in.Code = mod, c
	in.Alloc = mod.ExportedFunction(exportAlloc)
	in.Call = mod.ExportedFunction(exportCall)
	if err := in.Bind(ctx, e.instrumented); err != nil {
		return nil, err
	}
	if c.tier == TierInterpreter {
		in.Meter.EngineStopsOnDone()
	}
	return in, nil
}

// NewInstance makes an instance in the module's initial state.
func (e *native) NewInstance(ctx context.Context) (*guest.Instance, error) {
	name := e.spec.Name
	in, err := e.newInstance(ctx)
	if err != nil {
		return nil, err
	}
	if e.snapshot != nil {
		in.Random.Settle()
		if !e.snapshot.Restore(in) {
			in.Close(context.Background())
			return nil, tool.Errorf(tool.KindInternal, "instantiate %s: cannot restore its initial state", name)
		}
		return in, nil
	}
	initCtx, cancel := context.WithTimeout(ctx, e.spec.Limits.LoadBudget)
	defer cancel()
	in.CallCtx.Store(&initCtx)
	if err := e.runInit(initCtx, in); err != nil {
		in.Close(context.Background())
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: %v", name, err)
	}
	in.Random.Settle()
	return in, nil
}

// Reset returns in to the module's initial state, or reports that it cannot.
func (e *native) Reset(in *guest.Instance) bool {
	if e.snapshot == nil {
		return false
	}
	return e.snapshot.Restore(in)
}

// Run writes the request into the guest, runs warden_call and reads the
// response.
func (e *native) Run(ctx context.Context, in *guest.Instance, req tool.Request) (raw []byte, respErr *tool.Error, err error) {
	request, _ := json.Marshal(req)
	e.rt.served(in.Code.(*code))
	packed, err := invoke(ctx, in, in.Call, request)
	if err != nil {
		return nil, nil, err
	}
	raw, respErr = readResponse(in.Mod, packed, e.spec.Limits.MaxOutput, req.Tool, "response")
	return raw, respErr, nil
}

// invoke writes the request into the guest and runs fn (warden_call, or
// the export of an op).
func invoke(ctx context.Context, in *guest.Instance, fn api.Function, request []byte) (packed uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	reqPacked := in.WriteGuest(ctx, request)
	results, err := fn.Call(ctx, reqPacked)
	if err != nil {
		return 0, err
	}
	return results[0], nil
}

// Close releases the compiled code. A background compile that ends after
// it closes what it compiled.
func (e *native) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	c := e.code.Load()
	e.mu.Unlock()
	if e.snapshot != nil {
		e.snapshot.Close()
	}
	return c.compiled.Close(ctx)
}

// readResponse copies a packed range the guest returned, enforcing the
// bound. Errors name it as what, preceded by whose when that is not empty
// (a tool's name): the two are joined only for an error, not on every call.
func readResponse(mod api.Module, packed uint64, limit int, whose, what string) ([]byte, *tool.Error) {
	label := func() string {
		if whose == "" {
			return what
		}
		return whose + " " + what
	}
	ptr, size := uint32(packed>>32), uint32(packed)
	if uint64(size) > uint64(limit) {
		return nil, tool.Errorf(tool.KindBadOutput, "%s is %d bytes, over the output limit of %d", label(), size, limit)
	}
	view, ok := mod.Memory().Read(ptr, size)
	if !ok {
		return nil, tool.Errorf(tool.KindBadOutput, "%s at [%d, %d) lies outside guest memory (%d bytes)",
			label(), ptr, uint64(ptr)+uint64(size), mod.Memory().Size())
	}
	return bytes.Clone(view), nil
}
