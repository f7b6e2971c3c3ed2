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

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/runtime/internal/guest"
	wb "github.com/warden-run/warden/runtime/internal/wasmbin"
	"github.com/warden-run/warden/tool"
)

// ABIVersion is the tool ABI this runtime speaks (docs/abi.md).
const ABIVersion = 1

// Module is a listed tool module: what it is (its name, digest and kind,
// as the loader that accepted it decided) and what it offers (tools,
// rejected tools, resources and prompts, from its descriptor document, read
// from a load or from its cached manifest). The code that serves its calls
// is its body, which the Module holds: loaded at once by Load, or on the
// first call by a Module that Open listed from a manifest, and released
// when idle (lazy.go). It is safe for concurrent use.
type Module struct {
	rt     *Runtime
	name   string
	sha256 string
	limits Limits
	// What the module lists, set once before the Module is returned (by its
	// first load or from its manifest) and never changed: every body
	// loaded later describes itself byte for byte as descriptor says
	// (Module.reload).
	listing
	// hold holds the module's body (lazy.go).
	hold hold
}

// listing is what a module lists, from a load or from its manifest.
type listing struct {
	// kind is what the loader that accepted the module decided it is
	// (guest.Loaded.Kind).
	kind    guest.Kind
	imports []string
	exports []string
	// descriptor is the descriptor document the tools were built from.
	descriptor []byte
	tools      []*Tool
	rejected   []Rejection
	// features are the resources, templates and prompts it declares
	// (resources.go); never nil once described.
	features *tool.Features
}

// body is a module's loaded code: its engine, which makes, resets and runs
// its instances (the native ABI's, native.go, or an Extism plugin's,
// internal/extism, chosen at load by Runtime.loaders; nothing else depends
// on the kind), and the pool of those instances. A Module holds at most
// one body at a time; the call path runs on it.
type body struct {
	m      *Module
	engine guest.Engine
	pool   *pool
	// maxCallDepth is the call depth the instrumentation enforces, for
	// stack overflow messages.
	maxCallDepth uint32
}

// close releases the body's instances and compiled code.
func (b *body) close(ctx context.Context) error {
	b.pool.close(ctx)
	return b.engine.Close(ctx)
}

