package runtime

import (
	"context"
	"sync"
	"sync/atomic"
)

// pool keeps a module's instances. Slots bound how many calls run at once;
// idle instances wait, already reset, for the next call.
type pool struct {
	m     *Module
	slots chan struct{}
	// live counts instances not yet closed, busy or idle.
	live     atomic.Int64
	mu       sync.Mutex
	idle     []*instance
	sessions map[string]*sessionInstance
	closed   bool
}

// sessionInstance is the instance a session keeps under IsolationSession;
// lock serializes the session's calls on it.
type sessionInstance struct {
	lock chan struct{}
	in   *instance
}

func newPool(m *Module) *pool {
	return &pool{
		m:        m,
		slots:    make(chan struct{}, m.limits.MaxInstances),
		sessions: make(map[string]*sessionInstance),
	}
}

// Live reports how many instances of the module exist (idle, busy or kept
// by a session).
func (m *Module) Live() int {
	if m.lazy != nil {
		if body := m.bodyOf(); body != nil {
			return body.Live()
		}
		return 0
	}
	return int(m.pool.live.Load())
}

// acquire returns an instance for one call, waiting for a free slot as long
// as ctx allows. release must follow.
func (p *pool) acquire(ctx context.Context, session string) (*instance, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if p.m.limits.Isolation == IsolationSession && session != "" {
		in, err := p.acquireSession(ctx, session)
		if err != nil {
			<-p.slots
		}
		return in, err
	}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return in, nil
	}
	p.mu.Unlock()
	in, err := p.m.freshInstance(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return in, nil
}

func (p *pool) acquireSession(ctx context.Context, session string) (*instance, error) {
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
		return nil, ctx.Err()
	}
	if s.in == nil {
		in, err := p.m.freshInstance(ctx)
		if err != nil {
			<-s.lock
			return nil, err
		}
		in.session = session
		s.in = in
	}
	return s.in, nil
}

// release returns in after a call. A broken instance is discarded; under
// IsolationCall a healthy one is reset to its initial state first.
func (p *pool) release(ctx context.Context, in *instance, healthy bool) {
	defer func() { <-p.slots }()
	if in.session != "" {
		p.mu.Lock()
		s := p.sessions[in.session]
		p.mu.Unlock()
		if !healthy {
			in.close(ctx)
			s.in = nil
		}
		<-s.lock
		return
	}
	// Only IsolationShared reuses an instance as it is: a sessionless call
	// under IsolationSession is isolated like IsolationCall.
	if healthy && p.m.limits.Isolation != IsolationShared {
		healthy = p.m.reset(in)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !healthy || p.closed || len(p.idle) >= p.m.limits.MaxInstances {
		in.close(ctx)
		return
	}
	p.idle = append(p.idle, in)
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
	if s.in != nil {
		s.in.close(ctx)
	}
}

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	sessions := p.sessions
	p.sessions = map[string]*sessionInstance{}
	p.mu.Unlock()
	for _, in := range idle {
		in.close(ctx)
	}
	for _, s := range sessions {
		if s.in != nil {
			s.in.close(ctx)
		}
	}
}

// freshInstance makes an instance in the module's initial state.
func (m *Module) freshInstance(ctx context.Context) (*instance, error) {
	in, err := m.engine.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return m.pool.adopt(in), nil
}

// reset returns in to the module's initial state, or reports that it cannot.
func (m *Module) reset(in *instance) bool { return m.engine.Reset(in.Instance) }
