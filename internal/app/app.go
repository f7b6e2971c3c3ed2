// Package app wires warden together: the live config, the sandbox runtime,
// the host capabilities and the registry of loaded tools. cmd/warden is a
// thin command-line shell over it, and mcpserver serves it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/redact"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// App is a running warden: config, runtime and loaded tools.
type App struct {
	live *config.Live
	// resolved is the config in force with its policy, swapped together
	// on every reload (policy.go).
	resolved inForce
	caps     *capabilities
	rt       *runtime.Runtime
	registry *runtime.Registry
	log      *slog.Logger
	cursors  *cursorSigner
	// callLimits caches each tool's CallLimits (by name, *callLimitsOf).
	callLimits sync.Map

	// pinMu orders a module's entry into the registry against repin, so
	// that a pin changed while the module compiled is applied to it: the
	// pinned state is decided again under pinMu, from the config in force,
	// right before the module joins.
	pinMu sync.Mutex

	mu          sync.Mutex
	subscribers map[int]func()
	nextSub     int
	// loadErrors holds the latest load failure of each module file.
	loadErrors map[string]error
	// loading holds the modules a background load has not finished yet,
	// for tools/list to name (Loading); loads counts those goroutines.
	loading     map[string]bool
	loadedOne   chan struct{} // closed and replaced whenever a background load ends
	loads       sync.WaitGroup
	cancelLoads []context.CancelFunc
	// progress hears of every module compile (SetLoadProgress); compiling
	// and compiled count them for its n/m.
	progress            func(LoadProgress)
	compiling, compiled int
	queued              map[string]bool // counted in compiling, not started yet
	// loadsEnded counts background loads that ended (LoadsEnded).
	loadsEnded atomic.Uint64
	// startup is where the first load of the tools dir is: startupNone,
	// startupRunning or startupEnded (StartupLoaded).
	startup atomic.Int32
	// exposure is tools.expose and tools.hide as last applied, to tell
	// clients when the list they see changed.
	exposure string
	// res serves resources and prompts (resources.go).
	res resourceState
	// installer reviews, fetches, installs, syncs and updates modules
	// (Installer).
	installer *install.Installer
	// secrets, when set (RedactWith), is kept equal to the config's
	// secret values, which the logs and the audit trail redact.
	secrets atomic.Pointer[redact.Secrets]
	// secretsExtra are RedactWith's extra values, written before secrets
	// is stored and only read after it is loaded.
	secretsExtra []string
}

// New starts a runtime for cfg. It loads no tools: call LoadTools.
func New(ctx context.Context, cfg *config.Config, logger *slog.Logger) (*App, error) {
	cursorKey, _, err := cfg.Server.StateKeys()
	if err != nil {
		return nil, fmt.Errorf("server.state_key: %w", err)
	}
	caps, err := newCapabilities(ctx, cfg, logger)
	if err != nil {
		return nil, err
	}
	rt, err := runtime.New(ctx, runtime.Options{CacheDir: cfg.Tools.CacheDir, Capabilities: caps.list(), Logger: logger,
		MaxInstanceMemory: uint64(cfg.Server.MaxInstanceMemory)})
	if err != nil {
		return nil, err
	}
	a := &App{
		caps:        caps,
		rt:          rt,
		registry:    runtime.NewRegistry(),
		log:         logger,
		cursors:     newCursorSigner(cursorKey),
		subscribers: make(map[int]func()),
		loadErrors:  make(map[string]error),
		loading:     make(map[string]bool),
		loadedOne:   make(chan struct{}),
	}
	a.live = config.NewLive(cfg, logger, a.configChanged)
	a.resolved.resolve(a.live.Current)
	a.installer = install.New(install.Options{Config: a.Config, Reload: a.live.Reload, Runtime: rt, Catalog: a.registry})
	caps.prompts.policy, caps.prompts.reload = a.Policy, a.live.Reload
	caps.prompts.sumOf = a.moduleSHA256
	a.watchMemory()
	return a, nil
}

