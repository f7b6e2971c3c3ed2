package runtime

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

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"

	"github.com/warden-run/warden/hostfuncs"
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

// extismPlugin is the Extism side of a Module whose wasm imports from
// extism:host/env.
type extismPlugin struct {
	m        *Module
	shape    extismShape
	compiled *extism.CompiledPlugin
	// fs serves the plugin's WASI file access, when the runtime has a
	// capability named "fs" (extism_fs.go).
	fs hostfuncs.Capability
	// kernel is the Extism kernel's memory right after a reset, restored
	// with the main module's snapshot between calls; nil when the module
	// has no snapshot.
	kernel []byte
	// maxHTTP bounds one HTTP response body.
	maxHTTP int64
}

// extismInstance is the Extism side of an instance.
type extismInstance struct {
	plugin *extism.Plugin
	files  *guardedFS // nil when the runtime has no fs capability
}

func (e *extismInstance) close(ctx context.Context) { _ = e.plugin.Close(ctx) }

// isExtismPlugin reports whether wasm is an Extism plugin: a module that
// imports from extism:host/env. A module that does not parse is not; the
// native loader then reports why.
func isExtismPlugin(wasm []byte) bool {
	imports, err := moduleImports(wasm)
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

func moduleImports(wasm []byte) ([]wb.Import, error) {
	mod, err := wb.Parse(wasm)
	if err != nil {
		return nil, err
	}
	s := mod.Section(wb.SectionImport)
	if s == nil {
		return nil, nil
	}
	return mod.SectionReader(s).Imports()
}

// loadExtism is Runtime.Load for an Extism plugin: the bytes go through the
// same instrumentation pass, the tool list through the same descriptor
// checks, and the module gets the same pool, limits and call path; only
// making instances and running a request differ (extismPlugin).
func (r *Runtime) loadExtism(ctx context.Context, m *Module, wasm []byte) error {
	if _, set := os.LookupEnv("EXTISM_ENABLE_WASI_OUTPUT"); set {
		// The SDK would send plugin stdout to warden's own, which carries
		// the MCP stdio transport.
		return errors.New("extism plugin: unset EXTISM_ENABLE_WASI_OUTPUT: it sends plugin output to warden's stdout")
	}
	imports, err := moduleImports(wasm)
	if err != nil {
		return fmt.Errorf("invalid module: %w", err)
	}
	if err := r.checkExtismImports(m, imports); err != nil {
		return err
	}
	moved, err := moveImports(wasm, extismEnvModule, extismWardenModule, extismServed)
	if err != nil {
		return fmt.Errorf("invalid module: %w", err)
	}
	instrumented, err := instrument.Instrument(moved, instrument.Config{
		Fuel:          true,
		MaxCallDepth:  instrument.DefaultMaxCallDepth,
		ExportGlobals: true,
		VirtualMemory: true,
		// As for native modules: the start function runs metered, in
		// list, not unmetered inside the SDK's instantiation.
		DeferStart: true,
	})
	if err != nil {
		return fmt.Errorf("invalid module: %w", err)
	}
	m.instrumented = instrumented
	// Compiled here too, for the export checks and Module.Exports; the SDK's
	// engine finds the code in the shared compilation cache.
	compiled, err := r.compile(ctx, instrumented.Wasm, m.limits.CompileBudget)
	if err != nil {
		return err
	}
	m.compiled = compiled
	x := &extismPlugin{m: m, fs: r.capabilities["fs"], maxHTTP: min(int64(m.limits.Memory)/4, 50<<20)}
	if x.shape, err = x.checkExports(); err != nil {
		compiled.Close(ctx)
		return err
	}
	manifest := extism.Manifest{
		Wasm: []extism.Wasm{extism.WasmData{Data: instrumented.Wasm, Name: "main"}},
		// A Go-literal manifest leaves both byte limits at 0, which means
		// "no HTTP body" and "vars disabled"; set what warden allows. The
		// memory limit itself is enforced per instance by warden's allocator
		// (extismAllocator), so that running out is reported as such.
		Memory: &extism.ManifestMemory{MaxPages: 65536, MaxHttpResponseBytes: x.maxHTTP, MaxVarBytes: min(int64(m.limits.Memory)/4, 1<<20)},
	}
	x.compiled, err = extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig:             r.wzConfig,
		EnableWasi:                true,
		EnableHttpResponseHeaders: true,
	}, x.hostFunctions())
	if err != nil {
		compiled.Close(ctx)
		return fmt.Errorf("extism plugin: %w", err)
	}
	m.plugin = x
	if err := x.initialize(ctx); err != nil {
		compiled.Close(ctx)
		x.compiled.Close(ctx)
		return err
	}
	return nil
}

