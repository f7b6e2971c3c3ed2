package app

import (
	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/policy"
)

// Policy returns the policy in force: the config in force (Config) and
// what it says about each tool and module, resolved from it once.
func (a *App) Policy() *policy.Policy { return a.resolved.Load() }

// resolve resolves cfg's policy and puts it, with cfg, in force: one
// atomic store, so that a request reads either the old config and its
// policy or the new config and its policy, never a mix (Config reads the
// config from the same pointer). It runs at start and first thing on every
// reload (configChanged), before anything acts on the new config.
func (a *App) resolve(cfg *config.Config) { a.resolved.Store(policy.New(cfg)) }
