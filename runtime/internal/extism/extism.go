// Package extism is the runtime's loader for Extism plugins (hyper-mcp v1
// and v2, mcp.run): modules that import from extism:host/env. It
// implements guest.Loader and guest.Engine; instances are made and called
// through the Extism Go SDK, while the instrumentation pass, limits, pool,
// descriptor checks and call path are the runtime's, as for a native
// module. The SDK is imported as sdk. RATIONALE.md, "Extism plugins".
package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	sdk "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/runtime/internal/trap"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
	"github.com/warden-run/warden/tool"
)

// Import modules of Extism plugins.
const (
	extismEnvModule  = "extism:host/env"
	extismUserModule = "extism:host/user"
	// extismWardenModule is where the loader moves the extism:host/env
	// imports warden serves itself (extismServed), so that a plugin's HTTP,
	// config and log calls reach warden's capabilities and the call's
	// observer instead of the SDK's own implementations.
	extismWardenModule = "warden:extism/env"
)

// extismEnvFuncs is what the SDK's extism:host/env module provides.
var extismEnvFuncs = []string{
	"alloc", "free", "load_u8", "input_load_u8", "store_u64", "store_u8", "input_set", "output_set",
	"input_length", "input_offset", "output_length", "output_offset", "length", "length_unsafe",
	"reset", "error_set", "error_get", "memory_bytes", "input_load_u64", "load_u64",
	"config_get", "var_get", "var_set", "http_request", "http_status_code", "http_headers",
	"get_log_level", "log_trace", "log_debug", "log_info", "log_warn", "log_error",
}

// extismServed are the extism:host/env functions warden replaces.
var extismServed = map[string]bool{
	"http_request": true, "config_get": true, "get_log_level": true,
	"log_trace": true, "log_debug": true, "log_info": true, "log_warn": true, "log_error": true,
}

// extismShape is which of the two MCP plugin conventions a plugin follows.
type extismShape int

const (
	// extismV1 (hyper-mcp v1, mcp.run): describe() -> {"tools": [...]},
	// call({"params": {name, arguments}}) -> CallToolResult.
	extismV1 extismShape = iota + 1
	// extismV2 (hyper-mcp v2): list_tools({"context"}) -> ListToolsResult,
	// call_tool({"request": {name, arguments}, "context"}) -> CallToolResult.
	extismV2
)

func (s extismShape) exports() (list, call string) {
	if s == extismV2 {
		return "list_tools", "call_tool"
	}
	return "describe", "call"
}

func (s extismShape) String() string {
	if s == extismV2 {
		return "hyper-mcp v2 (list_tools, call_tool)"
	}
	return "v1 (describe, call)"
}

// Loader loads Extism plugins: modules that import from extism:host/env.
// The bytes go through the same instrumentation pass as a native module's,
// the tool list through the same descriptor checks, and the module gets
// the same pool, limits and call path; only making instances and running a
// request differ (plugin).
type Loader struct {
	Host *guest.Host
}

var _ guest.Loader = Loader{}

// Claims reports whether mod is an Extism plugin: a module that imports
// from extism:host/env. A module whose imports do not decode is not; the
// native loader then reports why.
func (Loader) Claims(mod *wb.Module) bool {
	imports, err := mod.Imports()
	if err != nil {
		return false
	}
	for _, im := range imports {
		if im.Module == extismEnvModule {
			return true
		}
	}
	return false
}

