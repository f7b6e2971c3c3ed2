package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/userdirs"
	"github.com/warden-run/warden/runtime/internal/codecache"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/runtime/internal/instcache"
	"github.com/warden-run/warden/runtime/internal/manifest"
)

// DefaultCacheDir is the compile cache used when Options.CacheDir is empty:
// warden in the user's cache directory (userdirs.CacheDir: $XDG_CACHE_HOME
// or ~/.cache on Linux, ~/Library/Caches on macOS, %LocalAppData% on
// Windows; the home from the user database when $HOME is missing).
func DefaultCacheDir() (string, error) {
	base, err := userdirs.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "warden"), nil
}

// Options configure a Runtime.
type Options struct {
	// CacheDir holds compiled code across processes. Empty means
	// DefaultCacheDir; "off" disables the disk cache
	// (compiled code is then shared in memory only).
	CacheDir string
	// Capabilities are served to guests as the imports warden.<Name>.
	Capabilities []hostfuncs.Capability
	// Logger receives load and call diagnostics; nil discards them.
	Logger *slog.Logger
	// Interpreter selects wazero's interpreter instead of its compiler. The
	// compiler is faster; the interpreter serves determinism tests.
	Interpreter bool
	// Tiered loads native modules on wazero's interpreter first, so that
	// describing them and their first calls do not wait for the compiler,
	// which compiles them in the background; its code then takes over
	// (tier.go). A module the disk cache holds compiled is loaded compiled
	// at once. Ignored with Interpreter.
	Tiered bool
	// CacheMax bounds the disk cache (CacheDir) in bytes: after a load
	// that wrote to it, the least recently used entries are removed until
	// it fits (0 means DefaultCacheMax). See PruneCache.
	CacheMax uint64
	// MaxInstanceMemory bounds the linear memory of all instances of all
	// modules together (0 means DefaultMaxInstanceMemory). When a new
	// instance or a growing one would pass it, idle instances are closed
	// first, then those sessions keep between calls, least recently used
	// first; only when every instance is running a call is the request
	// refused, with tool.KindUnavailable.
	MaxInstanceMemory uint64
	// TrimDelay is how long after instances close their memory is given
	// back to the OS (see trimmer): 0 means DefaultTrimDelay, a negative
	// value never. FreeOSMemory replaces debug.FreeOSMemory, for tests.
	TrimDelay    time.Duration
	FreeOSMemory func()

	// openDiskCache replaces wazero.NewCompilationCacheWithDir, so that a
	// test can fail it as a read-only filesystem does (export_test.go).
	openDiskCache func(dir string) (wazero.CompilationCache, error)
	// copySnapshots gives native modules snapshots that are copied into
	// every instance, as on every OS but Linux, so that tests run that
	// path on Linux (cowmem_export_test.go).
	copySnapshots bool
}

