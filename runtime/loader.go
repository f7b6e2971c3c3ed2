package runtime

import (
	"context"

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
	}
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

// instance is a guest instance in a module's pool.
type instance struct {
	*guest.Instance
	// session is the session this instance is bound to (IsolationSession).
	session string
	// pool counts the instance among its module's live ones.
	pool *pool
}

// adopt counts in among the pool's live instances.
func (p *pool) adopt(in *guest.Instance) *instance {
	p.live.Add(1)
	return &instance{Instance: in, pool: p}
}

func (in *instance) close(ctx context.Context) {
	in.pool.live.Add(-1)
	in.Instance.Close(ctx)
}