// Tool is one tool provided by a Module.
type Tool struct {
	Descriptor tool.Descriptor
	schemas    *schema.Schemas
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
func (m *Module) Exports() []string { return m.exports }

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
// The module's body is loaded now and kept until Close: with no bytes to
// load it again from, it is never released when idle (Open's modules are).
func (r *Runtime) Load(ctx context.Context, name string, wasm []byte, limits Limits) (*Module, error) {
	sum := sha256.Sum256(wasm)
	m, err := r.newModule(name, hex.EncodeToString(sum[:]), limits)
	if err != nil {
		return nil, err
	}
	b, l, err := m.loadBody(ctx, wasm)
	if err != nil {
		return nil, err
	}
	m.listing = *l
	m.hold.body, m.hold.lastUsed = b, time.Now()
	return m, nil
}

// newModule returns an empty Module of r, its limits checked and their
// defaults filled in.
func (r *Runtime) newModule(name, sum string, limits Limits) (*Module, error) {
	if err := limits.Validate(); err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	return &Module{rt: r, name: name, sha256: sum, limits: limits.WithDefaults()}, nil
}

// loadBody compiles, checks and starts wasm, the bytes of m, and returns
// its body and what it lists. The kind is the accepting loader's to decide
// (guest.Loaded.Kind); the listing records it.
func (m *Module) loadBody(ctx context.Context, wasm []byte) (*body, *listing, error) {
	r := m.rt
	// The module is parsed once: each loader's detection, its import checks
	// and the instrumentation pass read this one parse (RATIONALE.md,
	// "Loaders: one interface, one parse").
	mod, err := wb.Parse(wasm)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid module: %w", err)
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
	loaded, err := loader.Load(withAccount(ctx, acct), guest.Spec{Name: m.name, SHA256: m.sha256, Limits: m.limits.loadGuest()}, mod)
	if err != nil {
		acct.close()
		return nil, nil, err
	}
	l, err := m.describe(loaded.Descriptor)
	if err == nil {
		err = checkOps(l.features, loaded.Engine)
	}
	if err != nil {
		loaded.First.Close(context.Background())
		loaded.Engine.Close(ctx)
		acct.close()
		return nil, nil, err
	}
	l.kind, l.imports, l.exports = loaded.Kind, loaded.Imports, loaded.Exports
	b := &body{m: m, engine: loaded.Engine, maxCallDepth: loaded.MaxCallDepth}
	b.pool = newPool(m, loaded.Engine)
	b.pool.putLoaded(b.pool.adopt(loaded.First))
	if e, ok := loaded.Engine.(*native); ok && e.tiered && !r.oneShot.Load() {
		e.compileInBackground(b.pool.retireStale)
	}
	return b, l, nil
}

// compile compiles wasm within budget. wazero's compiler does not watch a
// context, so a compile past the budget is abandoned: it finishes in the
// background (the structural limits of the instrumentation pass keep that
// bounded) and its result is closed, while Load reports the refusal at
// once and other modules load meanwhile. Runtime.Close waits for it.
func (r *Runtime) compile(ctx context.Context, wasm []byte, budget time.Duration) (wazero.CompiledModule, error) {
	return r.compileWith(ctx, nil, budget, r.optimizing(wasm))
}

// optimizing is the optimizing compiler's compile of wasm, through the disk
// cache.
func (r *Runtime) optimizing(wasm []byte) func(context.Context) (wazero.CompiledModule, error) {
	return func(ctx context.Context) (c wazero.CompiledModule, err error) {
		err = r.throughCache(func() (err error) {
			c, err = r.compileModule(ctx, wasm)
			return err
		})
		return c, err
	}
}

// compileWith is compile with the compiler given (the interpreter's, for a
// tiered load's first tier): within budget and the compile slots. When
// giveUp is closed before a slot is free, the compile does not start (a
// background compile at Close).
func (r *Runtime) compileWith(ctx context.Context, giveUp <-chan struct{}, budget time.Duration, compile func(context.Context) (wazero.CompiledModule, error)) (wazero.CompiledModule, error) {
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
		case <-giveUp:
			return nil, errors.New("compile: not started: the runtime is closing")
		}
	}
	done := make(chan outcome, 1)
	r.compiles.Add(1)
	go func() {
		defer r.compiles.Done()
		defer func() { <-r.compileSlots }()
		c, err := compile(context.WithoutCancel(ctx))
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
	if r.codeGuard != nil && r.wzTier == TierCompiler && !r.cacheFailed.Load() {
		// A warm load: compiled code the guard verified, for these very
		// bytes, need not be validated again (codecache.CompileVerified).
		if c, ok := r.codeGuard.CompileVerified(ctx, r.wz, wasm); ok {
			return c, nil
		}
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

// describe parses and validates the descriptor JSON into a listing of m
// (its kind, imports and exports unset). A bad descriptor document fails
// the module; a bad tool inside it is rejected alone.
func (m *Module) describe(raw []byte) (*listing, error) {
	l := &listing{descriptor: raw}
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("descriptor is not valid JSON of the form {\"tools\": [...]}: %w", err)
	}
	features, err := tool.ParseFeatures(raw)
	if err != nil {
		return nil, fmt.Errorf("descriptor: %w", err)
	}
	l.features = features
	if len(doc.Tools) == 0 && features.Empty() {
		return nil, errors.New(`descriptor lists no tools, resources or prompts`)
	}
	seen := make(map[string]bool)
	for i, rawTool := range doc.Tools {
		var d tool.Descriptor
		dec := json.NewDecoder(bytes.NewReader(rawTool))
		if err := dec.Decode(&d); err != nil {
			l.rejected = append(l.rejected, Rejection{Name: fmt.Sprintf("#%d", i), Reason: fmt.Errorf("tools[%d]: %w", i, err)})
			continue
		}
		schemas, err := schema.CompileDescriptor(&d)
		if err == nil {
			err = validateRequested(&d.Capabilities)
		}
		// Tool names are unique ignoring case: config keys fold case, so
		// "Echo" and "echo" would share a grant entry.
		if err == nil && seen[configkey.Fold(d.Name)] {
			err = fmt.Errorf("name %q is used by another tool of this module (names are unique ignoring case)", d.Name)
		}
		if err != nil {
			l.rejected = append(l.rejected, Rejection{Name: d.Name, Reason: fmt.Errorf("tool %q: %w", d.Name, err)})
			continue
		}
		seen[configkey.Fold(d.Name)] = true
		l.tools = append(l.tools, &Tool{Descriptor: d, schemas: schemas, module: m})
	}
	if len(l.tools) == 0 && len(l.rejected) > 0 {
		reasons := make([]string, len(l.rejected))
		for i, r := range l.rejected {
			reasons[i] = r.Reason.Error()
		}
		return nil, fmt.Errorf("no valid tools: %s", strings.Join(reasons, "; "))
	}
	if err := l.checkFeatureTools(); err != nil {
		return nil, err
	}
	return l, nil
}

// EndSession discards the instance kept for a client session (IsolationSession).
func (m *Module) EndSession(ctx context.Context, session string) {
	if b := m.loaded(); b != nil {
		b.pool.endSession(ctx, session)
	}
}
