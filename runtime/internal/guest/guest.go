// Package guest is what every loader of the runtime shares: the loader
// interface itself, the host side of an instance (memory allocator,
// captured output, random source, snapshot), and the state of the call a
// host function serves.
//
// A loader (the native tool ABI in package runtime, Extism plugins in
// runtime/internal/extism) owns its module kind's parse, instantiate,
// snapshot and reset; package runtime owns everything kind-neutral: limits,
// descriptors, the pool and the call path, which never asks which kind of
// module it runs.
package guest

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/runtime/internal/instcache"
	"github.com/warden-run/warden/runtime/internal/instrument"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
	"github.com/warden-run/warden/tool"
)

// Kind is the kind of a module: which loader's rules it was loaded under.
// It is decided in one place, by the Loader that loads the module
// (Loaded.Kind), and written into the module's descriptor manifest.
type Kind string

// Kinds of module.
const (
	// KindNative is warden's own tool ABI (docs/abi.md).
	KindNative Kind = "native"
	// KindExtism is an Extism plugin (runtime/internal/extism).
	KindExtism Kind = "extism"
)

// Loader turns a module of one kind into an Engine.
type Loader interface {
	// Claims reports whether mod is of the loader's kind. It must not
	// change mod. The runtime asks its loaders in order; the last one
	// (native) claims everything.
	Claims(mod *wb.Module) bool
	// Load checks, instruments, compiles and initializes mod. It consumes
	// mod: the instrumentation pass rewrites it in place. The returned
	// Loaded holds the first instance, already in the initial state.
	Load(ctx context.Context, spec Spec, mod *wb.Module) (*Loaded, error)
}

// Engine makes and runs the instances of one loaded module. It is safe for
// concurrent use; an instance is used by one call at a time.
type Engine interface {
	// NewInstance returns an instance in the module's initial state (the
	// state right after its start-up), or an error of kind internal.
	NewInstance(ctx context.Context) (*Instance, error)
	// Reset returns in to the initial state, or reports that it cannot;
	// the caller then discards in.
	Reset(in *Instance) bool
	// Run runs one request on in and returns the response in the native
	// shape (docs/abi.md, "Response"), or respErr when warden refuses the
	// response itself. err is a failure of the guest, for the call path to
	// classify (trap.Classify, the meter's stop reason, Memory.Refused).
	Run(ctx context.Context, in *Instance, req tool.Request) (raw []byte, respErr *tool.Error, err error)
	// Close releases the compiled code; the instances are closed first.
	Close(ctx context.Context) error
}

// MaxMemory is the most linear memory wasm32 can address.
const MaxMemory = 4 << 30

// Spec is what a loader is asked to load.
type Spec struct {
	Name   string // the module's name, for messages
	SHA256 string // hex digest of the bytes as loaded
	Limits Limits
}

// Limits are the bounds of runtime.Limits a loader applies, defaults
// filled in.
type Limits struct {
	Memory        uint64
	Fuel          int64
	LoadBudget    time.Duration
	CompileBudget time.Duration
	MaxOutput     int
	CaptureBytes  int
	LogBytes      int
	LogLines      int
	// FuelHint ends a load's out-of-fuel error: the setting that raises
	// Fuel ("; raise tools.limits.m.fuel (now ...)"), or "".
	FuelHint string
}

// Loaded is a module a loader loaded.
type Loaded struct {
	// Kind is the loader's kind: what it decided the module is. Nothing
	// else in the runtime decides it.
	Kind   Kind
	Engine Engine
	// First is the load-time instance, in the initial state, for the pool.
	First *Instance
	// Descriptor is the module's tool list, {"tools": [...]}, for the
	// runtime's descriptor checks.
	Descriptor []byte
	// Imports lists the module's imports as "module.name", sorted.
	Imports []string
	// Exports lists its exported functions and memories, sorted.
	Exports []string
	// MaxCallDepth is the call depth the instrumentation enforces.
	MaxCallDepth uint32
}

// Host is what the runtime lends a loader that is not its own package.
type Host struct {
	Wazero wazero.Runtime
	// Config is Wazero's configuration, for engines a loader makes itself.
	Config       wazero.RuntimeConfig
	Capabilities map[string]hostfuncs.Capability
	Log          *slog.Logger
	// Compile compiles wasm within budget, in one of the runtime's compile
	// slots (Runtime.compile).
	Compile func(ctx context.Context, wasm []byte, budget time.Duration) (wazero.CompiledModule, error)
	// ThroughCache runs compile, which compiles through Config's disk
	// cache in an engine the loader made itself, again after the cache
	// failed to store what it compiled (a full or read-only disk): the
	// cache is an optimisation, never a reason for a load to fail.
	ThroughCache func(compile func() error) error
	// Instrumented keeps the instrumentation pass's output across loads
	// (nil keeps nothing); Passes counts the passes run.
	Instrumented *instcache.Store
	Passes       atomic.Int64
}

// Instrument returns the instrumentation pass's output for mod under cfg:
// from h.Instrumented when a load of the same bytes by the same loader
// stored it, else by running the pass (and storing its output). loader
// names the loader and the edits it made to mod before the pass.
func (h *Host) Instrument(spec Spec, loader string, mod *wb.Module, cfg instrument.Config) (*instrument.Result, error) {
	key := instcache.Key(spec.SHA256, loader, cfg)
	if res, ok := h.Instrumented.Get(key); ok {
		return res, nil
	}
	h.Passes.Add(1)
	res, err := instrument.InstrumentModule(mod, cfg)
	if err != nil {
		return nil, err
	}
	h.Instrumented.Put(key, res)
	return res, nil
}

// maxFuncName bounds a function name (the module's text) quoted in a
// message.
const maxFuncName = 64

// StartFunction names the start function of compiled (exported by the
// instrumentation pass as instrument.StartExport) for messages, as the
// module's own tools would: `start function (func 3 $spin)`, by its index
// in the function index space and, when the module's name section has one,
// its name, escaped since the module wrote it.
func StartFunction(compiled wazero.CompiledModule) string {
	def, ok := compiled.ExportedFunctions()[instrument.StartExport]
	if !ok {
		return "start function"
	}
	if name := def.Name(); name != "" {
		return fmt.Sprintf("start function (func %d $%s)", def.Index(), termsafe.Bound(name, maxFuncName, false))
	}
	return fmt.Sprintf("start function (func %d)", def.Index())
}

// ExportNames lists compiled's exported functions and memories, sorted,
// without what the instrumentation pass added.
func ExportNames(compiled wazero.CompiledModule) []string {
	var names []string
	for name := range compiled.ExportedFunctions() {
		if name == instrument.StartExport {
			continue // the module's start function, exported by the pass
		}
		names = append(names, name)
	}
	for name := range compiled.ExportedMemories() {
		// The instrumentation pass adds no memories, only "warden:" globals
		// (and warden:start, skipped above), which this list leaves out.
		names = append(names, name+" (memory)")
	}
	slices.Sort(names)
	return names
}