// checkExtismImports refuses imports no instance could be given, naming
// them all, before anything is instantiated.
func (r *Runtime) checkExtismImports(m *Module, imports []wb.Import) error {
	env := make(map[string]bool, len(extismEnvFuncs))
	for _, name := range extismEnvFuncs {
		env[name] = true
	}
	wasi := r.wz.Module("wasi_snapshot_preview1").ExportedFunctionDefinitions()
	var problems []string
	for _, im := range imports {
		m.imports = append(m.imports, im.Module+"."+im.Name)
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
	slices.Sort(m.imports)
	m.imports = slices.Compact(m.imports)
	if len(problems) > 0 {
		return fmt.Errorf("extism plugin: %s", strings.Join(slices.Compact(problems), "; "))
	}
	return nil
}

// checkExports finds the plugin's shape and checks its exports and memory.
func (x *extismPlugin) checkExports() (extismShape, error) {
	exports := x.m.compiled.ExportedFunctions()
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
				name, funcSig{def.ParamTypes(), def.ResultTypes()}))
		}
	}
	for _, mem := range x.m.compiled.ExportedMemories() {
		if minBytes := uint64(mem.Min()) * 65536; minBytes > x.m.limits.Memory {
			problems = append(problems, fmt.Sprintf("memory minimum %d pages (%d MiB) is above the tool's limit of %d MiB",
				mem.Min(), minBytes>>20, x.m.limits.Memory>>20))
		}
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("extism plugin (%s): %s", shape, strings.Join(problems, "; "))
	}
	return shape, nil
}

// initialize lists the plugin's tools on its first instance, within the
// load budget, and snapshots the state that calls then start from.
func (x *extismPlugin) initialize(ctx context.Context) error {
	m := x.m
	ctx, cancel := context.WithTimeout(ctx, m.limits.LoadBudget)
	defer cancel()
	m.pool = newPool(m)
	in, err := x.newInstance(ctx)
	if err != nil {
		return err
	}
	raw, err := x.list(ctx, in)
	if err != nil {
		in.close(context.Background())
		return err
	}
	if err := m.describe(raw); err != nil {
		in.close(context.Background())
		return err
	}
	// As for native modules: the state right after start-up (the listing
	// only reads) is what every call starts from, unless the module keeps
	// state a memory snapshot misses.
	if !m.instrumented.MutatesTables && !m.instrumented.DropsData {
		globals := append(slices.Clone(m.instrumented.Globals), m.instrumented.PagesGlobal)
		snap, err := takeSnapshot(in, globals, true)
		if err != nil {
			in.close(context.Background())
			return fmt.Errorf("snapshot: %w", err)
		}
		// An empty input resets the kernel: no allocation, no output, no
		// error. That is the kernel state every call then starts from.
		if _, err := in.ext.plugin.SetInputWithContext(ctx, nil); err != nil {
			in.close(context.Background())
			return fmt.Errorf("snapshot: reset the extism kernel: %w", err)
		}
		kmem := in.ext.plugin.Memory()
		view, _ := kmem.Read(0, kmem.Size())
		m.snapshot, x.kernel = snap, bytes.Clone(view)
	}
	in.random.settle()
	m.pool.putLoaded(in)
	return nil
}