// Runtime compiles and instantiates tool modules. It is safe for concurrent
// use. Close releases everything it loaded.
type Runtime struct {
	wz wazero.Runtime
	// copySnapshots is Options.copySnapshots.
	copySnapshots bool
	// interp is the interpreter tier's runtime (Options.Tiered), nil
	// without tiering; compiledMarks tells which modules the disk cache
	// holds compiled (tier.go).
	interp wazero.Runtime
	// wzTier is wz's: the compiler's, or the interpreter's under
	// Options.Interpreter.
	wzTier        Tier
	compiledMarks *compiledMarks
	tierCounters  tierCounters
	// oneShot is set by ForOneShot: tiered loads start no background
	// compile.
	oneShot atomic.Bool
	// closingCtx ends when Close begins: background compiles still
	// waiting for a slot give up then.
	closingCtx   context.Context
	closingStart context.CancelFunc
	// wzConfig is wz's configuration, for the engines Extism plugins get
	// (the SDK makes one per plugin; the compilation cache is shared).
	wzConfig wazero.RuntimeConfig
	cache    wazero.CompilationCache
	// codeGuard checks the disk cache of compiled code around every load;
	// nil when there is none.
	codeGuard *codecache.Guard
	// cacheDir is the disk cache's dir ("" without one); cacheFailed is
	// set at its first write error (cacheFailure), from which on loads
	// keep their compiled code in memory only.
	cacheDir    string
	cacheFailed atomic.Bool
	cacheWarn   sync.Once
	// instrumented keeps instrumentation results beside the compiled code
	// (nil when there is no disk cache); host is what the loaders share.
	instrumented *instcache.Store
	host         *guest.Host
	capabilities map[string]hostfuncs.Capability
	log          *slog.Logger
	// compiles counts compiles in flight, abandoned ones included (see
	// compile): Close waits for them, since wazero must not be closed
	// under a compile.
	compiles sync.WaitGroup
	// compileSlots bounds the compiles running at once, abandoned ones
	// included: a slot is held until the compiler really returns, so a
	// module reloaded again and again while its compile overruns its budget
	// cannot stack up compiles that starve everything else.
	compileSlots chan struct{}
	// loaders load modules, the first that claims a module (loader.go).
	loaders []guest.Loader
	// manifests caches what modules expose, for Open (lazy.go).
	manifests *manifest.Store
	// loads counts lazy loads in flight, bodyLoads all loads Open did.
	loadsMu sync.Mutex
	closing bool // set by Close: no lazy load or spare starts after
	loads   sync.WaitGroup
	// spares counts spare instances being made in the background (pool's
	// warmLocked), of every module, under loadsMu: Close waits for them
	// (sparesDone), since closing wazero frees the memories a spare is
	// being restored into.
	spares     int
	sparesDone sync.Cond
	bodyLoads  atomic.Int64
	testHooks  testHooks
	// budget bounds the linear memory of every instance (budget.go).
	budget *budget
	// trim gives closed instances' memory back to the OS (trim.go).
	trim *trimmer
}

// New returns a Runtime with WASI and the warden host module instantiated.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Guests may address all of wasm32; each instance's own allocator enforces
	// its tool's memory limit, which lets the runtime tell out_of_memory apart
	// from any other failure. Deadlines and cancellation reach compiled
	// guests through the fuel check the instrumentation pass inserts (see
	// Meter), not through WithCloseOnContextDone, which costs a Go exit at
	// every loop header; interpreted ones through wazero (interpreterConfig).
	config := wazero.NewRuntimeConfigCompiler().WithMemoryLimitPages(65536)
	wzTier := TierCompiler
	if opts.Interpreter {
		config, wzTier = interpreterConfig(), TierInterpreter
	}

	r := &Runtime{capabilities: make(map[string]hostfuncs.Capability), log: logger, wzTier: wzTier,
		compileSlots: make(chan struct{}, goruntime.GOMAXPROCS(0)),
		manifests:    newManifestStore(opts.CacheDir, logger),
		budget:       newBudget(opts.MaxInstanceMemory), copySnapshots: opts.copySnapshots}
	r.sparesDone.L = &r.loadsMu
	if opts.CacheDir != "off" {
		dir := opts.CacheDir
		if dir == "" {
			var err error
			if dir, err = DefaultCacheDir(); err != nil {
				return nil, fmt.Errorf("compilation cache: %w (set a cache dir)", err)
			}
		}
		// Compiled code is run as trusted: the guard refuses a dir others
		// may write and removes entries it cannot vouch for (RATIONALE.md,
		// "Compiled-code cache integrity"). A refused dir costs compile
		// time, never service: compiled code is then kept in memory only.
		guard, err := codecache.Open(dir, logger)
		if err != nil {
			logger.Warn("compile cache not used; modules compile on every start", "error", err)
			// Manifests are not kept there either: memory only.
			r.manifests = newManifestStore("off", logger)
		} else {
			openDiskCache := wazero.NewCompilationCacheWithDir
			if opts.openDiskCache != nil {
				openDiskCache = opts.openDiskCache
			}
			cache, err := openDiskCache(dir)
			if err != nil {
				// A read-only or full filesystem: the cache is an
				// optimisation, so warden runs without it.
				logger.Warn("compile cache not used; modules compile on every start (set tools.cache_dir to a writable dir, or off)", "dir", dir, "error", err)
				r.manifests = newManifestStore("off", logger)
			} else {
				r.cache, r.codeGuard, r.cacheDir = cache, guard, dir
				r.instrumented = instcache.New(filepath.Join(dir, codecache.PartInstrumented), logger)
				config = config.WithCompilationCache(cache)
				r.boundCache(opts.CacheMax)
			}
		}
	}
	if r.cache == nil {
		// No disk cache, but engines still share compiled code in memory:
		// an Extism plugin's engine (the SDK makes its own) then finds the
		// code this runtime compiled for the load-time checks.
		r.cache = wazero.NewCompilationCache()
		config = config.WithCompilationCache(r.cache)
	}
	for _, c := range opts.Capabilities {
		if _, dup := r.capabilities[c.Name()]; dup {
			return nil, fmt.Errorf("capability %q registered twice", c.Name())
		}
		if c.Name() == "log" || c.Name() == "progress" {
			return nil, fmt.Errorf("capability name %q is reserved", c.Name())
		}
		r.capabilities[c.Name()] = c
	}
	r.wzConfig = config
	r.wz = wazero.NewRuntimeWithConfig(ctx, config)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r.wz); err != nil {
		r.wz.Close(ctx)
		return nil, fmt.Errorf("instantiate WASI: %w", err)
	}
	if err := r.instantiateHostModule(ctx, r.wz); err != nil {
		r.wz.Close(ctx)
		return nil, err
	}
	if opts.Tiered && !opts.Interpreter {
		interp, err := r.newInterpreter(ctx)
		if err != nil {
			r.wz.Close(ctx)
			return nil, err
		}
		r.interp = interp
		r.compiledMarks = newCompiledMarks(r.cacheDir, r.cacheUsed())
	}
	r.closingCtx, r.closingStart = context.WithCancel(context.Background())
	r.loaders = r.newLoaders()
	// Last: a failed New leaves no goroutine behind.
	r.trim = newTrimmer(opts.TrimDelay, opts.FreeOSMemory)
	return r, nil
}