// WatchConfig applies every valid change of the config file from the next
// call on, until ctx ends.
func (a *App) WatchConfig(ctx context.Context) error { return a.live.Watch(ctx) }

// configChanged puts a reloaded config in force with its policy, then
// reconfigures the capabilities for it. Grants and per-call limits need
// nothing more: calls read them from the policy in force.
func (a *App) configChanged(cfg *config.Config) {
	a.resolved.resolve(a.live.Current)
	a.refreshSecrets(cfg)
	if err := a.caps.apply(cfg); err != nil {
		a.log.Error("config change not fully applied to the capabilities", "error", err)
	}
	// A module refused for its pin (or its limits) may be acceptable under
	// the new config: try the files that failed again.
	// While they load they count as loading, so that a rival for one of
	// their names is held back (heldBy) instead of serving it meanwhile.
	a.mu.Lock()
	var failed []string
	for path := range a.loadErrors {
		failed = append(failed, path)
		a.loading[ModuleName(path)] = true
	}
	a.mu.Unlock()
	// A pin added, changed or removed decides name collisions anew.
	changed := a.repin(cfg)
	for _, path := range failed {
		loaded, errs := a.loadModule(context.Background(), path)
		changed = changed || loaded
		for _, err := range errs {
			a.log.Warn("module still not loaded after the config change", "error", err)
		}
	}
	if len(failed) > 0 {
		a.mu.Lock()
		for _, path := range failed {
			delete(a.loading, ModuleName(path))
		}
		close(a.loadedOne)
		a.loadedOne = make(chan struct{})
		a.mu.Unlock()
	}
	// tools.expose and tools.hide change the list clients see.
	a.mu.Lock()
	exposure := strings.Join(cfg.Tools.Expose, "\x00") + "\x01" + strings.Join(cfg.Tools.Hide, "\x00")
	if exposure != a.exposure {
		a.exposure = exposure
		changed = true
	}
	a.mu.Unlock()
	// Tools held back while the retries ran are listed again too.
	if changed || len(failed) > 0 {
		a.notify()
	}
}

// Close stops every module, the runtime and the language servers.
func (a *App) Close(ctx context.Context) error {
	// Background loads end soon once their context is cancelled (compiles
	// are abandoned, guest start-up is interrupted); wait so that none puts
	// a module into a closed registry.
	a.mu.Lock()
	for _, cancel := range a.cancelLoads {
		cancel()
	}
	a.mu.Unlock()
	a.loads.Wait()
	if a.res.stop != nil {
		a.res.stop()
	}
	a.registry.Close(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return errors.Join(a.caps.close(ctx), a.rt.Close(ctx))
}

// Runtime returns the sandbox runtime, for commands that load a module
// outside the tools dir (inspect, install).
func (a *App) Runtime() *runtime.Runtime { return a.rt }

// Registry returns the loaded tools.
func (a *App) Registry() *runtime.Registry { return a.registry }

// Config returns the config in force.
func (a *App) Config() *config.Config { return a.Policy().Config() }

// LoadTools loads every module in the tools dir and waits for all of them.
// Each file that fails is reported in the returned errors (naming the file)
// and skipped, and so is each tool refused because several modules describe
// its name.
func (a *App) LoadTools(ctx context.Context) []error {
	var (
		mu   sync.Mutex
		errs []error
	)
	a.loadAll(ctx, func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}, false)
	a.loads.Wait()
	// Files load in parallel: report load errors in file order, then the
	// collisions (LoadToolsInBackground reports them last).
	loadErrs := slices.IndexFunc(errs, func(err error) bool { return !strings.HasPrefix(err.Error(), "load ") })
	if loadErrs < 0 {
		loadErrs = len(errs)
	}
	slices.SortStableFunc(errs[:loadErrs], func(x, y error) int { return strings.Compare(x.Error(), y.Error()) })
	return errs
}

