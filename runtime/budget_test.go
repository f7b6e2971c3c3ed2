package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// page is the linear memory of one instance of counterWAT.
const page = 64 << 10

// counterWAT is a one-page tool that counts its calls: called with {} it
// answers the count (mod 10) in its instance, so a session that kept its
// instance sees 1, 2, 3 and one that starts from fresh state sees 1. Any
// other arguments first log a line, through which a test's observer can
// hold the call inside the guest, or, when grow is set, grow memory by grow
// pages and trap if that was refused.
func counterWAT(t testing.TB, name string, grow int) []byte {
	t.Helper()
	desc := fmt.Sprintf(`{"tools":[{"name":%q,"description":"counts its calls","inputSchema":{"type":"object"}}]}`, name)
	resp := `{"content":[{"type":"text","text":"0"}]}`
	digit := 2048 + strings.Index(resp, `"0"`) + 1
	plain := len(fmt.Sprintf(`{"tool":%q,"arguments":{}}`, name))
	extra := `(call $log (i32.const 1) (i64.const ` + fmt.Sprint(pack(3000, 5)) + `))`
	if grow > 0 {
		extra = fmt.Sprintf(`(if (i32.eq (memory.grow (i32.const %d)) (i32.const -1)) (then unreachable))`, grow)
	}
	return watBytes(t, fmt.Sprintf(`(module
  (import "warden" "log" (func $log (param i32 i64)))
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 4096))
  (global $count (mut i32) (i32.const 0))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) %s)
  (data (i32.const 2048) %s)
  (data (i32.const 3000) "block")
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param $request i64) (result i64)
    (if (i32.gt_u (i32.wrap_i64 (local.get $request)) (i32.const %d))
      (then %s))
    (global.set $count (i32.add (global.get $count) (i32.const 1)))
    (i32.store8 (i32.const %d) (i32.add (i32.const 48) (i32.rem_u (global.get $count) (i32.const 10))))
    (global.set $next (i32.const 4096))
    (i64.const %d)))`,
		watString(desc), watString(resp), pack(16, len(desc)), plain, extra, digit, pack(2048, len(resp))))
}

