package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-run/warden/runtime/internal/codecache"
	"github.com/warden-run/warden/runtime/internal/guest"
)

// Tiered loads (Options.Tiered). wazero's optimizing compiler needs seconds
// for a Go guest; its interpreter compiles the same module in a fraction of
// that. A tiered load of a native module compiles its instrumented bytes
// with the interpreter first, runs the load-time instance (start-up,
// describe, snapshot) and the first calls there, and compiles the same
// bytes with the optimizing compiler in the background. Fuel, call depth
// and deadlines are wasm the instrumentation pass wrote, so both tiers
// meter alike, unit for unit (TestTiersAgree). Once the compiler is done,
// new instances come from its code and the pool retires the interpreter's
// as they come back from their calls (never during one); a session keeps
// its instance, and its state, until it ends. A module whose compiled code
// the disk cache already holds is loaded compiled at once.

// Tier is the code an instance runs.
type Tier string

// Tiers.
const (
	TierInterpreter Tier = "interpreter"
	TierCompiler    Tier = "compiler"
)

// code is one tier's compiled module and the wazero runtime that
// instantiates it (each holds WASI and the warden host module).
type code struct {
	wz       wazero.Runtime
	compiled wazero.CompiledModule
	tier     Tier
}

// TierStats counts what tiered loads did (Runtime.TierStats).
type TierStats struct {
	// Calls served by instances of each tier, tiered or not.
	InterpreterCalls, CompilerCalls uint64
	// Swaps counts tiered loads whose compiled code took over; Failed
	// those whose background compile failed (the interpreter keeps
	// serving them).
	Swaps, Failed uint64
}

// tierCounters are a Runtime's TierStats.
type tierCounters struct {
	interpreterCalls, compilerCalls, swaps, failed atomic.Uint64
}

// TierStats reports the calls each tier served and the tiered loads that
// swapped to compiled code or failed to.
func (r *Runtime) TierStats() TierStats {
	c := &r.tierCounters
	return TierStats{InterpreterCalls: c.interpreterCalls.Load(), CompilerCalls: c.compilerCalls.Load(),
		Swaps: c.swaps.Load(), Failed: c.failed.Load()}
}

// served counts a call served by an instance of c.
func (r *Runtime) served(c *code) {
	if c.tier == TierInterpreter {
		r.tierCounters.interpreterCalls.Add(1)
	} else {
		r.tierCounters.compilerCalls.Add(1)
	}
}

// newInterpreter returns the wazero runtime of the interpreter tier, with
// WASI and the warden host module, as New sets up the compiler's.
func (r *Runtime) newInterpreter(ctx context.Context) (wazero.Runtime, error) {
	wz := wazero.NewRuntimeWithConfig(ctx, interpreterConfig())
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, wz); err != nil {
		wz.Close(ctx)
		return nil, fmt.Errorf("instantiate WASI (interpreter tier): %w", err)
	}
	if err := r.instantiateHostModule(ctx, wz); err != nil {
		wz.Close(ctx)
		return nil, fmt.Errorf("interpreter tier: %w", err)
	}
	return wz, nil
}

// interpreterConfig is the configuration of a wazero runtime on the
// interpreter: like the compiler's, but a guest is stopped when its call's
// context is done by wazero itself, not by the Meter's watchdog
// (instrument.Meter.EngineStopsOnDone says why).
func interpreterConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(65536).WithCloseOnContextDone(true)
}

// firstTier compiles wasm, instrumented, for a load: with the interpreter
// when the load is tiered and the disk cache does not hold its compiled
// code yet, else with the compiler. tiered reports the former. id names
// wasm (compiledMarks).
func (r *Runtime) firstTier(ctx context.Context, id string, wasm []byte, budget time.Duration) (c *code, tiered bool, err error) {
	if r.interp == nil || r.compiledMarks.has(id) {
		compiled, err := r.compile(ctx, wasm, budget)
		if err != nil {
			return nil, false, err
		}
		return &code{wz: r.wz, compiled: compiled, tier: r.wzTier}, false, nil
	}
	compiled, err := r.compileWith(ctx, nil, budget, func(ctx context.Context) (wazero.CompiledModule, error) {
		return r.interp.CompileModule(ctx, wasm)
	})
	if err != nil {
		return nil, false, err
	}
	return &code{wz: r.interp, compiled: compiled, tier: TierInterpreter}, true, nil
}

// overBudget marks a load-time failure for want of time: the one failure
// that may differ between tiers (the interpreter is slower), after which
// a tiered load is done again compiled.
type overBudget struct{ error }

func (e *overBudget) Unwrap() error { return e.error }

// compileInBackground compiles e's module with the optimizing compiler,
// under the module's compile budget and the runtime's compile slots, and
// hands the result to e.swap. Runtime.Close waits for it; once Close has
// begun, a compile still waiting for a slot gives up.
func (e *native) compileInBackground(retire func()) {
	r := e.rt
	if !r.startCompile() {
		e.swap(nil, errors.New("the runtime is closing"), retire)
		return
	}
	go func() {
		defer r.compiles.Done()
		if hook := r.testHooks.background; hook != nil {
			hook(e.spec.Name)
		}
		var end func()
		if r.codeGuard != nil && !r.cacheFailed.Load() {
			end = r.codeGuard.Begin()
		}
		// Close waits for a compile that has started, which fills the disk
		// cache for the next start; one still waiting for a slot gives up.
		compiled, err := r.compileWith(context.Background(), r.closingCtx.Done(), e.spec.Limits.CompileBudget, r.optimizing(e.instrumented.Wasm))
		if end != nil {
			end()
		}
		if err == nil && r.cacheDir != "" && !r.cacheFailed.Load() {
			r.compiledMarks.put(e.id)
		}
		e.swap(compiled, err, retire)
	}()
}

