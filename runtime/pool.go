package runtime

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/tool"
)

// pool keeps a module's instances. Slots bound how many calls run at once;
// idle instances wait, already reset, for the next call. Every instance is
// charged to the Runtime's memory budget (budget.go), which may evict idle
// and session-kept ones; the pool learns of an eviction through forget, or,
// for a session's instance, when its account is found gone.
type pool struct {
	m *Module
	// engine makes and resets the instances; tiers is engine when its code
	// changes under its instances (a tiered load), else nil.
	engine guest.Engine
	tiers  staler
	slots  chan struct{}
	// live counts instances not yet closed, busy or idle.
	live     atomic.Int64
	mu       sync.Mutex
	idle     []*instance
	sessions map[string]*sessionInstance
	closed   bool
	// need is the linear memory a new instance holds once ready, which is
	// reserved before making one: what the load-time instance held.
	need atomic.Uint64
	// warming is set while a spare is made in the background (warm), so
	// that there is at most one at a time; ctx ends it when the pool
	// closes, and close waits for it.
	warming bool
	warm    sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
	// coldStarts counts the instances made on a call's path, for tests.
	coldStarts atomic.Int64
}

// sessionInstance is the instance a session keeps under IsolationSession;
// lock serializes the session's calls on it.
type sessionInstance struct {
	lock chan struct{}
	in   *instance
	// fresh is why the session's state was dropped, until a call of the
	// session gets an instance again and reports it.
	fresh string
}

// staler is an engine whose instances may run code that is no longer the
// newest (native's, tier.go).
type staler interface{ Stale(in *guest.Instance) bool }

func newPool(m *Module, engine guest.Engine) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	tiers, _ := engine.(staler)
	return &pool{
		m:        m,
		engine:   engine,
		tiers:    tiers,
		slots:    make(chan struct{}, m.limits.MaxInstances),
		sessions: make(map[string]*sessionInstance),
		ctx:      ctx,
		cancel:   cancel,
	}
}

// Live reports how many instances of the module exist (idle, busy or kept
// by a session).
func (m *Module) Live() int {
	if b := m.loaded(); b != nil {
		return int(b.pool.live.Load())
	}
	return 0
}

// putLoaded adds the load-time instance, in its initial state, to the idle
// instances: the first call (or session) takes it.
func (p *pool) putLoaded(in *instance) {
	in.acct.settle()
	p.need.Store(max(p.need.Load(), in.acct.held))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle = append(p.idle, in)
	in.acct.park(acctIdle)
}

// acquire returns an instance for one call, waiting for a free slot as long
// as ctx allows. release must follow. fresh is set (to
// tool.Outcome.FreshState) when the session's state was dropped since its
// last call.
func (p *pool) acquire(ctx context.Context, session string) (in *instance, fresh string, err error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	if p.m.limits.Isolation == IsolationSession && session != "" {
		in, fresh, err := p.acquireSession(ctx, session)
		if err != nil {
			<-p.slots
		}
		return in, fresh, err
	}
	if in := p.takeIdle(); in != nil {
		return in, "", nil
	}
	in, err = p.fresh(ctx, false)
	if err != nil {
		<-p.slots
		return nil, "", err
	}
	return in, "", nil
}