// list runs the plugin's tool listing, which also runs its start-up
// (the SDK calls _initialize before the first call of an instance), and
// returns {"tools": [...]}.
func (x *extismPlugin) list(ctx context.Context, in *instance) ([]byte, error) {
	m := x.m
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
	state := newCallState(&hostfuncs.Call{Tool: m.name, Observer: discardObserver{}}, in, m.limits)
	ctx = context.WithValue(ctx, callStateKey{}, state)
	in.callCtx.Store(&ctx)
	in.memory.refused.Store(false)
	stop := in.meter.Start(ctx, m.limits.Fuel)
	rc, out, err := in.ext.plugin.CallWithContext(ctx, export, input)
	_, reason := stop()
	bg := context.Background()
	in.callCtx.Store(&bg)
	defer in.stdout.take()
	defer in.stderr.take()
	switch {
	case err != nil && isPluginError(in, err):
		return nil, fmt.Errorf("%s: failed: %v", export, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", export, m.loadError(ctx, in, err, reason))
	case rc != 0:
		return nil, fmt.Errorf("%s: returned %d", export, rc)
	case len(out) > m.limits.MaxOutput:
		return nil, fmt.Errorf("%s: tool list is %d bytes, over the output limit of %d", export, len(out), m.limits.MaxOutput)
	}
	return out, nil
}

// runStart runs the plugin's start function, which the instrumentation pass
// moved out of instantiation, under the meter: in wasm it runs before
// anything else, so before the SDK's _initialize and the listing.
func (x *extismPlugin) runStart(ctx context.Context, in *instance) error {
	m := x.m
	if m.instrumented.StartExport == "" {
		return nil
	}
	fn := in.mod.ExportedFunction(m.instrumented.StartExport)
	if fn == nil {
		return nil
	}
	stop := in.meter.Start(ctx, m.limits.Fuel)
	_, err := fn.Call(ctx)
	if _, reason := stop(); err != nil {
		return fmt.Errorf("start function: %w", m.loadError(ctx, in, err, reason))
	}
	return nil
}

// isPluginError tells an error the plugin set with error_set (which the
// SDK returns as a plain error with its text) from a failure of the call.
func isPluginError(in *instance, err error) bool {
	msg := in.ext.plugin.GetError()
	return msg != "" && err.Error() == msg
}

// newInstance instantiates the plugin (kernel and main module) without
// running any of its code.
func (x *extismPlugin) newInstance(ctx context.Context) (*instance, error) {
	m := x.m
	in, config := m.newShell(ctx)
	ext := &extismInstance{}
	if x.fs != nil {
		// One preopen, "/", whose every operation is a warden.fs request
		// under the grants of the call in progress (extism_fs.go). The
		// manifest's AllowedPaths stays empty: the SDK would mount host
		// directories that bypass the deny-list.
		ext.files = newGuardedFS(in, x.fs)
		config = config.WithFSConfig(wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(ext.files, "/"))
	}
	// Every memory of the instance (the kernel's and the plugin's) gets the
	// tool's limit, and a refusal marks the call out of memory.
	allocCtx := experimental.WithMemoryAllocator(ctx, extismAllocator{limit: m.limits.Memory, refused: &in.memory.refused, acct: in.memory.acct})
	p, err := x.compiled.Instance(allocCtx, extism.PluginInstanceConfig{ModuleConfig: config})
	if err != nil {
		in.memory.acct.close()
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	ext.plugin = p
	in.ext = ext
	if in.mod, err = mainModule(p); err != nil {
		in.close(ctx)
		return nil, err
	}
	if err := m.adopt(ctx, in); err != nil {
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
func mainModule(p *extism.Plugin) (api.Module, error) {
	v := reflect.ValueOf(p.Module()).Elem()
	if v.Kind() == reflect.Struct && v.NumField() == 1 && v.Field(0).Type() == reflect.TypeFor[api.Module]() {
		f := v.Field(0)
		if mod, ok := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(api.Module); ok && mod != nil {
			return mod, nil
		}
	}
	return nil, errors.New("extism SDK: cannot reach the plugin's main module (has the SDK's Module type changed?)")
}

// freshInstance makes an instance in the plugin's initial state. The SDK
// runs a plugin's start-up before the first call of each instance and
// offers no way to mark it done, so a new instance runs it (with the tool
// listing) once; the snapshot then replaces whatever that left.
func (x *extismPlugin) freshInstance(ctx context.Context) (*instance, error) {
	m := x.m
	initCtx, cancel := context.WithTimeout(ctx, m.limits.LoadBudget)
	defer cancel()
	in, err := x.newInstance(initCtx)
	if err != nil {
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: %v", m.name, err)
	}
	if _, err := x.list(initCtx, in); err != nil {
		in.close(context.Background())
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: %v", m.name, err)
	}
	in.random.settle()
	if m.snapshot != nil && !x.restore(in) {
		in.close(context.Background())
		return nil, tool.Errorf(tool.KindInternal, "instantiate %s: cannot restore its initial state", m.name)
	}
	return in, nil
}

// reset returns in to the plugin's initial state, or reports that it
// cannot.
func (x *extismPlugin) reset(in *instance) bool {
	return x.m.snapshot != nil && x.restore(in)
}

// restore copies the snapshot into the main module and the kernel's
// initial memory into the kernel, and forgets the plugin's vars and last
// HTTP response. A kernel whose memory grew cannot be shrunk back, so that
// instance is replaced instead.
func (x *extismPlugin) restore(in *instance) bool {
	kmem := in.ext.plugin.Memory()
	if int(kmem.Size()) != len(x.kernel) || !x.m.snapshot.restore(in) {
		return false
	}
	view, ok := kmem.Read(0, kmem.Size())
	if !ok {
		return false
	}
	copy(view, x.kernel)
	p := in.ext.plugin
	clear(p.Var)
	clear(p.LastResponseHeaders)
	p.LastStatusCode = 0
	return true
}

func (x *extismPlugin) close(ctx context.Context) error { return x.compiled.Close(ctx) }

// run is Module.run for a plugin: it calls the plugin's call export with
// the request in the plugin's shape and returns its result in the native
// one.
func (x *extismPlugin) run(ctx context.Context, in *instance, req tool.Request) ([]byte, *tool.Error, error) {
	_, export := x.shape.exports()
	input := x.callInput(req)
	if f := in.ext.files; f != nil {
		// Files stay open for one call only: a later call, under other
		// grants, must not read what this one was allowed to.
		defer f.endCall()
	}
	rc, out, err := in.ext.plugin.CallWithContext(ctx, export, input)
	state, _ := ctx.Value(callStateKey{}).(*callState)
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
	raw, respErr := extismResponse(out, x.m.limits.MaxOutput, req.Tool, state.denial)
	return raw, respErr, nil
}

// callInput is the call export's input for req in the plugin's shape.
func (x *extismPlugin) callInput(req tool.Request) []byte {
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
func pluginFailure(state *callState, name, msg string) []byte {
	b, _ := json.Marshal(struct {
		Error *tool.Error `json:"error"`
	}{failureError(name, msg, state.denial)})
	return b
}

// failureError is the error of a call the plugin reported failed. When
// warden refused one of the call's file or config requests, the refusal is
// the likely cause and the call is denied.
func failureError(name, msg string, denial *tool.Error) *tool.Error {
	if denial != nil {
		return tool.Errorf(tool.KindDenied, "%s failed after warden refused it: %s (the plugin said: %s)", name, denial.Message, msg)
	}
	return tool.Errorf(tool.KindFailed, "%s", msg)
}

// extismResult is the part of an MCP CallToolResult warden reads.
type extismResult struct {
	Content           json.RawMessage `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// extismResponse converts a plugin's CallToolResult (both shapes return
// one) into the native response, which Tool.decodeResponse then validates
// like any other. isError becomes a "failed" error (denied after a denial)
// carrying the plugin's content; its first text block is the message.
func extismResponse(out []byte, limit int, name string, denial *tool.Error) ([]byte, *tool.Error) {
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
				msg = firstLines(b.Text, 3)
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
	acct    *memAccount
}

var _ experimental.MemoryAllocator = extismAllocator{}

func (a extismAllocator) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	fm := &flaggedMemory{limitedMemory: limitedMemory{limit: a.limit, acct: a.acct}, refused: a.refused}
	fm.limitedMemory.Allocate(capacity, maximum)
	return fm
}

type flaggedMemory struct {
	limitedMemory
	refused *atomic.Bool
}

func (f *flaggedMemory) Reallocate(size uint64) []byte {
	b := f.limitedMemory.Reallocate(size)
	if b == nil {
		f.refused.Store(true)
	}
	return b
}

// moveImports returns wasm with the function imports from.name (names[name]
// true) imported from to instead, every other byte unchanged.
func moveImports(wasm []byte, from, to string, names map[string]bool) ([]byte, error) {
	mod, err := wb.Parse(wasm)
	if err != nil {
		return nil, err
	}
	s := mod.Section(wb.SectionImport)
	if s == nil {
		return wasm, nil
	}
	// Decoded first for its checks: the loop below only measures entries.
	if _, err := mod.SectionReader(s).Imports(); err != nil {
		return nil, err
	}
	r := mod.SectionReader(s)
	n, err := r.Count()
	if err != nil {
		return nil, err
	}
	out := wb.AppendU32(make([]byte, 0, len(s.Payload)+64), n)
	moved := false
	for range n {
		module, err := r.Name()
		if err != nil {
			return nil, err
		}
		name, err := r.Name()
		if err != nil {
			return nil, err
		}
		start := r.Pos()
		if err := skipImportDesc(r); err != nil {
			return nil, err
		}
		if module == from && names[name] {
			module, moved = to, true
		}
		out = wb.AppendName(wb.AppendName(out, module), name)
		out = append(out, mod.Bytes[start:r.Pos()]...)
	}
	if err := r.End("import section"); err != nil {
		return nil, err
	}
	if !moved {
		return wasm, nil
	}
	mod.SetSection(wb.SectionImport, out)
	return mod.Encode(), nil
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
