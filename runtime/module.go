package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/runtime/internal/guest"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
	"github.com/warden-run/warden/tool"
)

// ABIVersion is the tool ABI this runtime speaks (docs/abi.md).
const ABIVersion = 1

// Module is a loaded tool module: compiled, checked, described, and ready to
// call. It is safe for concurrent use.
type Module struct {
	rt     *Runtime
	name   string
	sha256 string
	limits Limits
	// kind is what the loader that accepted the module decided it is
	// (guest.Loaded.Kind).
	kind     guest.Kind
	imports  []string
	exports  []string
	tools    []*Tool
	rejected []Rejection
	pool     *pool
	// engine makes, resets and runs the module's instances: the native
	// ABI's (native.go) or an Extism plugin's (internal/extism), chosen at
	// load by Runtime.loaders. Nothing else depends on the kind.
	engine guest.Engine
	// maxCallDepth is the call depth the instrumentation enforces, for
	// stack overflow messages.
	maxCallDepth uint32
	// pinned is set by the Registry (see Registry.Put).
	pinned pinState
	// descriptorDoc is the descriptor document the tools were built from.
	descriptorDoc []byte
	// features are the resources, templates and prompts it declares
	// (resources.go); never nil once described.
	features *tool.Features
	// lazy is set for a module opened by Runtime.Open (lazy.go): its code
	// is in a body Module loaded on first use; pool and engine are then
	// unset.
	lazy *lazy
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
	if m.lazy != nil {
		return m.lazy.exports
	}
	return m.exports
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
	// The module is parsed once: each loader's detection, its import checks
	// and the instrumentation pass read this one parse (RATIONALE.md,
	// "Loaders: one interface, one parse").
	mod, err := wb.Parse(wasm)
	if err != nil {
		return nil, fmt.Errorf("invalid module: %w", err)
	}
	var loader guest.Loader
	for _, l := range r.loaders {
		if l.Claims(mod) {
			loader = l
			break
		}
	}
	if r.codeGuard != nil && !r.cacheFailed.Load() {
		end := r.codeGuard.Begin()
		defer end()
	}
	// The load-time instance is charged to the budget like any other.
	acct := &memAccount{b: r.budget}
	loaded, err := loader.Load(withAccount(ctx, acct), guest.Spec{Name: name, SHA256: m.sha256, Limits: limits.guest()}, mod)
	if err != nil {
		acct.close()
		return nil, err
	}
	err = m.describe(loaded.Descriptor)
	if err == nil {
		err = m.checkOps(loaded.Engine)
	}
	if err != nil {
		loaded.First.Close(context.Background())
		loaded.Engine.Close(ctx)
		acct.close()
		return nil, err
	}
	m.kind, m.engine, m.imports, m.exports, m.maxCallDepth = loaded.Kind, loaded.Engine, loaded.Imports, loaded.Exports, loaded.MaxCallDepth
	m.pool = newPool(m)
	m.pool.putLoaded(m.pool.adopt(loaded.First))
	return m, nil
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
		var c wazero.CompiledModule
		err := r.throughCache(func() (err error) {
			c, err = r.compileModule(context.WithoutCancel(ctx), wasm)
			return err
		})
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

// compileModule is wazero's CompileModule, or a test's stand-in for it.
func (r *Runtime) compileModule(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	if r.testHooks.compile != nil {
		return r.testHooks.compile(ctx, wasm)
	}
	return r.wz.CompileModule(ctx, wasm)
}

// maxCacheRetries bounds throughCache's retries: each finds one more module
// in memory, and an Extism plugin compiles two (the SDK's kernel and the
// plugin itself).
const maxCacheRetries = 3

// throughCache runs compile, which compiles through the disk cache, and
// runs it again while it fails with the cache's error (cacheFailure).
// wazero keeps each module it compiled in memory before it writes the
// module to the disk cache, so a retry finds it there and goes on.
func (r *Runtime) throughCache(compile func() error) error {
	err := compile()
	for retries := 0; err != nil && retries < maxCacheRetries && r.cacheFailure(err); retries++ {
		err = compile()
	}
	return err
}

// pluginThroughCache is throughCache for the engines Extism plugins make
// (guest.Host.ThroughCache), through a test's hook when one is set.
func (r *Runtime) pluginThroughCache(compile func() error) error {
	if hook := r.testHooks.pluginCompile; hook != nil {
		inner := compile
		compile = func() error { return hook(inner) }
	}
	return r.throughCache(compile)
}

// cacheFailure reports whether err, from a compile, is the disk cache's
// I/O error (a full or read-only filesystem: wazero's validation and
// compile errors are never file errors). The first one is logged, once;
// loads then skip the cache's checks, and every compile that meets the
// error again is retried from memory.
func (r *Runtime) cacheFailure(err error) bool {
	if r.cacheDir == "" {
		return false
	}
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	var errno syscall.Errno
	if !errors.As(err, &pathErr) && !errors.As(err, &linkErr) && !errors.As(err, &errno) {
		return false
	}
	r.cacheFailed.Store(true)
	r.cacheWarn.Do(func() {
		r.log.Warn("compile cache failed; running without it: compiled code is kept in memory only until restart (free space, or set tools.cache_dir to a writable dir, or off)",
			"dir", r.cacheDir, "error", err)
	})
	return true
}

// describe parses and validates the descriptor JSON. A bad descriptor
// document fails the module; a bad tool inside it is rejected alone.
func (m *Module) describe(raw []byte) error {
	m.descriptorDoc = raw
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("descriptor is not valid JSON of the form {\"tools\": [...]}: %w", err)
	}
	features, err := tool.ParseFeatures(raw)
	if err != nil {
		return fmt.Errorf("descriptor: %w", err)
	}
	m.features = features
	if len(doc.Tools) == 0 && features.Empty() {
		return errors.New(`descriptor lists no tools, resources or prompts`)
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
	if len(m.tools) == 0 && len(m.rejected) > 0 {
		reasons := make([]string, len(m.rejected))
		for i, r := range m.rejected {
			reasons[i] = r.Reason.Error()
		}
		return fmt.Errorf("no valid tools: %s", strings.Join(reasons, "; "))
	}
	return m.checkFeatureTools()
}

// EndSession discards the instance kept for a client session (IsolationSession).
func (m *Module) EndSession(ctx context.Context, session string) {
	if m.lazy != nil {
		if body := m.bodyOf(); body != nil {
			body.EndSession(ctx, session)
		}
		return
	}
	m.pool.endSession(ctx, session)
}

// Close releases the module's instances and compiled code.
func (m *Module) Close(ctx context.Context) error {
	if m.lazy != nil {
		return m.closeLazy(ctx)
	}
	m.pool.close(ctx)
	return m.engine.Close(ctx)
}
