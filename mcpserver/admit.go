package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/warden-run/warden/tool"
)

// CallLimits bounds the calls of one tool (Options.CallLimits), or those of
// a feature's owner (Options.OwnerLimits).
type CallLimits struct {
	// Module names the group of tools whose calls share MaxInstances (the
	// module serving the tool); "" means the tool alone.
	Module string
	// MaxInstances bounds the calls of Module running at once (its
	// instance pool's size); 0 means no bound. InstancesSetting is the
	// config key that sets it, for refusals.
	MaxInstances     int
	InstancesSetting string
	// MaxInFlight bounds the tool's own calls running at once; 0 means
	// only MaxInstances does. InFlightSetting is its config key.
	MaxInFlight     int
	InFlightSetting string
	// Timeout is the call's deadline, which starts when the call arrives
	// and so covers its wait for a slot; 0 means only QueueWait bounds the
	// wait.
	Timeout time.Duration
	// Rate, when set, replaces the server's per-tool rate limit for this
	// tool (tools.limits.<tool>.rate).
	Rate *RateLimit
	// OneCallPerSession says that Module keeps one instance per client
	// session (isolation: session), on which that session's calls run one
	// at a time: a session's second call waits in the server's queue, not
	// on a call slot. IsolationSetting is the config key, for refusals.
	OneCallPerSession bool
	IsolationSetting  string
}

// ticket is what one call must fit to run: a slot of the server, of its
// client, of its tool and of its module, and, for a module with an
// instance per session, that session's turn on it. session is the MCP
// session ("" for a sessionless request).
type ticket struct {
	client, tool, session string
	limits                CallLimits
}

// countKey names one of the things admission counts running calls of: a
// client, a tool, a module, or a session's calls of a module. A struct
// rather than a prefixed string, so that counting a call builds no string
// (RATIONALE.md, "The stdio call path").
type countKey struct {
	kind byte // 'c' client, 't' tool, 'm' module, 's' a session's calls of a module
	name string
	// of is, for kind 's', the module's own key (kind and name).
	ofKind byte
	ofName string
}

func clientKey(client string) countKey { return countKey{kind: 'c', name: client} }
func toolKey(name string) countKey     { return countKey{kind: 't', name: name} }

// moduleKey is the key t's instances are counted under: its module's, or,
// for a tool that has none, its own.
func (t *ticket) moduleKey() countKey {
	if t.limits.Module == "" {
		return toolKey(t.tool)
	}
	return countKey{kind: 'm', name: t.limits.Module}
}

// sessionKey counts the session's calls of the module, when they run one
// at a time; ok is false when they do not.
func (t *ticket) sessionKey() (k countKey, ok bool) {
	if !t.limits.OneCallPerSession || t.session == "" {
		return countKey{}, false
	}
	m := t.moduleKey()
	return countKey{kind: 's', name: t.session, ofKind: m.kind, ofName: m.name}, true
}

// admission shares the server's call slots fairly. A call waits in its
// client's queue, by tool; whenever a slot frees, the client running the
// fewest calls is served first and, within it, the tool running the fewest
// (round-robin among equals), and only a call whose tool, module and
// client all have room is admitted, so that
// a flood of calls to one slow tool (or from one client) cannot take the
// slots other tools and clients need. Queues are bounded: past them a call
// is refused at once.
type admission struct {
	global, perClient         int
	maxQueued, maxClientQueue int

	mu      sync.Mutex
	running int
	counts  map[countKey]int
	clients []*clientQueue // clients with waiting calls, in serving order
	queued  int
}

type clientQueue struct {
	id     string
	tools  []*toolQueue
	queued int
}

type toolQueue struct {
	name    string
	waiters []*waiter
}

type waiter struct {
	t        *ticket
	ready    chan struct{}
	admitted bool
}

func newAdmission(global, perClient, maxQueued, maxClientQueue int) *admission {
	return &admission{
		global: global, perClient: perClient, maxQueued: maxQueued, maxClientQueue: maxClientQueue,
		counts: make(map[countKey]int),
	}
}

