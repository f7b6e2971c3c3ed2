package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// LoadTools loads every module in the tools dir and waits for all of them.
// Each file that fails is reported in the returned errors (naming the file)
// and skipped, and so is each tool refused because several modules describe
// its name. The errors of files come first, in file order (each file's in
// the order it reported them), then the collisions, sorted by tool name:
// the same tools dir gives the same errors in the same order, whatever
// order its files finished loading in. Nothing is logged of them: the
// caller has them to show (`warden tools` lists them as rows).
func (c *Catalog) LoadTools(ctx context.Context) []error {
	var (
		mu       sync.Mutex
		ofFiles  []fileError
		ofNoFile []error
	)
	c.loadAll(ctx, func(path string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if path == "" {
			ofNoFile = append(ofNoFile, err)
			return
		}
		ofFiles = append(ofFiles, fileError{path, err})
	}, false, false)
	c.loads.Wait()
	return append(inFileOrder(ofFiles), ofNoFile...)
}

// fileError is an error of the module file at path.
type fileError struct {
	path string
	err  error
}

// inFileOrder returns the errors of errs sorted by file, the errors of one
// file in the order they came: files load in parallel, so the order they
// are reported in is the order they finished in.
func inFileOrder(errs []fileError) []error {
	slices.SortStableFunc(errs, func(x, y fileError) int { return cmp.Compare(x.path, y.path) })
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e.err
	}
	return out
}

// LoadToolsInBackground starts loading every module in the tools dir, up to
// GOMAXPROCS at once, and returns at once: each module joins the table
// (and Options.Changed hears of it, as on a hot reload) as soon as it is
// ready, so a server answers while a slow module still compiles. Until then
// the module is listed by Loading. report receives each error (naming the
// file), from any goroutine.
//
// A module whose descriptor manifest is cached joins at once, listed from
// the manifest and compiled on its first call; one without compiles now.
// With tools.defaults.preload, every module then compiles in the
// background, up to GOMAXPROCS at once.
func (c *Catalog) LoadToolsInBackground(ctx context.Context, report func(error)) {
	c.loadAll(ctx, func(_ string, err error) { report(err) }, c.config().Tools.Defaults.Preload, true)
}

// loadAll loads the tools dir; report receives each error with the file it
// is of, or "" for an error of no one file (the dir, a collision). With
// summary, a line sums up the failures once all are in (logLoadSummary).
func (c *Catalog) loadAll(ctx context.Context, report func(path string, err error), preload, summary bool) {
	// The first load is the start's: readiness waits for it (StartupLoaded).
	first := c.startup.CompareAndSwap(startupNone, startupRunning)
	ended := func() {
		if first {
			c.startup.Store(startupEnded)
		}
	}
	paths, err := runtime.ModuleFiles(c.config().Tools.Dir)
	if err != nil {
		report("", err)
		ended()
		return
	}
	if len(paths) == 0 {
		ended()
	}
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	for _, path := range paths {
		c.loading[ModuleName(path)] = true
	}
	c.cancelLoads = append(c.cancelLoads, cancel)
	c.mu.Unlock()
	slots := make(chan struct{}, goruntime.GOMAXPROCS(0))
	opens := make(chan struct{}, goruntime.GOMAXPROCS(0))
	c.loads.Add(len(paths))
	var remaining atomic.Int64
	remaining.Store(int64(len(paths)))
	for _, path := range paths {
		go func() {
			defer c.loads.Done()
			// Modules listed from their manifests take no compile slot:
			// they are in before any compile ends. Opening one reads and
			// hashes its file, so opens are bounded too (by the cores, and
			// so is the memory their buffers take).
			opens <- struct{}{}
			loaded, errs, notCached := c.openModule(ctx, path, true)
			<-opens
			if notCached {
				c.queueCompile(ModuleName(path))
				slots <- struct{}{}
				loaded, errs = c.LoadFile(ctx, path)
				<-slots
				c.unqueue(ModuleName(path))
			}
			// Errors are reported while the module still counts as loading:
			// a list that names nothing loading comes after them.
			for _, err := range errs {
				report(path, err)
			}
			c.mu.Lock()
			delete(c.loading, ModuleName(path))
			close(c.loadedOne)
			c.loadedOne = make(chan struct{})
			c.loadsEnded.Add(1)
			last := remaining.Add(-1) == 0
			if last {
				// Under the lock that empties loading: a tools/list that
				// names nothing loading is never followed by a /healthz
				// that still says "loading" (every module is in, so the
				// table has decided its collisions already).
				ended()
			}
			c.mu.Unlock()
			if loaded || len(errs) > 0 {
				c.changed()
			}
			if last {
				// Collisions are reported once all modules are in: the
				// outcome does not depend on the order they were loaded in,
				// and neither does the report.
				for _, r := range c.table.Refused() {
					report("", r)
				}
				if summary {
					c.logLoadSummary(len(paths))
				}
				// Modules listed from their manifests compile on first
				// call or in the preload below: they are served already.
				if preload {
					c.preloadAll(ctx)
				}
			}
		}()
	}
}

// AwaitLoad waits for the next background load to end and reports true, or
// reports false at once when nothing is loading or when ctx ends.
func (c *Catalog) AwaitLoad(ctx context.Context) bool {
	c.mu.Lock()
	loading, next := len(c.loading) > 0, c.loadedOne
	c.mu.Unlock()
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

// States of Catalog.startup.
const (
	startupNone int32 = iota
	startupRunning
	startupEnded
)

// StartupLoaded reports false from the start of the first load of the
// tools dir (LoadTools or LoadToolsInBackground) until every module it
// found has joined or failed, collisions decided; true before any load
// began too, when there is nothing to wait for.
func (c *Catalog) StartupLoaded() bool { return c.startup.Load() != startupRunning }

// LoadsEnded counts the background loads that ended; each is counted
// before its module stops counting as loading.
func (c *Catalog) LoadsEnded() uint64 { return c.loadsEnded.Load() }

// Loading lists the modules still loading in the background, sorted.
func (c *Catalog) Loading() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.loading))
}