// LoadToolsInBackground starts loading every module in the tools dir, up to
// GOMAXPROCS at once, and returns at once: each module joins the registry
// (and subscribers hear of it, as on a hot reload) as soon as it is ready,
// so a server answers while a slow module still compiles. Until then the
// module is listed by Loading. report receives each error (naming the
// file), from any goroutine.
//
// A module whose descriptor manifest is cached joins at once, listed from
// the manifest and compiled on its first call; one without compiles now.
// With tools.defaults.preload, every module then compiles in the
// background, up to GOMAXPROCS at once.
func (a *App) LoadToolsInBackground(ctx context.Context, report func(error)) {
	a.loadAll(ctx, report, a.Config().Tools.Defaults.Preload)
}

func (a *App) loadAll(ctx context.Context, report func(error), preload bool) {
	// The first load is the start's: readiness waits for it (StartupLoaded).
	first := a.startup.CompareAndSwap(startupNone, startupRunning)
	ended := func() {
		if first {
			a.startup.Store(startupEnded)
		}
	}
	paths, err := runtime.ModuleFiles(a.Config().Tools.Dir)
	if err != nil {
		report(err)
		ended()
		return
	}
	if len(paths) == 0 {
		ended()
	}
	ctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	for _, path := range paths {
		a.loading[ModuleName(path)] = true
	}
	a.cancelLoads = append(a.cancelLoads, cancel)
	a.mu.Unlock()
	slots := make(chan struct{}, goruntime.GOMAXPROCS(0))
	opens := make(chan struct{}, goruntime.GOMAXPROCS(0))
	a.loads.Add(len(paths))
	var remaining atomic.Int64
	remaining.Store(int64(len(paths)))
	for _, path := range paths {
		go func() {
			defer a.loads.Done()
			// Modules listed from their manifests take no compile slot:
			// they are in before any compile ends. Opening one reads and
			// hashes its file, so opens are bounded too (by the cores, and
			// so is the memory their buffers take).
			opens <- struct{}{}
			loaded, errs, notCached := a.openModule(ctx, path, true)
			<-opens
			if notCached {
				a.queueCompile(ModuleName(path))
				slots <- struct{}{}
				loaded, errs = a.loadModule(ctx, path)
				<-slots
				a.unqueue(ModuleName(path))
			}
			// Errors are reported while the module still counts as loading:
			// a list that names nothing loading comes after them.
			for _, err := range errs {
				report(err)
			}
			a.mu.Lock()
			delete(a.loading, ModuleName(path))
			close(a.loadedOne)
			a.loadedOne = make(chan struct{})
			a.loadsEnded.Add(1)
			last := remaining.Add(-1) == 0
			if last {
				// Under the lock that empties loading: a tools/list that
				// names nothing loading is never followed by a /healthz
				// that still says "loading" (every module is in, so the
				// registry has decided its collisions already).
				ended()
			}
			a.mu.Unlock()
			if loaded || len(errs) > 0 {
				a.notify()
			}
			if last {
				// Collisions are reported once all modules are in: the
				// outcome does not depend on the order they were loaded in,
				// and neither does the report.
				for _, r := range a.registry.Refused() {
					report(r)
				}
				a.logLoadSummary(len(paths))
				// Modules listed from their manifests compile on first
				// call or in the preload below: they are served already.
				if preload {
					a.preloadAll(ctx)
				}
			}
		}()
	}
}

// AwaitLoad implements mcpserver.Loader: it waits for the next background
// load to end and reports true, or reports false at once when nothing is
// loading or when ctx ends.
func (a *App) AwaitLoad(ctx context.Context) bool {
	a.mu.Lock()
	loading, next := len(a.loading) > 0, a.loadedOne
	a.mu.Unlock()
	if !loading {
		return false
	}
	select {
	case <-next:
		return true
	case <-ctx.Done():
		return false
	}
}

// States of App.startup.
const (
	startupNone int32 = iota
	startupRunning
	startupEnded
)