// takeIdle claims an idle instance, skipping any the budget is evicting
// and retiring any that runs stale code.
func (p *pool) takeIdle() *instance {
	var stale []*instance
	defer func() {
		for _, in := range stale {
			in.close(context.Background())
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := len(p.idle); n > 0; n = len(p.idle) {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		if !in.acct.take() {
			continue // claimed by the evictor, which closes it
		}
		if p.stale(in) {
			stale = append(stale, in)
			continue
		}
		return in
	}
	return nil
}

// stale reports whether in runs code its engine has replaced since.
func (p *pool) stale(in *instance) bool { return p.tiers != nil && p.tiers.Stale(in.Instance) }

// retireStale closes the idle instances whose code the engine replaced,
// and starts a spare of the new code in their place: the engine calls it
// once, after the swap. Busy instances are retired as they come back
// (release); a session's stays with it until the session ends.
func (p *pool) retireStale() {
	p.mu.Lock()
	var stale []*instance
	p.idle = slices.DeleteFunc(p.idle, func(in *instance) bool {
		if p.stale(in) && in.acct.take() {
			stale = append(stale, in)
			return true
		}
		return false
	})
	if len(stale) > 0 {
		p.warmLocked()
	}
	p.mu.Unlock()
	for _, in := range stale {
		in.close(context.Background())
	}
}

// warmLocked starts making a spare instance in the background, so that the
// next new session (or concurrent call) finds one ready instead of paying
// for an instantiation. At most one is made at a time, and only while no
// instance is idle; it is charged to the budget but evicts nothing to get
// there. release calls it once a call has ended, so that on a busy machine
// the spare does not compete with the call that took the last idle
// instance. Called with p.mu held.
func (p *pool) warmLocked() {
	if p.closed || p.warming || len(p.idle) > 0 || !p.m.rt.startSpare() {
		return
	}
	p.warming = true
	p.warm.Add(1)
	go func() {
		defer p.m.rt.endSpare()
		defer p.warm.Done()
		if h := p.m.rt.testHooks.spare; h != nil {
			h(p.m.name)
		}
		in, err := p.fresh(p.ctx, true)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.warming = false
		if err != nil {
			p.m.rt.log.Debug("no spare instance made", "module", p.m.name, "error", err)
			return
		}
		if p.closed || len(p.idle) >= max(p.m.limits.MaxInstances, 1) || !in.acct.park(acctIdle) {
			in.close(context.Background())
			return
		}
		p.idle = append(p.idle, in)
	}()
}

// fresh makes an instance in the module's initial state, with the memory
// it needs reserved in the budget first. A spare evicts nothing.
func (p *pool) fresh(ctx context.Context, spare bool) (*instance, error) {
	if !spare {
		p.coldStarts.Add(1)
	}
	acct, err := p.m.rt.budget.open(ctx, p.need.Load(), spare)
	if err != nil {
		return nil, p.m.unavailable(err)
	}
	in, err := p.freshInstance(withAccount(ctx, acct))
	if err != nil {
		acct.close()
		if acct.refused.Load() {
			return nil, p.m.unavailable(err)
		}
		return nil, err
	}
	acct.settle()
	return in, nil
}

// unavailable is the refusal of an instance for want of budget.
func (m *Module) unavailable(err error) error {
	return tool.Errorf(tool.KindUnavailable, "no instance of %s can start: %v", m.name, err)
}

func (p *pool) acquireSession(ctx context.Context, session string) (*instance, string, error) {
	p.mu.Lock()
	s, ok := p.sessions[session]
	if !ok {
		s = &sessionInstance{lock: make(chan struct{}, 1)}
		p.sessions[session] = s
	}
	p.mu.Unlock()
	select {
	case s.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
	if s.in != nil && !s.in.acct.take() {
		// Evicted for the budget while the session was between calls.
		s.in = nil
		s.fresh = freshStateEvicted
	}
	if s.in == nil {
		in := p.takeIdle()
		if in == nil {
			var err error
			if in, err = p.fresh(ctx, false); err != nil {
				<-s.lock
				return nil, "", err
			}
		}
		in.owner = s
		s.in = in
	}
	fresh := s.fresh
	s.fresh = ""
	return s.in, fresh, nil
}

// release returns in after a call. A broken instance is discarded; under
// IsolationCall a healthy one is reset to its initial state first.
func (p *pool) release(ctx context.Context, in *instance, healthy bool) {
	defer func() { <-p.slots }()
	if s := in.owner; s != nil {
		p.mu.Lock()
		closed := p.closed
		p.warmLocked()
		p.mu.Unlock()
		if !healthy || closed || !in.acct.park(acctParked) {
			in.close(ctx)
			s.in = nil
		}
		<-s.lock
		return
	}
	// An instance of replaced code is retired, never reused.
	healthy = healthy && !p.stale(in)
	// Only IsolationShared reuses an instance as it is: a sessionless call
	// under IsolationSession is isolated like IsolationCall.
	if healthy && p.m.limits.Isolation != IsolationShared {
		healthy = p.reset(in)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !healthy || p.closed || len(p.idle) >= p.m.limits.MaxInstances || !in.acct.park(acctIdle) {
		in.close(ctx)
		p.warmLocked()
		return
	}
	p.idle = append(p.idle, in)
}

// forget drops an instance the budget evicts from the idle list.
func (p *pool) forget(in *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := slices.Index(p.idle, in); i >= 0 {
		p.idle = slices.Delete(p.idle, i, i+1)
	}
}

// endSession discards the instance a session kept.
func (p *pool) endSession(ctx context.Context, session string) {
	p.mu.Lock()
	s, ok := p.sessions[session]
	delete(p.sessions, session)
	p.mu.Unlock()
	if !ok {
		return
	}
	s.lock <- struct{}{} // wait for the session's running call, if any
	if s.in != nil && s.in.acct.take() {
		s.in.close(ctx)
	}
	s.in = nil
}

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	sessions := p.sessions
	p.sessions = map[string]*sessionInstance{}
	p.mu.Unlock()
	p.cancel()
	p.warm.Wait()
	for _, in := range idle {
		if in.acct.take() {
			in.close(ctx)
		}
	}
	// A session's instance running a call is closed by release (which
	// sees closed); one the budget claimed, by the evictor.
	for _, s := range sessions {
		select {
		case s.lock <- struct{}{}:
			if in := s.in; in != nil && in.acct.take() {
				in.close(ctx)
			}
			s.in = nil
			<-s.lock
		default:
		}
	}
}

// freshInstance makes an instance in the module's initial state.
func (p *pool) freshInstance(ctx context.Context) (*instance, error) {
	in, err := p.engine.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return p.adopt(in), nil
}

// reset returns in to the module's initial state, or reports that it cannot.
func (p *pool) reset(in *instance) bool { return p.engine.Reset(in.Instance) }