// Load checks the plugin's imports and exports, instruments and compiles
// it, and lists its tools on a first instance.
func (l Loader) Load(ctx context.Context, spec guest.Spec, mod *wb.Module) (*guest.Loaded, error) {
	if _, set := os.LookupEnv("EXTISM_ENABLE_WASI_OUTPUT"); set {
		// The SDK would send plugin stdout to warden's own, which carries
		// the MCP stdio transport.
		return nil, errors.New("extism plugin: unset EXTISM_ENABLE_WASI_OUTPUT: it sends plugin output to warden's stdout")
	}
	imports, err := mod.Imports()
	if err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	names, err := l.checkImports(imports)
	if err != nil {
		return nil, err
	}
	if _, err := moveImports(mod, extismEnvModule, extismWardenModule, extismServed); err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	// The key names the import move above: a function of the bytes.
	instrumented, err := l.Host.Instrument(spec, "extism (env imports moved to warden)", mod, instrument.Config{
		Fuel:          true,
		MaxCallDepth:  instrument.DefaultMaxCallDepth,
		ExportGlobals: true,
		VirtualMemory: true,
		// As for native modules: the start function runs metered, in
		// list, not unmetered inside the SDK's instantiation.
		DeferStart: true,
	})
	if err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	limits := spec.Limits
	// Compiled here too, for the export checks and Module.Exports; the SDK's
	// engine finds the code in the shared compilation cache.
	compiled, err := l.Host.Compile(ctx, instrumented.Wasm, limits.CompileBudget)
	if err != nil {
		return nil, err
	}
	x := &plugin{
		host: l.Host, spec: spec, main: compiled, instrumented: instrumented,
		fs: l.Host.Capabilities["fs"], maxHTTP: min(int64(limits.Memory)/4, 50<<20),
	}
	if x.shape, err = x.checkExports(); err != nil {
		compiled.Close(ctx)
		return nil, err
	}
	manifest := sdk.Manifest{
		Wasm: []sdk.Wasm{sdk.WasmData{Data: instrumented.Wasm, Name: "main"}},
		// A Go-literal manifest leaves both byte limits at 0, which means
		// "no HTTP body" and "vars disabled"; set what warden allows. The
		// memory limit itself is enforced per instance by warden's allocator
		// (extismAllocator), so that running out is reported as such.
		Memory: &sdk.ManifestMemory{MaxPages: 65536, MaxHttpResponseBytes: x.maxHTTP, MaxVarBytes: min(int64(limits.Memory)/4, 1<<20)},
	}
	err = l.Host.ThroughCache(func() (err error) {
		x.compiled, err = sdk.NewCompiledPlugin(ctx, manifest, sdk.PluginConfig{
			RuntimeConfig:             l.Host.Config,
			EnableWasi:                true,
			EnableHttpResponseHeaders: true,
		}, x.hostFunctions())
		return err
	})
	if err != nil {
		compiled.Close(ctx)
		return nil, fmt.Errorf("extism plugin: %w", err)
	}
	first, raw, err := x.initialize(ctx)
	if err != nil {
		compiled.Close(ctx)
		x.compiled.Close(ctx)
		return nil, err
	}
	return &guest.Loaded{
		Kind: guest.KindExtism, Engine: x, First: first, Descriptor: raw,
		Imports: names, Exports: guest.ExportNames(compiled), MaxCallDepth: instrumented.MaxCallDepth,
	}, nil
}

// plugin is the engine of a loaded Extism plugin.
type plugin struct {
	host  *guest.Host
	spec  guest.Spec
	shape extismShape
	// main is the instrumented main module compiled by the runtime, for
	// the load-time checks; compiled is the SDK's plugin built from it.
	main         wazero.CompiledModule
	compiled     *sdk.CompiledPlugin
	instrumented *instrument.Result
	// snapshot is the main module's state after start-up; nil when the
	// module keeps state a memory snapshot misses.
	snapshot *guest.Snapshot
	// fs serves the plugin's WASI file access, when the runtime has a
	// capability named "fs" (fs.go).
	fs hostfuncs.Capability
	// kernel is the Extism kernel's memory right after a reset, restored
	// with the main module's snapshot between calls; nil when the module
	// has no snapshot.
	kernel []byte
	// maxHTTP bounds one HTTP response body.
	maxHTTP int64
}

// pluginInstance is the Extism side of an instance (guest.Instance.Own).
type pluginInstance struct {
	plugin *sdk.Plugin
	files  *guardedFS // nil when the runtime has no fs capability
}

func (e *pluginInstance) Close(ctx context.Context) error { return e.plugin.Close(ctx) }

// own returns the Extism side of in.
func own(in *guest.Instance) *pluginInstance { return in.Own.(*pluginInstance) }

