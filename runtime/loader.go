package runtime

import (
	"context"
	"strconv"

	"github.com/warden-run/warden/runtime/internal/extism"
	"github.com/warden-run/warden/runtime/internal/guest"
)

// Loaders. A module is loaded by the first of Runtime.loaders that claims
// it (guest.Loader): an Extism plugin by the Extism loader, everything
// else by the native one, which refuses what is not a tool module. Each
// loader owns its kind's parse checks, instantiation, snapshot and reset
// behind guest.Engine; the pool and the call path never ask the kind.

// newLoaders returns r's loaders, in the order they are asked.
func (r *Runtime) newLoaders() []guest.Loader {
	host := &guest.Host{
		Wazero:       r.wz,
		Config:       r.wzConfig,
		Capabilities: r.capabilities,
		Log:          r.log,
		Compile:      r.compile,
		ThroughCache: r.pluginThroughCache,
		Instrumented: r.instrumented,
	}
	r.host = host
	return []guest.Loader{extism.Loader{Host: host}, nativeLoader{rt: r}}
}

// guest returns the limits a loader applies.
func (l Limits) guest() guest.Limits {
	return guest.Limits{
		Memory:        l.Memory,
		Fuel:          l.Fuel,
		LoadBudget:    l.LoadBudget,
		CompileBudget: l.CompileBudget,
		MaxOutput:     l.MaxOutput,
		CaptureBytes:  l.CaptureBytes,
		LogBytes:      l.LogBytes,
		LogLines:      l.LogLines,
	}
}

// loadGuest is guest() for loading a module: with the advice a load that
// runs out of fuel ends with, which no call needs (a call's out_of_fuel
// is worded by body.failure), so calls do not build it.
func (l Limits) loadGuest() guest.Limits {
	g := l.guest()
	g.FuelHint = l.FuelSetting.hint(strconv.FormatInt(l.Fuel, 10))
	return g
}

// instance is a guest instance in a module's pool.
type instance struct {
	*guest.Instance
	// owner is the session this instance is bound to (IsolationSession).
	owner *sessionInstance
	// pool counts the instance among its module's live ones.
	pool *pool
	// acct is the instance's account with the Runtime's memory budget: its
	// memories' length is charged to it.
	acct *memAccount
}

// adopt counts in among the pool's live instances. An instance made
// without an account (none in the context it was made with) gets one
// charged with what its memory holds now.
func (p *pool) adopt(gi *guest.Instance) *instance {
	p.live.Add(1)
	in := &instance{Instance: gi, pool: p}
	acct, ok := gi.Memory.Account.(*memAccount)
	if !ok || acct == nil {
		acct = &memAccount{b: p.m.rt.budget}
		acct.force(gi.Memory.Size())
		gi.Memory.Account = acct
	}
	acct.in = in
	in.acct = acct
	return in
}

func (in *instance) close(ctx context.Context) {
	in.pool.live.Add(-1)
	in.Instance.Close(ctx)
	in.acct.close()
	in.pool.m.rt.trim.closed()
}

// evict closes an instance the budget claimed (see budget.pop): it leaves
// its pool's idle list, if it is there; a session that kept it finds its
// account gone at its next call. Nothing of the guest stays referenced:
// a session may hold the wrapper until its next call or its end (an hour,
// for an idle HTTP session).
func (in *instance) evict() {
	in.pool.forget(in)
	in.close(context.Background())
	in.Instance = nil
}
