package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// limitedTools is a fakeTools that bounds its tools' calls (CallLimiter).
type limitedTools struct {
	*fakeTools
	limits map[string]CallLimits
}

func (l *limitedTools) options(opts Options) Options {
	opts.CallLimits = l.CallLimits
	return opts
}

func (l *limitedTools) CallLimits(name string) CallLimits { return l.limits[name] }

// gate blocks the calls of the tools named in block until released; it
// counts the calls running at once, per tool.
type gate struct {
	block   map[string]bool
	release chan struct{} // closed: every call goes on
	mu      sync.Mutex
	running map[string]int
	peak    map[string]int
	// one releases one call whose "text" argument is the key.
	one map[string]chan struct{}
}

func newGate(block ...string) *gate {
	g := &gate{block: map[string]bool{}, release: make(chan struct{}), running: map[string]int{}, peak: map[string]int{}, one: map[string]chan struct{}{}}
	for _, b := range block {
		g.block[b] = true
	}
	return g
}

// releaseOne returns the channel that releases one call with text key.
func (g *gate) releaseOne(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.one[key] == nil {
		g.one[key] = make(chan struct{})
	}
	return g.one[key]
}

func (g *gate) call(ctx context.Context, c Call) (*tool.Result, error) {
	var args struct{ Text string }
	_ = json.Unmarshal(c.Arguments, &args)
	g.mu.Lock()
	g.running[c.Name]++
	g.running[c.Name+"/"+args.Text]++
	g.peak[c.Name] = max(g.peak[c.Name], g.running[c.Name])
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running[c.Name]--
		g.running[c.Name+"/"+args.Text]--
		g.mu.Unlock()
	}()
	if g.block[c.Name] {
		select {
		case <-g.releaseOne(args.Text):
		case <-g.release:
		case <-ctx.Done():
			return tool.ErrorResult(tool.Errorf(tool.KindCancelled, "cancelled")), nil
		}
	}
	return &tool.Result{Content: []tool.Content{tool.TextContent("ran " + c.Name)}}, nil
}

func (g *gate) runningOf(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[name]
}

func (g *gate) peakOf(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak[name]
}

func (s *Server) runningCalls() int {
	s.admit.mu.Lock()
	defer s.admit.mu.Unlock()
	return s.admit.running
}

func (s *Server) queuedCalls() int {
	s.admit.mu.Lock()
	defer s.admit.mu.Unlock()
	return s.admit.queued
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[0].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// flood starts n calls of name on cs and returns a channel of their results.
func flood(cs *mcp.ClientSession, name string, n int) chan *mcp.CallToolResult {
	return floodText(cs, name, "", n)
}

// floodText is flood with the calls' "text" argument.
func floodText(cs *mcp.ClientSession, name, text string, n int) chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, n)
	for range n {
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": text}})
			if err != nil {
				res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			out <- res
		}()
	}
	return out
}

// waitedRecorder records the QueueWaited reports in order.
type waitedRecorder struct {
	mu     sync.Mutex
	waited []time.Duration
}

func (w *waitedRecorder) add(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waited = append(w.waited, d)
}

func (w *waitedRecorder) last() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waited[len(w.waited)-1]
}