// checkImports refuses imports no instance could be given, naming them
// all, before anything is instantiated. It returns the imports as
// "module.name", sorted.
func (l Loader) checkImports(imports []wb.Import) ([]string, error) {
	env := make(map[string]bool, len(extismEnvFuncs))
	for _, name := range extismEnvFuncs {
		env[name] = true
	}
	wasi := l.Host.Wazero.Module("wasi_snapshot_preview1").ExportedFunctionDefinitions()
	var problems, names []string
	for _, im := range imports {
		names = append(names, im.Module+"."+im.Name)
		if im.Kind != wb.KindFunc {
			problems = append(problems, fmt.Sprintf("imports %s.%s, which is not a function", im.Module, im.Name))
			continue
		}
		var ok bool
		switch im.Module {
		case extismEnvModule:
			ok = env[im.Name]
		case extismUserModule:
			_, ok = extismUserFuncs[im.Name]
		case "wasi_snapshot_preview1":
			_, ok = wasi[im.Name]
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("imports %s.%s, which this host does not provide", im.Module, im.Name))
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(problems) > 0 {
		return nil, fmt.Errorf("extism plugin: %s", strings.Join(slices.Compact(problems), "; "))
	}
	return names, nil
}

// checkExports finds the plugin's shape and checks its exports and memory.
func (x *plugin) checkExports() (extismShape, error) {
	exports := x.main.ExportedFunctions()
	has := func(name string) bool { _, ok := exports[name]; return ok }
	var shape extismShape
	switch {
	case has("list_tools") && has("call_tool"):
		shape = extismV2
	case has("describe") && has("call"):
		shape = extismV1
	default:
		return 0, fmt.Errorf("extism plugin: exports neither describe and call (v1) nor list_tools and call_tool (hyper-mcp v2); exports %s",
			strings.Join(slices.Sorted(maps.Keys(exports)), ", "))
	}
	var problems []string
	list, call := shape.exports()
	for _, name := range []string{list, call} {
		def := exports[name]
		if len(def.ParamTypes()) != 0 || len(def.ResultTypes()) > 1 ||
			len(def.ResultTypes()) == 1 && def.ResultTypes()[0] != api.ValueTypeI32 {
			problems = append(problems, fmt.Sprintf("export %s has signature %s, want () -> (i32)",
				name, guest.FuncSig{Params: def.ParamTypes(), Results: def.ResultTypes()}))
		}
	}
	for _, mem := range x.main.ExportedMemories() {
		if minBytes := uint64(mem.Min()) * 65536; minBytes > x.spec.Limits.Memory {
			problems = append(problems, fmt.Sprintf("memory minimum %d pages (%d MiB) is above the tool's limit of %d MiB",
				mem.Min(), minBytes>>20, x.spec.Limits.Memory>>20))
		}
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("extism plugin (%s): %s", shape, strings.Join(problems, "; "))
	}
	return shape, nil
}

// initialize lists the plugin's tools on its first instance, within the
// load budget, and snapshots the state that calls then start from. It
// returns that instance and the tool list.
func (x *plugin) initialize(ctx context.Context) (*guest.Instance, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, x.spec.Limits.LoadBudget)
	defer cancel()
	in, err := x.newInstance(ctx)
	if err != nil {
		return nil, nil, err
	}
	raw, err := x.list(ctx, in)
	if err == nil {
		raw, err = x.listFeatures(ctx, in, raw)
	}
	if err != nil {
		in.Close(context.Background())
		return nil, nil, err
	}
	// As for native modules: the state right after start-up (the listing
	// only reads) is what every call starts from, unless the module keeps
	// state a memory snapshot misses.
	if !x.instrumented.MutatesTables && !x.instrumented.DropsData {
		globals := append(slices.Clone(x.instrumented.Globals), x.instrumented.PagesGlobal)
		snap, err := guest.TakeSnapshot(in, globals, true)
		if err != nil {
			in.Close(context.Background())
			return nil, nil, fmt.Errorf("snapshot: %w", err)
		}
		// An empty input resets the kernel: no allocation, no output, no
		// error. That is the kernel state every call then starts from.
		p := own(in).plugin
		if _, err := p.SetInputWithContext(ctx, nil); err != nil {
			in.Close(context.Background())
			return nil, nil, fmt.Errorf("snapshot: reset the extism kernel: %w", err)
		}
		kmem := p.Memory()
		view, _ := kmem.Read(0, kmem.Size())
		x.snapshot, x.kernel = snap, bytes.Clone(view)
	}
	in.Random.Settle()
	return in, raw, nil
}