// StartupLoaded is mcpserver.Options.StartupLoaded: it reports false from
// the start of the first load of the tools dir (LoadTools or
// LoadToolsInBackground) until every module it found has joined or failed,
// collisions decided; true before any load began too, when there is
// nothing to wait for.
func (a *App) StartupLoaded() bool { return a.startup.Load() != startupRunning }

// LoadsEnded counts the background loads that ended; each is counted
// before its module stops counting as loading (mcpserver.Options.LoadsEnded).
func (a *App) LoadsEnded() uint64 { return a.loadsEnded.Load() }

// Loading lists the modules still loading in the background, sorted.
func (a *App) Loading() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Sorted(maps.Keys(a.loading))
}

// Refused is mcpserver.Options.Refused: the tools not served because
// several modules describe their name (see runtime.Registry).
func (a *App) Refused() []mcpserver.Refusal {
	var out []mcpserver.Refusal
	for _, r := range a.registry.Refused() {
		out = append(out, mcpserver.Refusal{Tool: r.Tool, Module: r.Module, Modules: r.Modules, Reason: r.Reason})
	}
	return out
}

// repin brings each loaded module's pinned state in line with cfg's pins
// and reports whether the tool table may have changed. A module whose pin
// no longer matches its bytes is unloaded, like a changed file would be
// refused: it is tried again at the next config change.
func (a *App) repin(cfg *config.Config) (changed bool) {
	a.pinMu.Lock()
	defer a.pinMu.Unlock()
	for _, m := range a.registry.Modules() {
		pinned, err := pinState(cfg, m.Name(), m.SHA256())
		if err != nil {
			path := filepath.Join(cfg.Tools.Dir, m.Name()+".wasm")
			// Only this version: a hot reload may have replaced it since
			// Modules was read, and the new version is not ours to drop.
			if !a.registry.RemoveIf(m.Name(), m) {
				continue
			}
			m.Close(context.Background())
			a.mu.Lock()
			a.loadErrors[path] = fmt.Errorf("load %s: %w", path, err)
			a.mu.Unlock()
			a.log.Error("module unloaded: its pin changed", "module", m.Name(), "error", err)
			changed = true
			continue
		}
		if a.registry.SetPinned(m.Name(), pinned) {
			changed = true
			a.logRefusals(m.Name())
		}
	}
	return changed
}

// loadModule loads or reloads one module file into the registry. A file
// that fails to load leaves the module's previous version serving. The
// errors name the file; loaded tells whether the module is now in the
// registry (possibly with some of its tools rejected).
func (a *App) loadModule(ctx context.Context, path string) (loaded bool, errs []error) {
	loaded, errs, _ = a.openModule(ctx, path, false)
	return loaded, errs
}