// FakeLoading makes the catalog count exactly modules as still loading in
// the background, for tests of what is held back meanwhile (HeldBy).
func (c *Catalog) FakeLoading(modules ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.loading)
	for _, m := range modules {
		c.loading[m] = true
	}
}

// ConfigChanged applies a reloaded config to the loaded modules and
// reports whether the tools listed may have changed: a pin added, changed
// or removed decides name collisions anew, and a module refused for its pin
// (or its limits) may be acceptable now, so the files that failed are
// tried again.
func (c *Catalog) ConfigChanged(cfg *config.Config) bool {
	// While they load they count as loading, so that a rival for one of
	// their names is held back (HeldBy) instead of serving it meanwhile.
	c.mu.Lock()
	var failed []string
	for path := range c.loadErrors {
		failed = append(failed, path)
		c.loading[ModuleName(path)] = true
	}
	c.mu.Unlock()
	changed := c.repin(cfg)
	for _, path := range failed {
		loaded, errs := c.LoadFile(context.Background(), path)
		changed = changed || loaded
		for _, err := range errs {
			c.log.Warn("module still not loaded after the config change", "error", err)
		}
	}
	if len(failed) > 0 {
		c.mu.Lock()
		for _, path := range failed {
			delete(c.loading, ModuleName(path))
		}
		close(c.loadedOne)
		c.loadedOne = make(chan struct{})
		c.mu.Unlock()
	}
	// Tools held back while the retries ran are listed again too.
	return changed || len(failed) > 0
}

// repin brings each loaded module's pinned state in line with cfg's pins
// and reports whether the tool table may have changed. A module whose pin
// no longer matches its bytes is unloaded, like a changed file would be
// refused: it is tried again at the next config change.
func (c *Catalog) repin(cfg *config.Config) (changed bool) {
	c.pinMu.Lock()
	defer c.pinMu.Unlock()
	for _, m := range c.table.Modules() {
		pinned, err := pinState(cfg, m.Name(), m.SHA256())
		if err != nil {
			path := filepath.Join(cfg.Tools.Dir, m.Name()+".wasm")
			// Only this version: a hot reload may have replaced it since
			// Modules was read, and the new version is not ours to drop.
			if !c.table.RemoveIf(m.Name(), m) {
				continue
			}
			m.Close(context.Background())
			c.mu.Lock()
			c.loadErrors[path] = fmt.Errorf("load %s: %w", path, err)
			c.mu.Unlock()
			c.log.Error("module unloaded: its pin changed", "module", m.Name(), "error", err)
			changed = true
			continue
		}
		if c.table.SetPinned(m.Name(), pinned) {
			changed = true
			c.logRefusals(m.Name())
		}
	}
	return changed
}

// LoadFile loads or reloads one module file into the table. A file that
// fails to load leaves the module's previous version serving. The errors
// name the file; loaded tells whether the module is now in the table
// (possibly with some of its tools rejected).
func (c *Catalog) LoadFile(ctx context.Context, path string) (loaded bool, errs []error) {
	loaded, errs, _ = c.openModule(ctx, path, false)
	return loaded, errs
}

// openModule is LoadFile; with cachedOnly, a module with no valid
// descriptor manifest is left alone and reported notCached.
func (c *Catalog) openModule(ctx context.Context, path string, cachedOnly bool) (loaded bool, errs []error, notCached bool) {
	pol := c.policy()
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
		m, err = c.rt.OpenFile(ctx, name, path, pol.ModuleLimits(name), runtime.OpenOptions{
			Accept: func(sum string) error {
				_, err := pinState(cfg, name, sum)
				return err
			},
			CachedOnly: cachedOnly,
			LoadFailed: func(m *runtime.Module, err error) { c.lazyLoadFailed(path, m, err) },
			Observe:    c.observeLoad,
		})
		if errors.Is(err, runtime.ErrNotCached) {
			return false, nil, true
		}
	}
	if err == nil {
		err = c.checkDescriptors(ctx, cfg, name, path, m)
	}
	c.mu.Lock()
	if err != nil {
		err = fmt.Errorf("load %s: %w", path, err)
		c.loadErrors[path] = err
	} else {
		delete(c.loadErrors, path)
	}
	c.mu.Unlock()
	if err != nil {
		return false, []error{err}, false
	}
	// The config may have changed while the module compiled: decide its
	// pinned state again from the config in force, under pinMu so that a
	// repin cannot slip between this decision and Put.
	c.pinMu.Lock()
	pinned, err := pinState(c.config(), name, m.SHA256())
	if err != nil {
		c.pinMu.Unlock()
		m.Close(ctx)
		err = fmt.Errorf("load %s: %w", path, err)
		c.mu.Lock()
		c.loadErrors[path] = err
		c.mu.Unlock()
		return false, []error{err}, false
	}
	old, _ := c.table.Put(m, pinned)
	c.pinMu.Unlock()
	if old != nil {
		old.Close(ctx)
	}
	for _, r := range m.Rejected() {
		errs = append(errs, fmt.Errorf("load %s: %w", path, r.Reason))
	}
	return true, errs, false
}

// ModuleName is the name a module file loads under: its base name without .wasm.
func ModuleName(path string) string { return strings.TrimSuffix(filepath.Base(path), ".wasm") }

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
