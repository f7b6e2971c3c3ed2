package app

import (
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/policy"
)

// Policy returns the policy in force: the config in force (Config) and
// what it says about each tool and module, resolved from it once.
func (a *App) Policy() *policy.Policy { return a.resolved.p.Load() }

// inForce holds the config in force with its policy: one atomic pointer,
// so that a request reads either the old config and its policy or the new
// config and its policy, never a mix (Config reads the config from the
// same pointer).
type inForce struct {
	p atomic.Pointer[policy.Policy]
	// mu orders resolves: two reloads that run at once (the watcher and a
	// prompt's "allow always") may call back in either order, and the
	// policy left in force must be the one of the config that config.Live
	// holds last, never an older one stored after it.
	mu sync.Mutex
}

// resolve puts current's config in force with its policy. It runs at
// start and first thing on every reload (configChanged), before anything
// acts on the new config; current is config.Live's Current, read under
// the lock, so that the last resolve sees the last config stored.
func (f *inForce) resolve(current func() *config.Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := current()
	if p := f.p.Load(); p != nil && p.Config() == cfg {
		return // resolved already, by a reload that called back later
	}
	f.p.Store(policy.New(cfg))
}