// openModule is loadModule; with cachedOnly, a module with no valid
// descriptor manifest is left alone and reported notCached.
func (a *App) openModule(ctx context.Context, path string, cachedOnly bool) (loaded bool, errs []error, notCached bool) {
	pol := a.Policy()
	cfg := pol.Config()
	name := ModuleName(path)
	var err error
	if !runtime.ValidModuleName(name) {
		// Module names become config keys (pins, limits, grants' module).
		err = fmt.Errorf("module name %q (the file name without .wasm) must be %s; rename the file", name, tool.NameRule)
	}
	var m *runtime.Module
	if err == nil {
		// The pin is checked on the file's sha256 (Accept) before anything
		// else; a compile reads the file again and refuses bytes that hash
		// otherwise.
		m, err = a.rt.OpenFile(ctx, name, path, pol.ModuleLimits(name), runtime.OpenOptions{
			Accept: func(sum string) error {
				_, err := pinState(cfg, name, sum)
				return err
			},
			CachedOnly: cachedOnly,
			LoadFailed: func(m *runtime.Module, err error) { a.lazyLoadFailed(path, m, err) },
			Observe:    a.observeLoad,
		})
		if errors.Is(err, runtime.ErrNotCached) {
			return false, nil, true
		}
	}
	a.mu.Lock()
	if err != nil {
		err = fmt.Errorf("load %s: %w", path, err)
		a.loadErrors[path] = err
	} else {
		delete(a.loadErrors, path)
	}
	a.mu.Unlock()
	if err != nil {
		return false, []error{err}, false
	}
	// The config may have changed while the module compiled: decide its
	// pinned state again from the config in force, under pinMu so that a
	// repin cannot slip between this decision and Put.
	a.pinMu.Lock()
	pinned, err := pinState(a.Config(), name, m.SHA256())
	if err != nil {
		a.pinMu.Unlock()
		m.Close(ctx)
		err = fmt.Errorf("load %s: %w", path, err)
		a.mu.Lock()
		a.loadErrors[path] = err
		a.mu.Unlock()
		return false, []error{err}, false
	}
	old, _ := a.registry.Put(m, pinned)
	a.pinMu.Unlock()
	if old != nil {
		old.Close(ctx)
	}
	for _, r := range m.Rejected() {
		errs = append(errs, fmt.Errorf("load %s: %w", path, r.Reason))
	}
	return true, errs, false
}

// ModuleName is the name a module file loads under: its base name without .wasm.
func ModuleName(path string) string { return install.ModuleName(path) }

// ErrPinMismatch marks a module whose bytes differ from the approved pin.
var ErrPinMismatch = errors.New("module changed since it was approved")

// pinState reports whether a module whose bytes hash to sum matches its pin
// (false when it has none), and an error when it does not.
func pinState(cfg *config.Config, name, sum string) (pinned bool, err error) {
	pin, ok := cfg.Tools.Pins[configkey.Fold(name)]
	if !ok {
		return false, nil
	}
	if sum != pin {
		return false, fmt.Errorf("%w: tools.pins.%s is %s…, the file is %s…; review it and run `warden install` to approve it again",
			ErrPinMismatch, configkey.Fold(name), pin[:min(12, len(pin))], sum[:min(12, len(sum))])
	}
	return true, nil
}

// List implements mcpserver.Tools.
func (a *App) List() []tool.Descriptor {
	tools := a.registry.Tools()
	pol := a.Policy()
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]tool.Descriptor, 0, len(tools))
	for _, t := range tools {
		if tp := pol.Tool(t.Descriptor.Name); tp.Exposed && a.heldFor(pol.Config(), tp.Bound, tp.HasGrant, t) == "" {
			out = append(out, t.Descriptor)
		}
	}
	return out
}

// heldBy returns the module, still loading in the background, that t's
// name waits for, or "" when t may be served now. The tool table is a
// function of every module (runtime.Registry), so until all are loaded a
// name could still be contested; serving the first module to finish would
// let a small impostor answer, briefly, for the tool a person reviewed. So
// during the initial load a tool is held back when a module that would beat
// it may still arrive:
//   - a tool of an unpinned module, while any module that config pins is
//     loading (a pinned module wins every collision);
//   - a tool whose name config grants to another module (tools.grants.<tool>
//     and its module field), while that module is loading.
//
// Tools of two unpinned modules that no grant names are served in the order
// they load until the second arrives, then both are refused: neither has a
// grant, and neither was reviewed. Callers hold a.mu.
func (a *App) heldBy(cfg *config.Config, t *runtime.Tool) string {
	bound, _, ok := cfg.GrantModule(t.Descriptor.Name)
	return a.heldFor(cfg, bound, ok, t)
}

// heldFor is heldBy for a caller that resolved t's grant binding already
// (bound, and whether config has an entry for t: granted).
func (a *App) heldFor(cfg *config.Config, bound string, granted bool, t *runtime.Tool) string {
	if len(a.loading) == 0 {
		return ""
	}
	module := t.Module()
	if granted && bound != module.Name() && a.loading[bound] {
		return bound
	}
	if !module.Pinned() {
		for _, name := range slices.Sorted(maps.Keys(a.loading)) {
			if _, pinned := cfg.Tools.Pins[configkey.Fold(name)]; pinned {
				return name
			}
		}
	}
	return ""
}