// list runs the plugin's tool listing, which also runs its start-up
// (the SDK calls _initialize before the first call of an instance), and
// returns {"tools": [...]}.
func (x *plugin) list(ctx context.Context, in *guest.Instance) ([]byte, error) {
	export, _ := x.shape.exports()
	var input []byte
	if x.shape == extismV2 {
		input = []byte(`{"context":{"id":"warden-load","_meta":{}}}`)
	}
	// The start function runs first, as instantiation would run it, and
	// like a native module's, without a call: no host function serves it.
	if err := x.runStart(ctx, in); err != nil {
		return nil, err
	}
	return x.loadCall(ctx, in, export, input)
}

// loadCall runs export with input at load, without a call (no grants), and
// returns its output.
func (x *plugin) loadCall(ctx context.Context, in *guest.Instance, export string, input []byte) ([]byte, error) {
	limits := x.spec.Limits
	state := guest.NewCallState(&hostfuncs.Call{Tool: x.spec.Name, Observer: guest.DiscardObserver{}}, in, limits)
	ctx = guest.WithState(ctx, state)
	in.CallCtx.Store(&ctx)
	in.Memory.Refused.Store(false)
	stop := in.Meter.Start(ctx, limits.Fuel)
	rc, out, err := own(in).plugin.CallWithContext(ctx, export, input)
	_, reason := stop()
	bg := context.Background()
	in.CallCtx.Store(&bg)
	defer in.Stdout.Take()
	defer in.Stderr.Take()
	switch {
	case err != nil && isPluginError(in, err):
		return nil, fmt.Errorf("%s: failed: %v", export, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", export, guest.LoadError(ctx, in, limits, err, reason))
	case rc != 0:
		return nil, fmt.Errorf("%s: returned %d", export, rc)
	case len(out) > limits.MaxOutput:
		return nil, fmt.Errorf("%s: its output is %d bytes, over the output limit of %d", export, len(out), limits.MaxOutput)
	}
	return out, nil
}

// runStart runs the plugin's start function, which the instrumentation pass
// moved out of instantiation, under the meter: in wasm it runs before
// anything else, so before the SDK's _initialize and the listing.
func (x *plugin) runStart(ctx context.Context, in *guest.Instance) error {
	if x.instrumented.StartExport == "" {
		return nil
	}
	fn := in.Mod.ExportedFunction(x.instrumented.StartExport)
	if fn == nil {
		return nil
	}
	// A WASI sleep in the start function ends with the load budget.
	in.CallCtx.Store(&ctx)
	defer func() {
		bg := context.Background()
		in.CallCtx.Store(&bg)
	}()
	stop := in.Meter.Start(ctx, x.spec.Limits.Fuel)
	_, err := fn.Call(ctx)
	if _, reason := stop(); err != nil {
		return fmt.Errorf("%s: %w", guest.StartFunction(x.main), guest.LoadError(ctx, in, x.spec.Limits, err, reason))
	}
	return nil
}

// isPluginError tells an error the plugin set with error_set (which the
// SDK returns as a plain error with its text) from a failure of the call.
func isPluginError(in *guest.Instance, err error) bool {
	msg := own(in).plugin.GetError()
	return msg != "" && err.Error() == msg
}

// newInstance instantiates the plugin (kernel and main module) without
// running any of its code.
func (x *plugin) newInstance(ctx context.Context) (*guest.Instance, error) {
	limits := x.spec.Limits
	in, config := guest.NewShell(ctx, x.spec.SHA256, limits)
	ext := &pluginInstance{}
	if x.fs != nil {
		// One preopen, "/", whose every operation is a warden.fs request
		// under the grants of the call in progress (fs.go). The
		// manifest's AllowedPaths stays empty: the SDK would mount host
		// directories that bypass the deny-list.
		ext.files = newGuardedFS(in, x.fs)
		config = config.WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(ext.files, "/"))
	}
	// Every memory of the instance (the kernel's and the plugin's) gets the
	// tool's limit, and a refusal marks the call out of memory.
	allocCtx := experimental.WithMemoryAllocator(ctx, extismAllocator{limit: limits.Memory, refused: &in.Memory.Refused, acct: in.Memory.Account})
	p, err := x.compiled.Instance(allocCtx, sdk.PluginInstanceConfig{ModuleConfig: config})
	if err != nil {
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	ext.plugin = p
	in.Own = ext
	if in.Mod, err = mainModule(p); err != nil {
		in.Close(ctx)
		return nil, err
	}
	if err := in.Bind(ctx, x.instrumented); err != nil {
		return nil, err
	}
	return in, nil
}

// mainModule returns the plugin's main module. The SDK hands it out only
// wrapped (Plugin.Module returns an *extism.Module whose one field is the
// api.Module); warden needs the module itself, to drive the fuel and depth
// globals the instrumentation pass added and to snapshot and restore it.
// go.mod pins the SDK; should the wrapper change, every plugin load fails
// with this error (and the tests with it).
func mainModule(p *sdk.Plugin) (api.Module, error) {
	v := reflect.ValueOf(p.Module()).Elem()
	if v.Kind() == reflect.Struct && v.NumField() == 1 && v.Field(0).Type() == reflect.TypeFor[api.Module]() {
		f := v.Field(0)
		if mod, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(api.Module); ok && mod != nil {
			return mod, nil
		}
	}
	return nil, errors.New("extism SDK: cannot reach the plugin's main module (has the SDK's Module type changed?)")
}

// NewInstance makes an instance in the plugin's initial state. The SDK
// runs a plugin's start-up before the first call of each instance and
// offers no way to mark it done, so a new instance runs it (with the tool
// listing) once; the snapshot then replaces whatever that left.
func (x *plugin) NewInstance(ctx context.Context) (*guest.Instance, error) {
	name := x.spec.Name
	initCtx, cancel := context.WithTimeout(ctx, x.spec.Limits.LoadBudget)
	defer cancel()
	in, err := x.newInstance(initCtx)
	if err != nil {
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: %v", name, err)
	}
	if _, err := x.list(initCtx, in); err != nil {
		in.Close(context.Background())
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: %v", name, err)
	}
	in.Random.Settle()
	if x.snapshot != nil && !x.restore(in) {
		in.Close(context.Background())
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: cannot restore its initial state", name)
	}
	return in, nil
}

// Reset returns in to the plugin's initial state, or reports that it
// cannot.
func (x *plugin) Reset(in *guest.Instance) bool {
	return x.snapshot != nil && x.restore(in)
}

// restore copies the snapshot into the main module and the kernel's
// initial memory into the kernel, and forgets the plugin's vars and last
// HTTP response. A kernel whose memory grew cannot be shrunk back, so that
// instance is replaced instead.
func (x *plugin) restore(in *guest.Instance) bool {
	p := own(in).plugin
	kmem := p.Memory()
	if int(kmem.Size()) != len(x.kernel) || !x.snapshot.Restore(in) {
		return false
	}
	view, ok := kmem.Read(0, kmem.Size())
	if !ok {
		return false
	}
	copy(view, x.kernel)
	clear(p.Var)
	clear(p.LastResponseHeaders)
	p.LastStatusCode = 0
	return true
}

// Close releases the SDK's compiled plugin and the main module's code.
func (x *plugin) Close(ctx context.Context) error {
	if x.snapshot != nil {
		x.snapshot.Close()
	}
	err := x.main.Close(ctx)
	if perr := x.compiled.Close(ctx); err == nil {
		err = perr
	}
	return err
}

// Run calls the plugin's call export with the request in the plugin's
// shape and returns its result in the native one.
func (x *plugin) Run(ctx context.Context, in *guest.Instance, req tool.Request) ([]byte, *tool.Error, error) {
	_, export := x.shape.exports()
	input := x.callInput(req)
	ext := own(in)
	if f := ext.files; f != nil {
		// Files stay open for one call only: a later call, under other
		// grants, must not read what this one was allowed to.
		defer f.endCall()
	}
	rc, out, err := ext.plugin.CallWithContext(ctx, export, input)
	state, _ := guest.StateOf(ctx)
	switch {
	case err != nil && isPluginError(in, err):
		return pluginFailure(state, req.Tool, err.Error()), nil, nil
	case err != nil:
		if _, ok := trap.Classify(err); !ok {
			// The SDK's own host functions fail the call with a panic when
			// a plugin passes them something invalid (a bad offset, a full
			// var store): the plugin's doing, not warden's.
			err = tool.Errorf(tool.KindFailed, "%s misused the Extism host API: %v", req.Tool, err)
		}
		return nil, nil, err
	case rc != 0:
		return pluginFailure(state, req.Tool, fmt.Sprintf("%s returned %d", export, rc)), nil, nil
	}
	raw, respErr := NativeResponse(out, x.spec.Limits.MaxOutput, req.Tool, state.Denial)
	return raw, respErr, nil
}

// callInput is the call export's input for req in the plugin's shape.
func (x *plugin) callInput(req tool.Request) []byte {
	params := struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}{req.Tool, req.Arguments}
	var v any
	if x.shape == extismV2 {
		id := req.CallID
		if id == "" {
			id = "warden"
		}
		v = map[string]any{"request": params, "context": map[string]any{"id": id, "_meta": map[string]any{}}}
	} else {
		v = map[string]any{"params": params}
	}
	b, _ := json.Marshal(v)
	return b
}

