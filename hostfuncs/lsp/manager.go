package lsp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/warden-run/warden/tool"
)

// Manager runs language servers on demand: at most one per Target, started
// by the first query that needs it, stopped when idle, restarted after a
// crash unless it keeps crashing, and all stopped by Close. It is safe for
// concurrent use.
type Manager struct {
	cfg Config
	sp  *spawner
	// ctx ends with Close; starts in flight are abandoned with it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	slots  map[Target]*slot
	live   map[*server]struct{} // servers whose process has not been reaped
	// procs counts start attempts and registered servers until their
	// process is reaped; Close waits for it.
	procs sync.WaitGroup
}

// slot is the state of one Target: its server, a start in flight, and the
// circuit breaker.
type slot struct {
	srv      *server
	starting *startAttempt
	starts   int // processes started, for tests and logs

	failures  []time.Time // within FailureWindow
	lastErr   error
	tripped   bool
	openUntil time.Time
}

// startAttempt is the start barrier: every query arriving while a server
// starts waits on done instead of starting another.
type startAttempt struct {
	done chan struct{}
	err  error
}

// NewManager checks cfg and returns a Manager. No server starts until a
// query needs it.
func NewManager(cfg Config) (*Manager, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		cfg:    cfg,
		sp:     newSpawner(),
		ctx:    ctx,
		cancel: cancel,
		slots:  map[Target]*slot{},
		live:   map[*server]struct{}{},
	}, nil
}

// Languages returns the configured language names, sorted.
func (m *Manager) Languages() []string {
	names := make([]string, 0, len(m.cfg.Languages))
	for name := range m.cfg.Languages {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// LanguageFor returns the language whose extensions claim path.
func (m *Manager) LanguageFor(path string) (string, bool) {
	return m.cfg.languageFor(path)
}

var errClosed = tool.Errorf(tool.KindFailed, "lsp: warden is shutting down its language servers")

// Close stops every server: shutdown, exit, and after the grace period a
// kill of its process group. When ctx ends first, the remaining groups are
// killed at once. Close returns once every server process is reaped; queries
// after Close fail.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.procs.Wait()
		return nil
	}
	m.closed = true
	var servers []*server
	for _, sl := range m.slots {
		if sl.srv != nil {
			servers = append(servers, sl.srv)
			sl.srv.stopping.Store(true)
			sl.srv = nil
		}
	}
	m.mu.Unlock()
	// Starts in flight give up and kill what they started.
	m.cancel()
	for _, s := range servers {
		go s.stop(m.cfg.ShutdownGrace)
	}
	done := make(chan struct{})
	go func() {
		m.procs.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		m.mu.Lock()
		n := len(m.live)
		for s := range m.live {
			s.stopping.Store(true)
			_ = s.group.kill()
		}
		m.mu.Unlock()
		<-done
		if n > 0 {
			err = fmt.Errorf("lsp: close: killed %d language servers: %w", n, ctx.Err())
		}
	}
	m.sp.close()
	return err
}

// acquire returns the running server of t, starting it if needed. The
// caller must release it.
func (m *Manager) acquire(ctx context.Context, t Target) (*server, error) {
	if _, ok := m.cfg.Languages[t.Language]; !ok {
		return nil, tool.Errorf(tool.KindNotFound, "no language server is configured for %q", t.Language)
	}
	if !filepath.IsAbs(t.Root) || filepath.Clean(t.Root) != t.Root {
		return nil, fmt.Errorf("lsp: project root %q must be absolute and clean", t.Root)
	}
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, errClosed
		}
		sl := m.slots[t]
		if sl == nil {
			sl = &slot{}
			m.slots[t] = sl
		}
		if s := sl.srv; s != nil && !s.dead() {
			s.active++
			s.idleGen++
			if s.idleTimer != nil {
				s.idleTimer.Stop()
			}
			m.mu.Unlock()
			return s, nil
		}
		a := sl.starting
		if a == nil {
			now := m.cfg.now()
			if sl.tripped && now.Before(sl.openUntil) {
				err := m.breakerError(t, sl, now)
				m.mu.Unlock()
				return nil, err
			}
			a = &startAttempt{done: make(chan struct{})}
			sl.starting = a
			sl.starts++
			m.procs.Add(1)
			go m.start(t, sl, a)
		}
		m.mu.Unlock()
		select {
		case <-a.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if a.err != nil {
			return nil, a.err
		}
		m.mu.Lock()
	}
}

func (m *Manager) breakerError(t Target, sl *slot, now time.Time) error {
	return tool.Errorf(tool.KindFailed,
		"language server %s for %s failed %d times within %s (last: %v); not restarting it for another %s",
		m.cfg.Languages[t.Language].Command, t.Language, len(sl.failures), m.cfg.FailureWindow,
		sl.lastErr, sl.openUntil.Sub(now).Round(time.Second))
}