// call is Call without the observation (observe.go): the tool runs with
// the policy admit resolves from the config in force right now.
func (a *App) call(ctx context.Context, c mcpserver.Call) (*tool.Result, error) {
	t, ok := a.registry.Tool(c.Name)
	if !ok {
		var reasons []string
		for _, r := range a.registry.RefusedAs(c.Name) {
			if r.Tool == c.Name {
				reasons = append(reasons, r.Reason)
			}
		}
		if len(reasons) > 0 {
			return nil, tool.Errorf(tool.KindNotFound, "no tool named %q is served: %s", c.Name, strings.Join(reasons, "; "))
		}
		return nil, tool.Errorf(tool.KindNotFound, "no tool named %q", c.Name)
	}
	ctx, req, answer, err := a.admit(ctx, entrance{
		method: mcpserver.MethodCallTool, what: "tool " + c.Name, subject: c.Name, tool: t, module: t.Module(), call: c,
		notServed: func() error {
			// Hidden tools are not called either: a client that learnt the
			// name elsewhere gets what a client asking for an unknown name gets.
			return tool.Errorf(tool.KindNotFound, "no tool named %q is served to clients (tools.expose / tools.hide)", c.Name)
		},
	})
	if err != nil {
		return nil, err
	}
	if answer != nil {
		return answer, nil
	}
	cursor := ""
	if c.Cursor != "" {
		var err error
		if cursor, err = a.cursors.open(c.Name, c.Cursor); err != nil {
			return tool.ErrorResult(tool.Errorf(tool.KindInvalidArguments, "%v", err)), nil
		}
	}
	ctx, notes := withNotices(ctx)
	req.Arguments, req.Cursor = c.Arguments, cursor
	res := t.Call(ctx, req)
	// Error results too: a failing call's content blocks reach the client.
	if bad := a.foreignEmbedded(t.Module(), "content", resultBlocks(res)); bad != nil {
		res = tool.ErrorResult(bad)
	}
	if res.NextCursor != "" {
		res.NextCursor = a.cursors.seal(c.Name, res.NextCursor)
	}
	notes.attach(res)
	return res, nil
}

// CallLimits is mcpserver.Options.CallLimits: a tool's calls run at most
// one per instance of its module (tools.limits.<module>.max_instances),
// and at most tools.limits.<tool>.max_in_flight; its deadline, which
// covers its wait for a slot, is the one its call gets.
func (a *App) CallLimits(name string) mcpserver.CallLimits {
	t, ok := a.registry.Tool(name)
	if !ok {
		return mcpserver.CallLimits{}
	}
	// Asked on every call's path: built once per tool and policy (a
	// reloaded module is a new Tool, a reloaded config a new Policy).
	pol := a.Policy()
	if c, ok := a.callLimits.Load(name); ok {
		if c := c.(*callLimitsOf); c.policy == pol && c.tool == t {
			return c.limits
		}
	}
	l := callLimitsFor(pol.Tool(name), t)
	a.callLimits.Store(name, &callLimitsOf{policy: pol, tool: t, limits: l})
	return l
}

// callLimitsOf is CallLimits's answer for one tool under one policy.
type callLimitsOf struct {
	policy *policy.Policy
	tool   *runtime.Tool
	limits mcpserver.CallLimits
}

// callLimitsFor derives the limits of the tool t from its policy tp.
func callLimitsFor(tp policy.ToolPolicy, t *runtime.Tool) mcpserver.CallLimits {
	l := moduleLimits(t.Module())
	l.Timeout = t.Timeout()
	if d := tp.Timeout; d > 0 && d < l.Timeout {
		l.Timeout = d
	}
	l.MaxInFlight = tp.MaxInFlight
	l.InFlightSetting = "tools.limits." + tp.Key + ".max_in_flight"
	l.Rate = tp.Rate
	return l
}

