package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// These tests never measure how long a call took. A guest asks WASI for an
// hour's sleep; were the call's own deadline not to end it, the caller's
// context (a minute) would, and the call's message would then blame the
// caller instead of naming the tool's own timeout. Only the calls that must
// time out run under the short deadline (CallRequest.Timeout); the calls
// that must succeed keep the default one.

// pollImport is WASI's poll_oneoff, which a guest sleeps in (Go's
// time.Sleep, Rust's thread::sleep).
const pollImport = `(import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))`

// sleepHour subscribes to one relative clock event an hour away, at
// [1024, 1072), with its event at 1088 and the count at 1120, and polls.
const sleepHour = `
    (i32.store (i32.const 1040) (i32.const 1)) ;; clock id: monotonic
    (i64.store (i32.const 1048) (i64.const 3600000000000)) ;; timeout: 1 h
    (drop (call $poll (i32.const 1024) (i32.const 1088) (i32.const 1) (i32.const 1120)))`

// shortTimeout is the deadline of a call that must time out.
const shortTimeout = 300 * time.Millisecond

// wantOwnTimeout checks that res is the call's own timeout, not the
// caller's (callerGuard). On a machine slow enough, the deadline may pass
// before the guest runs ("while waiting for a free instance"): that call
// is a timeout all the same.
func wantOwnTimeout(t *testing.T, res *tool.Result, name string) {
	t.Helper()
	e := wantKind(t, res, tool.KindTimeout)
	if want := fmt.Sprintf("%s did not finish within %s (while ", name, shortTimeout); !strings.HasPrefix(e.Message, want) {
		t.Fatalf("message %q, want it to begin %q", e.Message, want)
	}
}

// callerGuard is the caller's context of a call that must end by its own
// deadline long before this one.
func callerGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestDeadlineEndsHostSleep: a guest asleep in poll_oneoff when its
// deadline passes is woken, and the call is a timeout although the guest
// answers "pong" at once on waking (straight-line code: no loop header or
// function entry where the meter's watchdog would stop it). The guest does
// not run on past the sleep, and the instance it slept in is closed, not
// reused; the next call works.
func TestDeadlineEndsHostSleep(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	f := watFixture{name: "sleeper", imports: pollImport, failBody: sleepHour}
	// One shared instance: the call runs on exactly the instance pooled
	// here.
	tl := loadTool(t, rt, "sleeper", f.build(t), runtime.Limits{Isolation: runtime.IsolationShared, MaxInstances: 1})
	for range 2 {
		slept := runtime.PooledInstance(tl)
		res := tl.Call(callerGuard(t), runtime.CallRequest{Arguments: json.RawMessage(`{"fail":true}`), Timeout: shortTimeout})
		wantOwnTimeout(t, res, "sleeper")
		if !slept.IsClosed() {
			t.Fatal("the instance stopped in its sleep was kept for the next call")
		}
		wantOK(t, call(t, tl, `{}`), "pong")
	}
}

// waitingCap is a real capability behind a wait for the call's context to
// end, as warden.net's request to a server that never answers and a
// client question do: it then serves the request anyway, the worst a
// capability could do.
type waitingCap struct{ *countingCap }

func (c waitingCap) Serve(ctx context.Context, call *hostfuncs.Call, req []byte) (any, error) {
	<-ctx.Done()
	return c.countingCap.Serve(context.WithoutCancel(ctx), call, req)
}

// TestDeadlineStopsGuestAfterHostCall: when a warden.* host function
// returns after the call's deadline, the guest does not get its reply and
// does not run on to answer: the call is a timeout although the guest
// would answer "pong" at once, and the next call works.
func TestDeadlineStopsGuestAfterHostCall(t *testing.T) {
	capEnv := waitingCap{realEnv(t, map[string]string{"K": "v"})}
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{capEnv}})
	f := watFixture{
		name:     "waiter",
		imports:  `(import "warden" "env" (func $env (param i64) (result i64)))`,
		funcs:    fmt.Sprintf(`(data (i32.const 1200) %s)`, watString(envRequest)),
		failBody: fmt.Sprintf(`(drop (call $env (i64.const %d)))`, pack(1200, len(envRequest))),
	}
	tl := loadTool(t, rt, "waiter", f.build(t), runtime.Limits{})
	res := tl.Call(callerGuard(t), runtime.CallRequest{Arguments: json.RawMessage(`{"fail":true}`),
		Grants: tool.Capabilities{Env: []string{"K"}}, Timeout: shortTimeout})
	wantOwnTimeout(t, res, "waiter")
	if n := capEnv.served.Load(); n != 1 {
		t.Fatalf("warden.env served %d requests, want 1", n)
	}
	wantOK(t, call(t, tl, `{}`), "pong")
}

// TestDeadlineEndsHostSleepExtism: the same for an Extism plugin, whose
// guest reaches the same WASI sleep through the same instance shell.
func TestDeadlineEndsHostSleepExtism(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	src := extismWATSource(descOf("sleeper"), `{"content":[{"type":"text","text":"woke"}]}`, pollImport)
	src = strings.Replace(src, `(func (export "call") (result i32) (call $out`,
		`(func (export "call") (result i32) `+sleepHour+` (call $out`, 1)
	m, err := rt.Load(context.Background(), "sleeper", watBytes(t, src), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	tl := toolNamed(t, m, "sleeper")
	for range 2 {
		res := tl.Call(callerGuard(t), runtime.CallRequest{Arguments: json.RawMessage(`{}`), Timeout: shortTimeout})
		wantOwnTimeout(t, res, "sleeper")
	}
	wantOK(t, call(t, pingTool(t, rt), `{}`), "pong")
}