// start runs one start attempt, independent of the query that caused it:
// the queries waiting on the barrier each bound their own wait.
func (m *Manager) start(t Target, sl *slot, a *startAttempt) {
	s, err := startServer(m.ctx, m.sp, &m.cfg, t, m.exited)
	var missing error
	if err != nil && m.ctx.Err() == nil {
		// A server that is not installed (or a rustup proxy without its
		// component) is not a crash: say how to install it, and don't
		// count it against the breaker.
		missing = m.cfg.installed(m.ctx, t.Language)
	}
	m.mu.Lock()
	sl.starting = nil
	switch {
	case err != nil:
	case s.exitHandled:
		// It died before we got here, and was not counted as ours.
		err = s.exitError()
	default:
		s.registered = true
		m.live[s] = struct{}{}
		if m.closed {
			s.stopping.Store(true)
			go s.stop(m.cfg.ShutdownGrace)
		} else {
			sl.srv = s
		}
	}
	if err != nil {
		switch {
		case m.ctx.Err() != nil:
			err = errClosed
		case missing != nil:
			err = missing
		default:
			m.recordFailure(t, sl, err)
		}
		// classify keeps a *tool.Error (errClosed, missing) as it is.
		a.err = classify(context.Background(), fmt.Errorf("start language server for %s: %w", t.Language, err))
	}
	m.mu.Unlock()
	if err != nil {
		// No process of this attempt is left: startServer reaps it.
		m.procs.Done()
	}
	close(a.done)
}

// exited is every server's onExit.
func (m *Manager) exited(s *server) {
	m.mu.Lock()
	s.exitHandled = true
	delete(m.live, s)
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	sl := m.slots[s.target]
	if sl != nil && sl.srv == s {
		sl.srv = nil
	}
	registered := s.registered
	if registered && !s.stopping.Load() && sl != nil {
		m.recordFailure(s.target, sl, s.exitError())
	}
	m.mu.Unlock()
	if registered {
		m.procs.Done()
	}
}

// recordFailure counts a crash or failed start against the breaker.
// Called with m.mu held.
func (m *Manager) recordFailure(t Target, sl *slot, err error) {
	now := m.cfg.now()
	sl.lastErr = err
	kept := sl.failures[:0]
	for _, f := range sl.failures {
		if now.Sub(f) < m.cfg.FailureWindow {
			kept = append(kept, f)
		}
	}
	sl.failures = append(kept, now)
	// A failure right after the cooldown (half-open) trips it again.
	if sl.tripped || len(sl.failures) >= m.cfg.MaxFailures {
		sl.tripped = true
		sl.openUntil = now.Add(m.cfg.BreakerCooldown)
		m.cfg.Logger.Error("language server keeps failing; circuit breaker open",
			"language", t.Language, "root", t.Root, "failures", len(sl.failures),
			"until", sl.openUntil, "err", err)
	}
}

// release ends a query's use of s. ok reports that the server answered,
// which closes a half-open breaker.
func (m *Manager) release(s *server, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.active--
	if ok {
		if sl := m.slots[s.target]; sl != nil && sl.srv == s {
			sl.tripped = false
		}
	}
	if s.active > 0 || m.cfg.IdleTimeout < 0 || s.dead() {
		return
	}
	s.idleGen++
	gen := s.idleGen
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.idleTimer = time.AfterFunc(m.cfg.IdleTimeout, func() { m.idle(s, gen) })
}

// idle stops s if nothing used it since the timer of generation gen was set.
func (m *Manager) idle(s *server, gen int) {
	m.mu.Lock()
	sl := m.slots[s.target]
	if gen != s.idleGen || s.active > 0 || sl == nil || sl.srv != s {
		m.mu.Unlock()
		return
	}
	sl.srv = nil
	s.stopping.Store(true)
	m.mu.Unlock()
	s.log.Info("stopping idle language server", "pid", s.pid, "idle", m.cfg.IdleTimeout)
	s.stop(m.cfg.ShutdownGrace)
}

// do runs fn on the server of t under the request timeout. A server that
// dies under a request is restarted and the request tried once more: every
// operation is read-only, so a retry is harmless.
func (m *Manager) do(ctx context.Context, t Target, fn func(context.Context, *server) error) error {
	for attempt := 0; ; attempt++ {
		s, err := m.acquire(ctx, t)
		if err != nil {
			return classify(ctx, err)
		}
		rctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
		err = fn(rctx, s)
		cancel()
		m.release(s, err == nil)
		if err != nil && attempt == 0 && ctx.Err() == nil && s.dead() && !errors.Is(err, errClosed) {
			s.log.Info("retrying on a new language server", "err", err)
			continue
		}
		return classify(ctx, err)
	}
}

// ServerStats describes one running language server.
type ServerStats struct {
	Language string
	Root     string
	PID      int
	// Memory is the resident memory of the server's process group in
	// bytes (the server and what it spawned), 0 where it is not measured
	// (outside Linux).
	Memory uint64
	// Started is when the process started.
	Started time.Time
}

// Servers returns the running servers, sorted by language and root, with
// their memory read now.
func (m *Manager) Servers() []ServerStats {
	m.mu.Lock()
	var out []ServerStats
	for t, sl := range m.slots {
		if s := sl.srv; s != nil && !s.dead() {
			out = append(out, ServerStats{Language: t.Language, Root: t.Root, PID: s.pid, Started: s.started})
		}
	}
	m.mu.Unlock()
	for i := range out {
		out[i].Memory, _ = groupMemory(out[i].PID)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Language != out[j].Language {
			return out[i].Language < out[j].Language
		}
		return out[i].Root < out[j].Root
	})
	return out
}