// fits reports whether t may run now. Called with a.mu held.
func (a *admission) fits(t *ticket) bool {
	return a.blocker(t) == ""
}

// blocker names the limit that keeps t from running now, "" when none
// does. Called with a.mu held.
func (a *admission) blocker(t *ticket) string {
	l := t.limits
	switch {
	case a.running >= a.global:
		return fmt.Sprintf("all %d call slots of the server are taken (server.max_in_flight)", a.global)
	case a.counts[clientKey(t.client)] >= a.perClient:
		return fmt.Sprintf("this client already runs %d calls, its share (server.max_in_flight_per_client)", a.perClient)
	case l.MaxInFlight > 0 && a.counts[toolKey(t.tool)] >= l.MaxInFlight:
		return fmt.Sprintf("%d calls of %s are running, its limit (%s)", l.MaxInFlight, t.tool, l.InFlightSetting)
	case l.MaxInstances > 0 && a.counts[t.moduleKey()] >= l.MaxInstances:
		if l.Module != "" && l.Module != t.tool {
			return fmt.Sprintf("%d calls of module %s are running, one on each of its instances (%s)", l.MaxInstances, l.Module, l.InstancesSetting)
		}
		return fmt.Sprintf("%d calls of %s are running, one on each of its instances (%s)", l.MaxInstances, t.tool, l.InstancesSetting)
	case a.sessionBusy(t):
		module := l.Module
		if module == "" {
			module = t.tool
		}
		return fmt.Sprintf("this session's previous call of %s is still running: a session's calls run one at a time on its own instance (%s)", module, l.IsolationSetting)
	}
	return ""
}

// sessionBusy reports whether t's session already runs a call of t's
// module that must end before t starts. Called with a.mu held.
func (a *admission) sessionBusy(t *ticket) bool {
	k, ok := t.sessionKey()
	return ok && a.counts[k] > 0
}

func (a *admission) take(t *ticket) {
	a.running++
	a.counts[clientKey(t.client)]++
	a.counts[toolKey(t.tool)]++
	if t.limits.Module != "" {
		a.counts[t.moduleKey()]++
	}
	if k, ok := t.sessionKey(); ok {
		a.counts[k]++
	}
}

func (a *admission) put(t *ticket) {
	a.running--
	a.uncount(clientKey(t.client))
	a.uncount(toolKey(t.tool))
	if t.limits.Module != "" {
		a.uncount(t.moduleKey())
	}
	if k, ok := t.sessionKey(); ok {
		a.uncount(k)
	}
}

func (a *admission) uncount(k countKey) {
	if a.counts[k]--; a.counts[k] <= 0 {
		delete(a.counts, k)
	}
}

// enter queues t, or refuses it when the queues are full. Called with a.mu
// held.
func (a *admission) enter(t *ticket) (*waiter, *tool.Error) {
	i := slices.IndexFunc(a.clients, func(c *clientQueue) bool { return c.id == t.client })
	switch {
	case a.queued >= a.maxQueued:
		return nil, tool.Errorf(tool.KindUnavailable,
			"server busy: %d calls are already waiting for a call slot, the limit (server.max_queued); retry later", a.maxQueued)
	case i >= 0 && a.clients[i].queued >= a.maxClientQueue:
		return nil, tool.Errorf(tool.KindUnavailable,
			"server busy: this client already has %d calls waiting for a call slot, the limit (server.max_queued_per_client); wait for replies before sending more", a.maxClientQueue)
	}
	if i < 0 {
		a.clients = append(a.clients, &clientQueue{id: t.client})
		i = len(a.clients) - 1
	}
	c := a.clients[i]
	j := slices.IndexFunc(c.tools, func(q *toolQueue) bool { return q.name == t.tool })
	if j < 0 {
		c.tools = append(c.tools, &toolQueue{name: t.tool})
		j = len(c.tools) - 1
	}
	w := &waiter{t: t, ready: make(chan struct{})}
	c.tools[j].waiters = append(c.tools[j].waiters, w)
	c.queued++
	a.queued++
	return w, nil
}