func sessionCall(t testing.TB, tl *runtime.Tool, session string) *tool.Result {
	t.Helper()
	return tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{}`), Session: session})
}

// wantCount asserts a successful call that answered count, and whether it
// said its session's state was dropped.
func wantCount(t *testing.T, res *tool.Result, count string, evicted bool) {
	t.Helper()
	if res.IsError {
		t.Fatalf("call failed: %v", res.Error)
	}
	if got := res.Content[0].Text; got != count {
		t.Fatalf("count = %s, want %s", got, count)
	}
	fresh, ok := res.Meta[tool.MetaFreshState]
	switch {
	case evicted && fresh != "evicted: server.max_instance_memory":
		t.Fatalf("_meta[%s] = %v, want the eviction", tool.MetaFreshState, fresh)
	case !evicted && ok:
		t.Fatalf("_meta[%s] = %v on a call that kept its state", tool.MetaFreshState, fresh)
	}
}

func withinBudget(t *testing.T, rt *runtime.Runtime) runtime.InstanceMemory {
	t.Helper()
	s := rt.InstanceMemory()
	if s.Used > s.Limit || s.Peak > s.Limit {
		t.Fatalf("instance memory over the budget: %+v", s)
	}
	return s
}

// TestBudgetEvictsLeastRecentSession: with room for three instances, a
// fourth session evicts the session used least recently; that session's
// next call works, from fresh state, and says so in _meta.
func TestBudgetEvictsLeastRecentSession(t *testing.T) {
	rt := newRuntime(t, runtime.Options{MaxInstanceMemory: 3 * page})
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{})
	m := tl.Module()

	wantCount(t, sessionCall(t, tl, "a"), "1", false) // the load-time instance
	runtime.WaitSpare(m)
	wantCount(t, sessionCall(t, tl, "b"), "1", false) // the spare
	runtime.WaitSpare(m)
	wantCount(t, sessionCall(t, tl, "a"), "2", false)
	wantCount(t, sessionCall(t, tl, "c"), "1", false) // the second spare
	runtime.WaitSpare(m)                              // no room for a third: none made
	if s := withinBudget(t, rt); s.Used != 3*page || s.Evictions != 0 || s.Parked != 3 {
		t.Fatalf("before the eviction: %+v", s)
	}
	// d needs an instance: b is the session used least recently.
	wantCount(t, sessionCall(t, tl, "d"), "1", false)
	if s := withinBudget(t, rt); s.Evictions != 1 {
		t.Fatalf("after d: %+v", s)
	}
	wantCount(t, sessionCall(t, tl, "c"), "2", false)
	wantCount(t, sessionCall(t, tl, "d"), "2", false)
	wantCount(t, sessionCall(t, tl, "b"), "1", true) // evicts a now
	wantCount(t, sessionCall(t, tl, "b"), "2", false)
	wantCount(t, sessionCall(t, tl, "a"), "1", true)
	if s := withinBudget(t, rt); s.Evictions != 3 || s.Refusals != 0 {
		t.Fatalf("at the end: %+v", s)
	}
	if live := m.Live(); live != 3 {
		t.Fatalf("%d instances alive, want 3 (the budget's worth)", live)
	}
}

// TestBudgetEvictsIdleFirst: an idle instance of any module goes before an
// instance a session keeps.
func TestBudgetEvictsIdleFirst(t *testing.T) {
	rt := newRuntime(t, runtime.Options{MaxInstanceMemory: 3 * page})
	x := loadTool(t, rt, "x", counterWAT(t, "x", 0), runtime.Limits{})
	y := loadTool(t, rt, "y", counterWAT(t, "y", 0), runtime.Limits{})

	wantCount(t, sessionCall(t, x, "a"), "1", false)
	runtime.WaitSpare(x.Module()) // x: a's instance and an idle spare; y: its idle load-time instance
	wantCount(t, sessionCall(t, y, "b"), "1", false)
	runtime.WaitSpare(y.Module()) // no room for a spare of y
	if s := withinBudget(t, rt); s.Idle != 1 || s.Parked != 2 {
		t.Fatalf("before the eviction: %+v", s)
	}
	// c needs an instance of y: x's idle spare goes, not a's or b's state.
	wantCount(t, sessionCall(t, y, "c"), "1", false)
	wantCount(t, sessionCall(t, x, "a"), "2", false)
	wantCount(t, sessionCall(t, y, "b"), "2", false)
	if s := withinBudget(t, rt); s.Evictions != 1 || s.Idle != 0 || s.Parked != 3 {
		t.Fatalf("after the eviction: %+v", s)
	}
}

// holdingObserver holds every call that logs until released.
type holdingObserver struct {
	entered chan struct{}
	release chan struct{}
}

func (o *holdingObserver) Progress(tool.Progress) {}
func (o *holdingObserver) Log(slog.Level, string) {
	o.entered <- struct{}{}
	<-o.release
}

// TestBudgetUnavailableWhenAllBusy: when every instance is running a call
// and the budget is full, a call that needs one more fails as unavailable,
// naming the budget and its config key; once a call ends, the next call
// works.
func TestBudgetUnavailableWhenAllBusy(t *testing.T) {
	rt := newRuntime(t, runtime.Options{MaxInstanceMemory: 2 * page})
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{})
	m := tl.Module()
	type holding struct {
		obs *holdingObserver
		res chan *tool.Result
	}
	hold := func(session string) holding {
		h := holding{&holdingObserver{entered: make(chan struct{}), release: make(chan struct{})}, make(chan *tool.Result, 1)}
		go func() {
			h.res <- tl.Call(context.Background(), runtime.CallRequest{
				Arguments: json.RawMessage(`{"hold":true}`), Session: session, Observer: h.obs})
		}()
		<-h.obs.entered
		runtime.WaitSpare(m)
		return h
	}
	a := hold("a") // on the load-time instance; a spare is made
	b := hold("b") // on the spare; no room for another

	res := sessionCall(t, tl, "c")
	if !res.IsError || res.Error.Kind != tool.KindUnavailable {
		t.Fatalf("third session: %+v, want unavailable", res)
	}
	for _, want := range []string{"server.max_instance_memory", "128 KiB", "counter"} {
		if !strings.Contains(res.Error.Message, want) {
			t.Errorf("message %q does not name %q", res.Error.Message, want)
		}
	}
	if res.Meta[tool.MetaKind] != "unavailable" {
		t.Errorf("_meta kind = %v", res.Meta[tool.MetaKind])
	}
	if s := withinBudget(t, rt); s.Refusals != 1 || s.Evictions != 0 {
		t.Fatalf("after the refusal: %+v", s)
	}

	for _, h := range []holding{a, b} { // a's instance is parked first
		close(h.obs.release)
		wantCount(t, <-h.res, "1", false)
	}
	wantCount(t, sessionCall(t, tl, "c"), "1", false) // evicts a, the least recent
	wantCount(t, sessionCall(t, tl, "b"), "2", false)
	withinBudget(t, rt)

	// a's state is gone; while b and c hold every instance, a's call is
	// refused, and the call that finally runs still says a starts afresh.
	b, c := hold("b"), hold("c")
	if res := sessionCall(t, tl, "a"); !res.IsError || res.Error.Kind != tool.KindUnavailable {
		t.Fatalf("evicted session while all are busy: %+v", res)
	}
	for _, h := range []holding{b, c} {
		close(h.obs.release)
		if res := <-h.res; res.IsError {
			t.Fatal(res.Error)
		}
	}
	wantCount(t, sessionCall(t, tl, "a"), "1", true)
	wantCount(t, sessionCall(t, tl, "a"), "2", false)
	withinBudget(t, rt)
}

// TestBudgetRefusesGrowth: a call whose memory growth cannot fit even with
// every other instance evicted fails as unavailable (not out_of_memory: the
// tool's own limit was not reached), and the next call works.
func TestBudgetRefusesGrowth(t *testing.T) {
	rt := newRuntime(t, runtime.Options{MaxInstanceMemory: 4 * page})
	grower := loadTool(t, rt, "grower", counterWAT(t, "grower", 8), runtime.Limits{Isolation: runtime.IsolationCall})
	other := loadTool(t, rt, "other", counterWAT(t, "other", 0), runtime.Limits{})

	res := grower.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"grow":true}`)})
	if !res.IsError || res.Error.Kind != tool.KindUnavailable || !strings.Contains(res.Error.Message, "server.max_instance_memory") {
		t.Fatalf("growth past the budget: %+v", res.Error)
	}
	if s := withinBudget(t, rt); s.Refusals == 0 {
		t.Fatalf("no refusal counted: %+v", s)
	}
	wantCount(t, sessionCall(t, grower, ""), "1", false)
	wantCount(t, sessionCall(t, other, "s"), "1", false)

	// Growth that fits once idle instances are evicted is allowed.
	rt2 := newRuntime(t, runtime.Options{MaxInstanceMemory: 10 * page})
	grower2 := loadTool(t, rt2, "grower", counterWAT(t, "grower", 8), runtime.Limits{Isolation: runtime.IsolationCall})
	loadTool(t, rt2, "idle", counterWAT(t, "idle", 0), runtime.Limits{})
	res = grower2.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"grow":true}`)})
	if res.IsError {
		t.Fatalf("growth within the budget: %v", res.Error)
	}
	withinBudget(t, rt2)
}

// TestBudgetThousandSessions: 1000 sessions each make a well-behaved call,
// eight at a time; none fails, and the instances never hold more than the
// budget.
func TestBudgetThousandSessions(t *testing.T) {
	const budget = 8 * page
	rt := newRuntime(t, runtime.Options{MaxInstanceMemory: budget})
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{MaxInstances: 4})
	sessions := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range 8 {
		wg.Go(func() {
			for i := range sessions {
				session := fmt.Sprintf("s%d", i)
				res := sessionCall(t, tl, session)
				if res.IsError || res.Content[0].Text != "1" {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %+v", session, res))
					mu.Unlock()
				}
				if i%3 == 0 {
					tl.Module().EndSession(context.Background(), session)
				}
			}
		})
	}
	for i := range 1000 {
		sessions <- i
		if i%100 == 0 {
			withinBudget(t, rt)
		}
	}
	close(sessions)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of 1000 calls failed, first: %s", len(failures), failures[0])
	}
	s := withinBudget(t, rt)
	if live := tl.Module().Live(); live > budget/page {
		t.Fatalf("%d instances alive, over the budget's %d", live, budget/page)
	}
	t.Logf("after 1000 sessions: %+v", s)
}

// TestSessionsStartWarm: a new session's first call takes an instance
// already in its post-init state (the load-time one, then spares made in
// the background), never one made on the call's path; sessionless calls
// and ended sessions do not change that.
func TestSessionsStartWarm(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "counter", counterWAT(t, "counter", 0), runtime.Limits{})
	m := tl.Module()
	for i := range 20 {
		session := fmt.Sprintf("s%d", i)
		wantCount(t, sessionCall(t, tl, session), "1", false)
		runtime.WaitSpare(m) // made once that call ended
		wantCount(t, sessionCall(t, tl, session), "2", false)
		wantCount(t, sessionCall(t, tl, ""), "1", false) // on the spare, reset and idle again
		if i%2 == 0 {
			m.EndSession(context.Background(), session)
		}
		runtime.WaitSpare(m)
	}
	if n := runtime.ColdStarts(m); n != 0 {
		t.Fatalf("%d instances made on a call's path", n)
	}
	if s := rt.InstanceMemory(); s.Idle != 1 || s.Parked != 10 || s.Used != 11*page {
		t.Fatalf("one spare and the 10 open sessions' instances: %+v", s)
	}
}