// ForOneShot tells r that its process ends after a few calls (warden
// tools, warden call): a tiered load then starts no background compile.
// The compiled code would never serve this process, which would instead
// spend its CPU compiling (slowing the interpreted start-up of the other
// modules) and wait for it at Close, minutes on a busy machine for four
// modules; the interpreter serves what it loads, and a long-lived process
// (serve) or `warden cache warm` fills the compile cache. Modules the
// cache holds compiled still load compiled. Call it before loading.
func (r *Runtime) ForOneShot() { r.oneShot.Store(true) }

// startCompile counts a background compile in, unless Close has begun.
func (r *Runtime) startCompile() bool {
	r.loadsMu.Lock()
	defer r.loadsMu.Unlock()
	if r.closing {
		return false
	}
	r.compiles.Add(1)
	return true
}

// swap makes compiled e's code for new instances and has the pool retire
// the interpreter's idle ones (retire); a failed compile leaves the
// interpreter serving, and says so.
func (e *native) swap(compiled wazero.CompiledModule, err error, retire func()) {
	r := e.rt
	if hook := r.testHooks.swapped; hook != nil {
		defer hook(e.spec.Name, err)
	}
	e.mu.Lock()
	if err != nil {
		e.tierErr = err
		e.mu.Unlock()
		if r.closingCtx.Err() != nil {
			return // shutting down: nothing to report
		}
		r.tierCounters.failed.Add(1)
		r.log.Warn("module keeps running on the interpreter: its background compile failed", "module", e.spec.Name, "error", err)
		return
	}
	if e.closed {
		e.mu.Unlock()
		compiled.Close(context.Background())
		return
	}
	interpreted := e.code.Swap(&code{wz: r.wz, compiled: compiled, tier: TierCompiler})
	e.mu.Unlock()
	// No instance is made from the interpreter's code from now on: its
	// compiled form goes, and with its last instance (retired below, or as
	// calls and sessions end) so does the memory it holds, which every
	// garbage collection would otherwise keep marking.
	interpreted.compiled.Close(context.Background())
	r.tierCounters.swaps.Add(1)
	r.log.Info("module now runs compiled code", "module", e.spec.Name)
	retire()
}

// Stale reports whether in runs code that is no longer the module's
// newest: the pool retires it instead of keeping it.
func (e *native) Stale(in *guest.Instance) bool { return in.Code != e.code.Load() }

// Tier is the tier new instances of m are made from ("" when m has no
// body loaded, or its kind is not tiered), and the error of its background
// compile, if that failed.
func (m *Module) Tier() (Tier, error) {
	b := m.loaded()
	if b == nil {
		return "", nil
	}
	e, ok := b.engine.(*native)
	if !ok {
		return "", nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.code.Load().tier, e.tierErr
}

// compiledMarks remembers, in <cache dir>/compiled, which instrumented
// modules the disk cache holds compiled code for, so that a tiered load
// of one of them compiles it at once (a cache read) instead of
// interpreting it first. A mark is only a hint: one whose entry is gone
// costs a compile, as a load without tiering does. Its name is the sha256
// of the compiler (wazero's version, the platform) and of what was
// compiled: the instrumentation's cache key (the module's digest, the
// loader, the pass's version and config), which names the pass's output
// without hashing megabytes of it on every load. A nil *compiledMarks (no
// disk cache) holds nothing.
type compiledMarks struct {
	dir  string
	salt string
	// used hears of every mark read or written, for the cache's
	// least-recently-used pruning (cache.go); nil hears nothing.
	used func(path string, wrote bool)
}

func newCompiledMarks(cacheDir string, used func(path string, wrote bool)) *compiledMarks {
	if cacheDir == "" {
		return nil
	}
	salt := goruntime.GOOS + "/" + goruntime.GOARCH
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/tetratelabs/wazero" {
				salt += "/" + dep.Version
			}
		}
	}
	return &compiledMarks{dir: filepath.Join(cacheDir, codecache.PartCompiled), salt: salt, used: used}
}

func (c *compiledMarks) name(id string) string {
	sum := sha256.Sum256([]byte(c.salt + "\n" + id))
	return filepath.Join(c.dir, hex.EncodeToString(sum[:]))
}

func (c *compiledMarks) has(id string) bool {
	if c == nil {
		return false
	}
	name := c.name(id)
	info, err := os.Lstat(name)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	if c.used != nil {
		c.used(name, false)
	}
	return true
}

// put marks wasm compiled; a mark that cannot be written costs the next
// start an interpreted first load, nothing else.
func (c *compiledMarks) put(id string) {
	if c == nil {
		return
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return
	}
	if f, err := os.OpenFile(c.name(id), os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.Close()
		if c.used != nil {
			c.used(c.name(id), true)
		}
	}
}