// TestSlowToolDoesNotBlockOthers: 40 calls of a slow tool whose module has
// 8 instances run 8 at a time, and the 32 others wait without holding any
// of the server's 32 slots: a fast tool's call runs at once, from the same
// client and from another.
func TestSlowToolDoesNotBlockOthers(t *testing.T) {
	g := newGate("slow")
	tools := &limitedTools{fakeTools: newFakeTools(desc("slow"), desc("fast")), limits: map[string]CallLimits{
		"slow": {Module: "slowmod", MaxInstances: 8, InstancesSetting: "tools.limits.slowmod.max_instances"},
		"fast": {Module: "fastmod", MaxInstances: 8, InstancesSetting: "tools.limits.fastmod.max_instances"},
	}}
	tools.setCall(g.call)
	var rec waitedRecorder
	s, _ := newServer(t, tools, Options{MaxInFlight: 32, QueueWait: time.Minute, QueueWaited: rec.add})
	flooder := connect(t, s, transports[0], nil)
	other := connect(t, s, transports[0], nil)
	results := flood(flooder, "slow", 40)
	eventually(t, "8 slow calls running and 32 queued", func() bool {
		return g.runningOf("slow") == 8 && s.queuedCalls() == 32
	})
	for _, cs := range []*mcp.ClientSession{flooder, other} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "fast"})
		if err != nil || res.IsError || text(res) != "ran fast" {
			t.Fatalf("fast call while slow is flooded: %+v %v", res, err)
		}
		if w := rec.last(); w != 0 {
			t.Errorf("the fast call waited %s for a slot, want 0", w)
		}
	}
	close(g.release)
	for range 40 {
		if res := <-results; res.IsError {
			t.Errorf("slow call: %s", text(res))
		}
	}
	if p := g.peakOf("slow"); p != 8 {
		t.Errorf("slow ran %d calls at once, want its module's 8 instances", p)
	}
	if n := s.admit.inUse(); n != 0 {
		t.Errorf("%d slots or queue entries left after every call ended", n)
	}
}

// TestSessionCallsWaitInTheQueue: a module that keeps an instance per
// session runs that session's calls one at a time, so a session's flood of
// it waits in the queue without holding call slots or the module's other
// instances: one call of the flood runs, another session's call of the same
// module runs beside it at once, and the waiting calls hold no slot.
func TestSessionCallsWaitInTheQueue(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			g := newGate("slow")
			tools := &limitedTools{fakeTools: newFakeTools(desc("slow")), limits: map[string]CallLimits{
				"slow": {Module: "slowmod", MaxInstances: 8, InstancesSetting: "tools.limits.slowmod.max_instances",
					OneCallPerSession: true, IsolationSetting: "tools.limits.slowmod.isolation"},
			}}
			tools.setCall(g.call)
			if tr.http && tr.protocol == "" {
				t.Skip("HTTP under 2026-07-28 is sessionless: each call is isolated on its own instance")
			}
			s, _ := newServer(t, tools, Options{MaxInFlight: 4, QueueWait: time.Minute})
			flooder := connect(t, s, tr, nil)
			other := connect(t, s, tr, nil)
			// On a failure, blocked calls must end before the connections
			// close (cleanups run last-registered first).
			var releaseOnce sync.Once
			releaseAll := func() { releaseOnce.Do(func() { close(g.release) }) }
			t.Cleanup(releaseAll)
			results := floodText(flooder, "slow", "flood", 10)
			eventually(t, "1 call of the flood running and 9 queued", func() bool {
				return g.runningOf("slow/flood") == 1 && s.queuedCalls() == 9
			})
			if running := s.runningCalls(); running != 1 {
				t.Fatalf("%d call slots taken, want 1: the session's waiting calls hold none", running)
			}
			solo := floodText(other, "slow", "other", 1)
			eventually(t, "the other session's call running beside the flood", func() bool {
				return g.runningOf("slow/other") == 1
			})
			close(g.releaseOne("other"))
			if res := <-solo; res.IsError {
				t.Fatalf("other session: %s", text(res))
			}
			releaseAll()
			for range 10 {
				if res := <-results; res.IsError {
					t.Errorf("flood call: %s", text(res))
				}
			}
			if p := g.peakOf("slow"); p != 2 {
				t.Errorf("slow ran %d calls at once, want 2 (one per session)", p)
			}
			if n := s.admit.inUse(); n != 0 {
				t.Errorf("%d slots or queue entries left after every call ended", n)
			}
		})
	}
}