// Close closes every module loaded by r and releases the compiler.
func (r *Runtime) Close(ctx context.Context) error {
	r.loadsMu.Lock()
	r.closing = true
	r.loadsMu.Unlock()
	r.closingStart()
	r.loads.Wait()
	r.compiles.Wait()
	r.loadsMu.Lock()
	if r.spares > 0 && r.testHooks.closeWaits != nil {
		r.testHooks.closeWaits()
	}
	for r.spares > 0 {
		r.sparesDone.Wait()
	}
	r.loadsMu.Unlock()
	r.trim.close()
	if r.codeGuard != nil {
		// The uses of this process order the next prune (cache.go).
		if err := r.codeGuard.Flush(); err != nil {
			r.log.Warn("compile cache usage not recorded", "dir", r.cacheDir, "error", err)
		}
	}
	err := r.wz.Close(ctx)
	if r.interp != nil {
		if ierr := r.interp.Close(ctx); err == nil {
			err = ierr
		}
	}
	if r.cache != nil {
		if cerr := r.cache.Close(ctx); err == nil {
			err = cerr
		}
	}
	return err
}

// startSpare registers a spare being made in the background, which Close
// waits for; it reports false once Close has begun, and then no spare is
// made.
func (r *Runtime) startSpare() bool {
	r.loadsMu.Lock()
	defer r.loadsMu.Unlock()
	if r.closing {
		return false
	}
	r.spares++
	return true
}

// endSpare ends what startSpare began.
func (r *Runtime) endSpare() {
	r.loadsMu.Lock()
	defer r.loadsMu.Unlock()
	if r.spares--; r.spares == 0 {
		r.sparesDone.Broadcast()
	}
}

// CompileCacheStats returns the lookups in the cache of instrumented
// modules (under CacheDir) so far: hits, misses, and errors (an entry that
// could not be used or written). All zero when the disk cache is off.
func (r *Runtime) CompileCacheStats() (hits, misses, errs uint64) {
	return r.instrumented.Stats()
}