// dispatch admits waiting calls while any fits. Each time, the client
// running the fewest calls is served first, and of its queues the tool
// running the fewest; ties go round-robin (a served client, and a served
// tool within its client, moves to the back). Called with a.mu held.
func (a *admission) dispatch() {
	for a.running < a.global {
		ci, tj := -1, -1
		for i, c := range a.clients {
			if ci >= 0 && a.counts[clientKey(c.id)] >= a.counts[clientKey(a.clients[ci].id)] {
				continue
			}
			best := -1
			for j, q := range c.tools {
				if !a.fits(q.waiters[0].t) {
					continue
				}
				if best < 0 || a.counts[toolKey(q.name)] < a.counts[toolKey(c.tools[best].name)] {
					best = j
				}
			}
			if best >= 0 {
				ci, tj = i, best
			}
		}
		if ci < 0 {
			return
		}
		c := a.clients[ci]
		q := c.tools[tj]
		w := q.waiters[0]
		q.waiters = q.waiters[1:]
		c.queued--
		a.queued--
		w.admitted = true
		a.take(w.t)
		close(w.ready)
		c.tools = slices.Delete(c.tools, tj, tj+1)
		if len(q.waiters) > 0 {
			c.tools = append(c.tools, q)
		}
		a.clients = slices.Delete(a.clients, ci, ci+1)
		if len(c.tools) > 0 {
			a.clients = append(a.clients, c)
		}
	}
}

// leave takes a waiter that gave up out of its queue. Called with a.mu held.
func (a *admission) leave(w *waiter) {
	ci := slices.IndexFunc(a.clients, func(c *clientQueue) bool { return c.id == w.t.client })
	if ci < 0 {
		return
	}
	c := a.clients[ci]
	tj := slices.IndexFunc(c.tools, func(q *toolQueue) bool { return q.name == w.t.tool })
	if tj < 0 {
		return
	}
	q := c.tools[tj]
	if k := slices.Index(q.waiters, w); k >= 0 {
		q.waiters = slices.Delete(q.waiters, k, k+1)
		c.queued--
		a.queued--
	}
	if len(q.waiters) == 0 {
		c.tools = slices.Delete(c.tools, tj, tj+1)
	}
	if len(c.tools) == 0 {
		a.clients = slices.Delete(a.clients, ci, ci+1)
	}
}

// release frees t's slots and admits the calls that now fit.
func (a *admission) release(t *ticket) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.put(t)
	a.dispatch()
}

// acquire waits until t may run, at most wait, and returns how long it
// waited. On failure it returns the refusal (blocked names the limit it
// waited for) instead.
func (a *admission) acquire(ctx context.Context, t *ticket, wait time.Duration) (waited time.Duration, blocked string, err *tool.Error) {
	start := time.Now()
	a.mu.Lock()
	if a.queued == 0 && a.maxQueued > 0 && a.fits(t) {
		// Nobody waits and t fits: enter and dispatch would queue t and
		// admit it at once, leaving the queues as they were; take the slot
		// without building the queue entries.
		a.take(t)
		a.mu.Unlock()
		return 0, "", nil
	}
	w, refused := a.enter(t)
	if refused != nil {
		a.mu.Unlock()
		return 0, "", refused
	}
	a.dispatch()
	if w.admitted {
		a.mu.Unlock()
		return 0, "", nil
	}
	a.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-w.ready:
		return time.Since(start), "", nil
	case <-timer.C:
	case <-ctx.Done():
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.admitted {
		// Admitted as the wait ran out: run it rather than waste the slot.
		return time.Since(start), "", nil
	}
	blocked = a.blocker(t)
	if blocked == "" {
		blocked = "calls that arrived before it were served first"
	}
	a.leave(w)
	a.dispatch() // its place may have been what held others back
	if ctx.Err() != nil {
		return time.Since(start), blocked, tool.Errorf(tool.KindCancelled, "cancelled while waiting for a free call slot")
	}
	return time.Since(start), blocked, nil
}

// inUse reports the slots taken and the calls waiting, for tests.
func (a *admission) inUse() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running + a.queued + len(a.counts)
}