// TestClientFloodDoesNotStarveAnother: one client's flood takes at most its
// share of the slots, another client's call runs at once, and when a slot
// frees the other client's queued call gets it, not the flooder's older
// backlog.
func TestClientFloodDoesNotStarveAnother(t *testing.T) {
	g := newGate("work")
	tools := &limitedTools{fakeTools: newFakeTools(desc("work")), limits: map[string]CallLimits{
		"work": {MaxInstances: 100},
	}}
	tools.setCall(g.call)
	var rec waitedRecorder
	s, _ := newServer(t, tools, Options{MaxInFlight: 4, MaxInFlightPerClient: 3, MaxQueued: 100, MaxQueuedPerClient: 50, QueueWait: time.Minute, QueueWaited: rec.add})
	flooder := connect(t, s, transports[0], nil)
	other := connect(t, s, transports[0], nil)
	floodResults := floodText(flooder, "work", "f", 20)
	eventually(t, "the flooder's share running, the rest queued", func() bool {
		return g.runningOf("work") == 3 && s.queuedCalls() == 17
	})
	// The fourth slot is free for the other client.
	first := floodText(other, "work", "o1", 1)
	eventually(t, "the other client's first call running", func() bool { return g.runningOf("work/o1") == 1 })
	if w := rec.last(); w != 0 {
		t.Errorf("the other client's call waited %s, want 0", w)
	}
	second := floodText(other, "work", "o2", 1)
	eventually(t, "the other client's second call queued", func() bool { return s.queuedCalls() == 18 })
	g.releaseOne("o1") <- struct{}{}
	if res := <-first; res.IsError {
		t.Fatalf("other client's first call: %s", text(res))
	}
	eventually(t, "the other client's second call running", func() bool { return g.runningOf("work/o2") == 1 })
	if n := s.queuedCalls(); n != 17 {
		t.Errorf("%d calls queued, want the flooder's 17", n)
	}
	close(g.release)
	<-second
	for range 20 {
		if res := <-floodResults; res.IsError {
			t.Errorf("flood call: %s", text(res))
		}
	}
}

// TestAdmissionOrder: when a slot frees, the client running the fewest
// calls is served first, and within a client the tool running the fewest,
// whatever the order the calls arrived in.
func TestAdmissionOrder(t *testing.T) {
	a := newAdmission(2, 2, 100, 100)
	running := func(client, name string) *ticket {
		tk := &ticket{client: client, tool: name}
		a.mu.Lock()
		defer a.mu.Unlock()
		w, err := a.enter(tk)
		if err != nil {
			t.Fatal(err)
		}
		a.dispatch()
		if !w.admitted {
			t.Fatalf("%s/%s not admitted", client, name)
		}
		return tk
	}
	queue := func(client, name string) *waiter {
		a.mu.Lock()
		defer a.mu.Unlock()
		w, err := a.enter(&ticket{client: client, tool: name})
		if err != nil {
			t.Fatal(err)
		}
		a.dispatch()
		if w.admitted {
			t.Fatalf("%s/%s admitted, want queued", client, name)
		}
		return w
	}
	a1 := running("A", "slow")
	a2 := running("A", "slow")
	aSlow := queue("A", "slow")
	aFast := queue("A", "fast")
	b := queue("B", "slow")
	a.release(a1)
	if !b.admitted || aSlow.admitted || aFast.admitted {
		t.Fatalf("after A's call ended: B %v, A slow %v, A fast %v; want B (it runs none)", b.admitted, aSlow.admitted, aFast.admitted)
	}
	a.release(a2)
	if !aFast.admitted || aSlow.admitted {
		t.Fatalf("after A's second call ended: A fast %v, A slow %v; want A's fast (slow runs 1 call, fast none)", aFast.admitted, aSlow.admitted)
	}
}

// TestDeadlineCoversQueueWait: a call that waits for its module's only
// instance past its own timeout fails with kind timeout naming the wait
// and the limit it waited for; it never reached the tool.
func TestDeadlineCoversQueueWait(t *testing.T) {
	g := newGate("slow")
	tools := &limitedTools{fakeTools: newFakeTools(desc("slow")), limits: map[string]CallLimits{
		"slow": {Module: "m", MaxInstances: 1, InstancesSetting: "tools.limits.m.max_instances", Timeout: 30 * time.Millisecond},
	}}
	var reached atomic.Int32
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		reached.Add(1)
		return g.call(ctx, c)
	})
	s, _ := newServer(t, tools, Options{QueueWait: time.Hour})
	cs := connect(t, s, transports[0], nil)
	first := flood(cs, "slow", 1)
	eventually(t, "the first call running", func() bool { return g.runningOf("slow") == 1 })
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	want := "timeout: server busy: slow did not start within its timeout of 30ms, which counts its wait for a call slot: " +
		"1 calls of module m are running, one on each of its instances (tools.limits.m.max_instances); retry later"
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindTimeout) || text(res) != want {
		t.Errorf("queued call = %q (%v), want %q", text(res), res.Meta[tool.MetaKind], want)
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("%d calls reached the tool, want only the first", n)
	}
	close(g.release)
	if r := <-first; r.IsError {
		t.Fatalf("first call: %s", text(r))
	}
	// The next call works.
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "slow"}); err != nil || res.IsError {
		t.Fatalf("call after: %+v %v", res, err)
	}
}