// pluginFailure is the native error response for a call the plugin
// reported failed.
func pluginFailure(state *guest.CallState, name, msg string) []byte {
	b, _ := json.Marshal(struct {
		Error *tool.Error `json:"error"`
	}{failureError(name, msg, state.Denial)})
	return b
}

// failureError is the error of a call the plugin reported failed. When
// warden refused one of the call's file or config requests, the refusal is
// the likely cause and the call is denied.
func failureError(name, msg string, denial *tool.Error) *tool.Error {
	switch {
	case denial != nil && denial.Kind == tool.KindDenied:
		return tool.Errorf(tool.KindDenied, "%s failed after warden refused it: %s (the plugin said: %s)", name, denial.Message, msg)
	case denial != nil:
		return tool.Errorf(denial.Kind, "%s failed after %s (the plugin said: %s)", name, denial.Message, msg)
	}
	return tool.Errorf(tool.KindFailed, "%s", msg)
}

// extismResult is the part of an MCP CallToolResult warden reads.
type extismResult struct {
	Content           json.RawMessage `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// NativeResponse converts a plugin's CallToolResult (both shapes return
// one) into the native response, which the runtime then validates
// like any other. isError becomes a "failed" error (denied after a denial)
// carrying the plugin's content; its first text block is the message.
func NativeResponse(out []byte, limit int, name string, denial *tool.Error) ([]byte, *tool.Error) {
	if len(out) > limit {
		return nil, tool.Errorf(tool.KindBadOutput, "%s response is %d bytes, over the output limit of %d", name, len(out), limit)
	}
	var r extismResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, tool.Errorf(tool.KindBadOutput, "%s response is not a JSON CallToolResult: %v", name, err)
	}
	if len(r.Content) == 0 || bytes.Equal(r.Content, []byte("null")) {
		return nil, tool.Errorf(tool.KindBadOutput, "%s response has no content", name)
	}
	var resp struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		Error             *tool.Error     `json:"error,omitempty"`
	}
	resp.Content, resp.StructuredContent = r.Content, r.StructuredContent
	if r.IsError {
		// The native error path keeps the content as it is, so check it
		// here: the plugin's content is all the caller gets.
		var blocks []tool.Content
		if err := json.Unmarshal(r.Content, &blocks); err != nil {
			return nil, tool.Errorf(tool.KindBadOutput, "%s response content: %v", name, err)
		}
		msg := name + " reported an error"
		for i, b := range blocks {
			if err := b.Validate(); err != nil {
				return nil, tool.Errorf(tool.KindBadOutput, "%s content[%d]: %v", name, i, err)
			}
			if b.Type == "text" && b.Text != "" && msg == name+" reported an error" {
				msg = guest.FirstLines(b.Text, 3)
			}
		}
		resp.Error = failureError(name, msg, denial)
		resp.StructuredContent = nil
	}
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, tool.Errorf(tool.KindBadOutput, "%s response: %v", name, err)
	}
	return raw, nil
}

// extismAllocator gives each memory of a plugin instance the tool's limit;
// a refusal in any of them (kernel or plugin) sets refused.
type extismAllocator struct {
	limit   uint64
	refused *atomic.Bool
	acct    guest.Account
}

var _ experimental.MemoryAllocator = extismAllocator{}

func (a extismAllocator) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	fm := &flaggedMemory{LimitedMemory: guest.LimitedMemory{Limit: a.limit, Account: a.acct}, refused: a.refused}
	fm.LimitedMemory.Allocate(capacity, maximum)
	return fm
}

type flaggedMemory struct {
	guest.LimitedMemory
	refused *atomic.Bool
}

func (f *flaggedMemory) Reallocate(size uint64) []byte {
	b := f.LimitedMemory.Reallocate(size)
	if b == nil {
		f.refused.Store(true)
	}
	return b
}

// moveImports rewrites mod's import section so that the function imports
// from.name (names[name] true) are imported from to instead, every other
// byte unchanged, and reports whether it moved any. Nothing is changed
// when none matches or on error.
func moveImports(mod *wb.Module, from, to string, names map[string]bool) (bool, error) {
	s := mod.Section(wb.SectionImport)
	if s == nil {
		return false, nil
	}
	// Decoded first for its checks: the loop below only measures entries.
	if _, err := mod.Imports(); err != nil {
		return false, err
	}
	r := mod.SectionReader(s)
	base := max(s.Offset, 0) // the reader's position of the payload's first byte
	n, err := r.Count()
	if err != nil {
		return false, err
	}
	out := wb.AppendU32(make([]byte, 0, len(s.Payload)+64), n)
	moved := false
	for range n {
		module, err := r.Name()
		if err != nil {
			return false, err
		}
		name, err := r.Name()
		if err != nil {
			return false, err
		}
		start := r.Pos()
		if err := skipImportDesc(r); err != nil {
			return false, err
		}
		if module == from && names[name] {
			module, moved = to, true
		}
		out = wb.AppendName(wb.AppendName(out, module), name)
		out = append(out, s.Payload[start-base:r.Pos()-base]...)
	}
	if err := r.End("import section"); err != nil {
		return false, err
	}
	if !moved {
		return false, nil
	}
	mod.SetSection(wb.SectionImport, out)
	return true, nil
}

// skipImportDesc reads past one import descriptor.
func skipImportDesc(r *wb.Reader) error {
	kind, err := r.Byte()
	if err != nil {
		return err
	}
	skipLEB := func() error {
		for range 10 {
			b, err := r.Byte()
			if err != nil || b < 0x80 {
				return err
			}
		}
		return errors.New("malformed LEB128 in an import")
	}
	valType := func() error {
		b, err := r.Byte()
		if err == nil && (b == 0x63 || b == 0x64) { // (ref null? ht)
			err = skipLEB()
		}
		return err
	}
	limits := func() error {
		flags, err := r.Byte()
		if err != nil {
			return err
		}
		if err := skipLEB(); err != nil {
			return err
		}
		if flags&1 != 0 {
			return skipLEB()
		}
		return nil
	}
	switch kind {
	case wb.KindFunc:
		_, err = r.U32()
	case wb.KindTable:
		if err = valType(); err == nil {
			err = limits()
		}
	case wb.KindMemory:
		err = limits()
	case wb.KindGlobal:
		if err = valType(); err == nil {
			_, err = r.Byte()
		}
	default:
		err = fmt.Errorf("unsupported import kind %#x", kind)
	}
	return err
}
