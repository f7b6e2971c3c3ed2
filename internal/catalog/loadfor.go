package catalog

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"sync"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/runtime"
)

// LoadFor loads what one call of the tool named name needs (`warden call`),
// and no more: first the modules config names for it (the one its grant
// entry is bound to, the one named like it), listed from their descriptor
// manifests or loaded; then every other module with a manifest (nothing
// compiles); then those without one, one at a time; and at each step it
// stops once name is served by a module none of the rest could take it
// from, leaving the rest unread. The modules left
// unloaded count as loading meanwhile, and name is final when it is served,
// no pinned module is still to load (it would win the name, or refuse it
// with another pinned one), and HeldBy holds it for none (the rule a server
// applies to a call that arrives while it starts: not while the module its
// grant entry is bound to loads). So a tool of an unpinned module is
// served, as a starting server serves it, before an unpinned rival no
// grant names is loaded (which would refuse both: the server's start
// decides it so a moment later). A name that is never served (unknown,
// refused, hidden) costs every module's load, as LoadTools does.
//
// The errors are those of the files loaded, in file order, then the
// collisions among the modules loaded (see LoadTools).
func (c *Catalog) LoadFor(ctx context.Context, name string) []error {
	first := c.startup.CompareAndSwap(startupNone, startupRunning)
	defer func() {
		if first {
			c.startup.Store(startupEnded)
		}
	}()
	paths, err := runtime.ModuleFiles(c.config().Tools.Dir)
	if err != nil {
		return []error{err}
	}
	c.mu.Lock()
	for _, path := range paths {
		c.loading[ModuleName(path)] = true
	}
	c.mu.Unlock()
	// A module LoadFor stopped before is no longer being loaded: left
	// marked, it would hold the names it might serve for as long as the
	// catalog lives.
	defer func() {
		c.mu.Lock()
		for _, path := range paths {
			delete(c.loading, ModuleName(path))
		}
		c.mu.Unlock()
	}()
	var (
		mu      sync.Mutex
		errs    []fileError
		pending []string
	)
	joined := func(path string, fileErrs []error) {
		mu.Lock()
		for _, err := range fileErrs {
			errs = append(errs, fileError{path, err})
		}
		mu.Unlock()
		c.mu.Lock()
		delete(c.loading, ModuleName(path))
		c.mu.Unlock()
	}
	// The modules config names for name first, each listed from its
	// manifest or loaded: when one serves name finally, no other module
	// file is even read (opening one hashes it, to find its manifest).
	ordered, likely := c.likeliestFirst(name, paths)
	for _, path := range ordered[:likely] {
		if c.servedFinally(name) || ctx.Err() != nil {
			break
		}
		_, fileErrs := c.LoadFile(ctx, path)
		joined(path, fileErrs)
	}
	rest := ordered[likely:]
	if c.servedFinally(name) || ctx.Err() != nil {
		rest = nil
	}
	// Then every other module with a manifest (nothing compiles), up to
	// GOMAXPROCS at once as loadAll opens them, then those without one,
	// one at a time, until name is final.
	var wg sync.WaitGroup
	opens := make(chan struct{}, goruntime.GOMAXPROCS(0))
	for _, path := range rest {
		wg.Go(func() {
			opens <- struct{}{}
			_, fileErrs, notCached := c.openModule(ctx, path, true)
			<-opens
			if notCached {
				mu.Lock()
				pending = append(pending, path)
				mu.Unlock()
				return
			}
			joined(path, fileErrs)
		})
	}
	wg.Wait()
	slices.Sort(pending)
	for _, path := range pending {
		if c.servedFinally(name) || ctx.Err() != nil {
			break
		}
		_, fileErrs := c.LoadFile(ctx, path)
		joined(path, fileErrs)
	}
	out := inFileOrder(errs)
	for _, r := range c.table.Refused() {
		out = append(out, r)
	}
	return out
}

// servedFinally reports whether the tool named name is served now and no
// module still loading could change that: none holds it back (HeldBy), and
// none is pinned (a pinned one would take the name from an unpinned
// server, and refuse it with a pinned one: two pinned modules describing a
// name serve neither).
func (c *Catalog) servedFinally(name string) bool {
	t, ok := c.table.Tool(name)
	if !ok {
		return false
	}
	pol := c.policy()
	cfg := pol.Config()
	tp := pol.Tool(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	for module := range c.loading {
		if _, pinned := cfg.Tools.Pins[configkey.Fold(module)]; pinned {
			return false
		}
	}
	return c.heldBy(cfg, tp.Bound, tp.HasGrant, t) == ""
}

// likeliestFirst orders module files for LoadFor: first the module the
// grant entry of name is bound to, then the module named like the tool (the
// default binding), then the rest in file order; likely counts the first
// two kinds.
func (c *Catalog) likeliestFirst(name string, paths []string) (ordered []string, likely int) {
	ordered = slices.Clone(paths)
	slices.Sort(ordered)
	bound, _, granted := c.config().GrantModule(name)
	rank := func(path string) int {
		module := configkey.Fold(ModuleName(path))
		switch {
		case granted && configkey.Fold(bound) == module:
			return 0
		case module == configkey.Fold(name):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(ordered, func(x, y string) int { return rank(x) - rank(y) })
	for likely < len(ordered) && rank(ordered[likely]) < 2 {
		likely++
	}
	return ordered, likely
}

// Warm loads every module of the tools dir and its code, for an image or a
// CI job to start warm (`warden cache warm`): LoadTools, then every module
// listed from its manifest is loaded too, up to GOMAXPROCS at once. Each
// load goes through the runtime's caches, so afterwards they hold every
// module's instrumented code, compiled code and manifest for this machine,
// and a start lists and calls them without compiling. The errors are
// LoadTools', then each failed load's, in module order.
func (c *Catalog) Warm(ctx context.Context) []error {
	errs := c.LoadTools(ctx)
	modules := c.table.Modules()
	failed := make([]error, len(modules))
	slots := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, m := range modules {
		if m.Loaded() {
			continue
		}
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := m.Preload(ctx); err != nil {
				failed[i] = fmt.Errorf("load module %s: %w", m.Name(), err)
			}
		})
	}
	wg.Wait()
	for _, err := range failed {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