// TestToolMaxInFlight: tools.limits.<tool>.max_in_flight bounds the tool's
// calls below its module's instances; a call past it waits, and one that
// waits out its deadline names the setting.
func TestToolMaxInFlight(t *testing.T) {
	g := newGate("capped")
	tools := &limitedTools{fakeTools: newFakeTools(desc("capped")), limits: map[string]CallLimits{
		"capped": {Module: "m", MaxInstances: 8, MaxInFlight: 2, InFlightSetting: "tools.limits.capped.max_in_flight", Timeout: 20 * time.Millisecond},
	}}
	tools.setCall(g.call)
	s, _ := newServer(t, tools, Options{QueueWait: time.Hour})
	cs := connect(t, s, transports[0], nil)
	running := flood(cs, "capped", 2)
	eventually(t, "two calls running", func() bool { return g.runningOf("capped") == 2 })
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "capped"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindTimeout) ||
		!strings.Contains(text(res), "2 calls of capped are running, its limit (tools.limits.capped.max_in_flight)") {
		t.Errorf("third call = %q", text(res))
	}
	close(g.release)
	for range 2 {
		<-running
	}
	if p := g.peakOf("capped"); p != 2 {
		t.Errorf("peak %d calls at once, want 2", p)
	}
}

// TestQueueFullRefused: past the queue bounds a call is refused at once,
// naming the limit and its config key.
func TestQueueFullRefused(t *testing.T) {
	g := newGate("work")
	tools := newFakeTools(desc("work"))
	tools.setCall(g.call)
	s, _ := newServer(t, tools, Options{MaxInFlight: 1, MaxQueued: 2, MaxQueuedPerClient: 1, QueueWait: time.Hour})
	a := connect(t, s, transports[0], nil)
	b := connect(t, s, transports[0], nil)
	c := connect(t, s, transports[0], nil)
	ra := flood(a, "work", 2) // one running, one queued: a's queue is full
	eventually(t, "a's call running and one queued", func() bool { return g.runningOf("work") == 1 && s.queuedCalls() == 1 })
	res, _ := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "work"})
	want := "unavailable: server busy: this client already has 1 calls waiting for a call slot, the limit (server.max_queued_per_client); wait for replies before sending more"
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindUnavailable) || text(res) != want {
		t.Errorf("a's extra call = %q, want %q", text(res), want)
	}
	rb := flood(b, "work", 1)
	eventually(t, "b's call queued", func() bool { return s.queuedCalls() == 2 })
	res, _ = c.CallTool(context.Background(), &mcp.CallToolParams{Name: "work"})
	want = "unavailable: server busy: 2 calls are already waiting for a call slot, the limit (server.max_queued); retry later"
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindUnavailable) || text(res) != want {
		t.Errorf("c's call = %q, want %q", text(res), want)
	}
	close(g.release)
	<-ra
	<-ra
	<-rb
	if res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "work"}); err != nil || res.IsError {
		t.Fatalf("call after the queues drained: %+v %v", res, err)
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestRateLimits: per-client and per-tool token buckets refuse a call over
// them with kind rate_limited, the setting, and a retry hint; a refused
// call takes no token, and time refills the buckets.
func TestRateLimits(t *testing.T) {
	tools := &limitedTools{fakeTools: newFakeTools(desc("a"), desc("b"), desc("c")), limits: map[string]CallLimits{
		"c": {Rate: &RateLimit{Rate: 0.5, Burst: 1, Setting: "tools.limits.c.rate"}},
	}}
	clock := &fakeClock{now: time.Unix(1000, 0)}
	perClient := &RateLimit{Rate: 1, Burst: 2, Setting: "server.rate_limit.per_client"}
	s, _ := newServer(t, tools, Options{Now: clock.Now, RateLimit: func() RateLimits {
		return RateLimits{
			PerClient: perClient,
			PerTool:   &RateLimit{Rate: 10, Burst: 10, Setting: "server.rate_limit.per_tool"},
		}
	}})
	one := connect(t, s, transports[0], nil)
	two := connect(t, s, transports[0], nil)
	call := func(cs *mcp.ClientSession, name string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i := range 2 {
		if res := call(one, "a"); res.IsError {
			t.Fatalf("call %d within the burst: %s", i, text(res))
		}
	}
	res := call(one, "a")
	want := "rate_limited: this client is over its rate of 1/s calls (burst 2, server.rate_limit.per_client); retry in 1s"
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindRateLimited) || text(res) != want {
		t.Errorf("over the client's rate: %q (%v), want %q", text(res), res.Meta[tool.MetaKind], want)
	}
	if ra, _ := res.Meta[tool.MetaRetryAfter].(float64); ra != 1 {
		t.Errorf("retryAfter = %v, want 1", res.Meta[tool.MetaRetryAfter])
	}
	// Another client has its own bucket.
	if res := call(two, "b"); res.IsError {
		t.Errorf("other client: %s", text(res))
	}
	clock.advance(time.Second)
	if res := call(one, "a"); res.IsError {
		t.Errorf("after a second: %s", text(res))
	}
	// A tool's own rate replaces the per-tool default; its refusal gives
	// the client's token back.
	if res := call(two, "c"); res.IsError {
		t.Fatalf("first call of c: %s", text(res))
	}
	res = call(two, "c")
	want = "rate_limited: tool c is over its rate of 30/m calls (burst 1, tools.limits.c.rate); retry in 2s"
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindRateLimited) || text(res) != want {
		t.Errorf("over c's rate: %q, want %q", text(res), want)
	}
	// two has made 2 calls that ran (b, c) in this second... its burst of 2
	// is spent only by calls that ran: one second refills one token.
	clock.advance(time.Second)
	if res := call(two, "b"); res.IsError {
		t.Errorf("two after a second: %s", text(res))
	}
	// A reloaded config's rate applies from the next call, with no
	// restart: one's bucket, emptied, refills at the new rate.
	for i := 0; !call(one, "a").IsError; i++ {
		if i == 2 {
			t.Fatal("one's bucket of burst 2 did not empty")
		}
	}
	perClient = &RateLimit{Rate: 1.0 / 60, Burst: 1, Setting: "server.rate_limit.per_client"}
	res = call(one, "a")
	want = "rate_limited: this client is over its rate of 1/m calls (burst 1, server.rate_limit.per_client); retry in 60s"
	if !res.IsError || text(res) != want {
		t.Errorf("after the rate changed to 1/m: %q, want %q", text(res), want)
	}
}

// TestAdmissionUncontendedAllocatesNothing: a call that fits while nobody
// waits takes and frees its slots without allocating (no queue entries, no
// count keys built), and leaves the admission as it found it. Every call
// on a server that is not saturated goes this way.
func TestAdmissionUncontendedAllocatesNothing(t *testing.T) {
	a := newAdmission(4, 2, 100, 100)
	tk := &ticket{client: "session s-0123456789abcdef0123456789", tool: "echo", session: "s-0123456789abcdef0123456789",
		limits: CallLimits{Module: "echo-module", MaxInstances: 2, MaxInFlight: 2, OneCallPerSession: true}}
	allocs := testing.AllocsPerRun(100, func() {
		if _, blocked, err := a.acquire(context.Background(), tk, time.Second); err != nil || blocked != "" {
			t.Fatalf("acquire: %v %q", err, blocked)
		}
		a.release(tk)
	})
	if allocs != 0 {
		t.Errorf("acquire and release of an uncontended call: %v allocations, want 0", allocs)
	}
	if n := a.inUse(); n != 0 {
		t.Errorf("after release: %d slots, waiters or counts left", n)
	}
}
