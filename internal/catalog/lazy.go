package catalog

import (
	"context"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/warden-run/warden/runtime"
)

// LoadProgress is one step of a cold start, for a person watching: a
// module's compile started or ended. Total counts the compiles started so
// far, Finished those that ended (n/m).
type LoadProgress struct {
	runtime.LoadEvent
	Finished, Total int
}

// SetLoadProgress sends every module compile's start and end to f (from
// any goroutine, one at a time) instead of the log. Call it before loading.
func (c *Catalog) SetLoadProgress(f func(LoadProgress)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.progress = f
}

// observeLoad implements runtime.OpenOptions.Observe.
func (c *Catalog) observeLoad(ev runtime.LoadEvent) {
	c.mu.Lock()
	switch {
	case ev.Done:
		c.compiled++
	case c.queued[ev.Module]:
		delete(c.queued, ev.Module) // counted when it was queued
	default:
		c.compiling++
	}
	p := LoadProgress{LoadEvent: ev, Finished: c.compiled, Total: c.compiling}
	f := c.progress
	if f != nil {
		// Under the lock, so that reports reach f in order.
		f(p)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	if ev.Done && ev.Err == nil {
		c.log.Info("module compiled", "module", ev.Module, "elapsed", ev.Elapsed.Round(time.Millisecond),
			"progress", fmt.Sprintf("%d/%d", p.Finished, p.Total))
	}
}

// queueCompile counts a module that waits for a compile slot in the n/m
// of LoadProgress, so that m is every module a cold start compiles.
func (c *Catalog) queueCompile(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queued == nil {
		c.queued = make(map[string]bool)
	}
	if !c.queued[name] {
		c.queued[name] = true
		c.compiling++
	}
}

// unqueue drops a queued module whose load ended before its compile
// started (its file or its pin refused it).
func (c *Catalog) unqueue(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.queued[name] {
		delete(c.queued, name)
		c.compiling--
	}
}

// lazyLoadFailed handles a module, listed from its manifest, that failed
// to load on its first use: like a module that fails at start, it is
// refused (unlisted, its error kept for `warden tools` and retried at the
// next config change or file change) and clients hear the list changed.
// A file that merely cannot be read at that moment (removed, a directory,
// a permission, a mount gone) does not come here: the call fails as
// unavailable, the module stays listed, and its next call reads the file
// again (runtime.OpenOptions.LoadFailed).
func (c *Catalog) lazyLoadFailed(path string, m *runtime.Module, err error) {
	if !c.table.RemoveIf(m.Name(), m) {
		return // already replaced or unloaded
	}
	c.mu.Lock()
	c.loadErrors[path] = fmt.Errorf("load %s: %w", path, err)
	c.mu.Unlock()
	c.log.Error("module unloaded: it failed to load on first use", "module", m.Name(), "error", err)
	go c.changed()
}

// preloadAll compiles every module not loaded yet, up to GOMAXPROCS at
// once (tools.defaults.preload). A call that arrives meanwhile joins its
// module's compile.
func (c *Catalog) preloadAll(ctx context.Context) {
	slots := make(chan struct{}, goruntime.GOMAXPROCS(0))
	for _, m := range c.table.Modules() {
		if m.Loaded() {
			continue
		}
		c.loads.Add(1)
		go func() {
			defer c.loads.Done()
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-slots }()
			if err := m.Preload(ctx); err != nil && ctx.Err() == nil {
				c.log.Warn("preload failed", "module", m.Name(), "error", err)
			}
		}()
	}
}

// ReleaseIdle releases the code and instances of every module no call has
// used for tools.defaults.idle_ttl as of now, and returns how many it
// released. They load again on their next call.
func (c *Catalog) ReleaseIdle(now time.Time) int {
	ttl := c.config().Tools.Defaults.IdleTTL
	n := 0
	for _, m := range c.table.Modules() {
		if m.ReleaseIdle(now, ttl) {
			n++
		}
	}
	return n
}

// WatchIdle runs ReleaseIdle until ctx ends, often enough that a module is
// released within a tenth of idle_ttl past its expiry (between 1 s and
// 1 min), reading the ttl from the config in force each time.
func (c *Catalog) WatchIdle(ctx context.Context) {
	go func() {
		for {
			ttl := c.config().Tools.Defaults.IdleTTL
			every := min(max(ttl/10, time.Second), time.Minute)
			t := time.NewTimer(every)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case now := <-t.C:
				if ttl > 0 {
					c.ReleaseIdle(now)
				}
			}
		}
	}()
}