// moduleLimits are the limits of m's instances, which every run of its
// code shares: its tools' calls and its features'. No Timeout: a feature
// that runs as no tool waits for a slot as long as server.queue_wait
// allows (the module's deadline, which counts that wait, bounds its run).
func moduleLimits(m *runtime.Module) mcpserver.CallLimits {
	instances := m.Limits().MaxInstances
	if instances <= 0 {
		instances = runtime.DefaultMaxInstances
	}
	module := configkey.Fold(m.Name())
	return mcpserver.CallLimits{
		Module:           m.Name(),
		MaxInstances:     instances,
		InstancesSetting: "tools.limits." + module + ".max_instances",
		// The runtime gives a session its own instance and runs its calls
		// there one at a time: the second waits in the queue, not on a slot.
		OneCallPerSession: m.Limits().Isolation == runtime.IsolationSession,
		IsolationSetting:  "tools.limits." + module + ".isolation",
	}
}

// OwnerLimits is mcpserver.Options.OwnerLimits: a feature that runs as no
// tool runs on an instance of its module, and waits for one of the
// module's slots as its tools' calls do. The memory resources (no module)
// have none.
func (a *App) OwnerLimits(owner string) mcpserver.CallLimits {
	m, err := a.module(owner)
	if err != nil {
		return mcpserver.CallLimits{}
	}
	return moduleLimits(m)
}

// ServerRateLimits returns server.rate_limit as the config in force sets
// it, for mcpserver.Options.RateLimit: asked at every call, it is resolved
// once per config load (internal/policy).
func (a *App) ServerRateLimits() mcpserver.RateLimits { return a.Policy().ServerRateLimits() }

// Subscribe implements mcpserver.Tools.
func (a *App) Subscribe(f func()) (cancel func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := a.nextSub
	a.nextSub++
	a.subscribers[id] = f
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.subscribers, id)
	}
}

func (a *App) notify() {
	a.mu.Lock()
	subs := make([]func(), 0, len(a.subscribers))
	for _, f := range a.subscribers {
		subs = append(subs, f)
	}
	a.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// Stats reports resource use for /healthz: the instance memory budget.
func (a *App) Stats() map[string]any {
	return map[string]any{"instanceMemory": a.rt.InstanceMemory()}
}

// LoadErrors lists the modules whose latest load failed, by module name,
// for /healthz.
func (a *App) LoadErrors() []mcpserver.LoadError {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]mcpserver.LoadError, 0, len(a.loadErrors))
	for path, err := range a.loadErrors {
		out = append(out, mcpserver.LoadError{Module: ModuleName(path), Error: err.Error()})
	}
	slices.SortFunc(out, func(x, y mcpserver.LoadError) int { return strings.Compare(x.Module, y.Module) })
	return out
}

// logLoadSummary logs one line once every module of the tools dir was
// tried: an error when no tool is served because modules failed, a warning
// when some failed.
func (a *App) logLoadSummary(modules int) {
	failed := a.LoadErrors()
	if len(failed) == 0 {
		return
	}
	tools := len(a.registry.Tools())
	names := make([]string, len(failed))
	for i, f := range failed {
		names[i] = f.Module
	}
	if tools == 0 {
		a.log.Error(fmt.Sprintf("no tools served: %d of %d modules failed to load (errors above; /healthz lists them)", len(failed), modules),
			"dir", a.Config().Tools.Dir, "failed", names)
		return
	}
	a.log.Warn(fmt.Sprintf("%d tools served; %d of %d modules failed to load (errors above; /healthz lists them)", tools, len(failed), modules),
		"dir", a.Config().Tools.Dir, "failed", names)
}

// EndSession releases what a client session kept (IsolationSession).
func (a *App) EndSession(ctx context.Context, session string) {
	a.registry.EndSession(ctx, session)
}
