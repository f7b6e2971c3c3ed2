package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/env"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// countingCap counts the requests a real capability serves, and runs hook
// (if set) before each.
type countingCap struct {
	hostfuncs.Capability
	served atomic.Int64
	hook   func(n int64)
}

func (c *countingCap) Serve(ctx context.Context, call *hostfuncs.Call, req []byte) (any, error) {
	n := c.served.Add(1)
	if c.hook != nil {
		c.hook(n)
	}
	return c.Capability.Serve(ctx, call, req)
}

func realEnv(t testing.TB, values map[string]string) *countingCap {
	t.Helper()
	cfg := env.Config{Values: map[string]env.Value{}}
	for k, v := range values {
		cfg.Values[k] = env.Value{Value: v}
	}
	e, err := env.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &countingCap{Capability: e}
}

const envRequest = `{"op":"get","key":"K"}`

// pingTool loads the plain fixture under another name: "the next call to
// another tool works".
func pingTool(t testing.TB, rt *runtime.Runtime) *runtime.Tool {
	return loadTool(t, rt, "other", watFixture{name: "other"}.build(t), runtime.Limits{})
}

// A warden_alloc that calls warden.env would recurse without bound (each
// reply is allocated by warden_alloc, which asks for another reply). The
// host refuses the host call made inside warden_alloc.
func TestHostCallFromAllocRefused(t *testing.T) {
	capEnv := realEnv(t, map[string]string{"K": "v"})
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{capEnv}})
	src := fmt.Sprintf(`(module
  (import "warden" "env" (func $env (param i64) (result i64)))
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 4096))
  (global $armed (mut i32) (i32.const 0))
  (data (i32.const 16) %s)
  (data (i32.const 512) %s)
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (if (global.get $armed) (then (drop (call $env (i64.const %d)))))
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param i64) (result i64)
    (global.set $armed (i32.const 1))
    (call $env (i64.const %d))))`,
		watString(toolDesc("recurse")), watString(envRequest),
		pack(512, len(envRequest)), pack(16, len(toolDesc("recurse"))), pack(512, len(envRequest)))
	tl := loadTool(t, rt, "recurse", watBytes(t, src), runtime.Limits{})
	other := pingTool(t, rt)
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{}`), Grants: tool.Capabilities{Env: []string{"K"}}})
	e := wantKind(t, res, tool.KindBadOutput)
	if !strings.Contains(e.Message, "warden.env called from inside warden_alloc") {
		t.Fatalf("message = %q", e.Message)
	}
	// The outer request was served; the one from inside warden_alloc was not.
	if n := capEnv.served.Load(); n != 1 {
		t.Fatalf("env served %d requests, want 1", n)
	}
	wantOK(t, call(t, other, `{}`), "pong")
}

// Replies the host produces for the guest count against the memory limit:
// a guest that asks again and again, reusing its own buffer, is stopped
// once the replies of one call add up to more than it may hold.
func TestHostRepliesCountAgainstMemory(t *testing.T) {
	value := strings.Repeat("x", 1000)
	capEnv := realEnv(t, map[string]string{"K": value})
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{capEnv}})
	src := fmt.Sprintf(`(module
  (import "warden" "env" (func $env (param i64) (result i64)))
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 4096))
  (data (i32.const 16) %s)
  (data (i32.const 512) %s)
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param i64) (result i64)
    (loop $again
      (drop (call $env (i64.const %d)))
      (global.set $next (i32.const 4096)) ;; reuse the buffer
      (br $again))
    (i64.const 0)))`,
		watString(toolDesc("asker")), watString(envRequest),
		pack(16, len(toolDesc("asker"))), pack(512, len(envRequest)))
	const limit = 1 << 20
	tl := loadTool(t, rt, "asker", watBytes(t, src), runtime.Limits{Memory: limit})
	other := pingTool(t, rt)
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{}`), Grants: tool.Capabilities{Env: []string{"K"}}})
	wantKind(t, res, tool.KindOutOfMemory)
	reply, _ := json.Marshal(map[string]any{"result": map[string]string{"key": "K", "value": value}})
	// The request that crossed the limit was served, its reply refused.
	if n, want := capEnv.served.Load(), int64(limit/len(reply))+1; n != want {
		t.Fatalf("env served %d requests, want %d (replies of %d bytes against %d)", n, want, len(reply), limit)
	}
	wantOK(t, call(t, other, `{}`), "pong")
}

// A host function checks the call's cancellation before doing work: once
// the caller cancels (here, from inside the first request), no further
// request is served.
func TestHostCallHonoursCancellation(t *testing.T) {
	capEnv := realEnv(t, map[string]string{"K": "v"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capEnv.hook = func(int64) { cancel() }
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{capEnv}})
	src := fmt.Sprintf(`(module
  (import "warden" "env" (func $env (param i64) (result i64)))
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 4096))
  (data (i32.const 16) %s)
  (data (i32.const 512) %s)
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param i64) (result i64)
    ;; straight-line: no loop header or call boundary where the watchdog
    ;; could stop the guest between the two requests
    (drop (call $env (i64.const %d)))
    (drop (call $env (i64.const %d)))
    (i64.const 0)))`,
		watString(toolDesc("twice")), watString(envRequest),
		pack(16, len(toolDesc("twice"))), pack(512, len(envRequest)), pack(512, len(envRequest)))
	tl := loadTool(t, rt, "twice", watBytes(t, src), runtime.Limits{})
	other := pingTool(t, rt)
	res := tl.Call(ctx, runtime.CallRequest{Arguments: json.RawMessage(`{}`), Grants: tool.Capabilities{Env: []string{"K"}}})
	wantKind(t, res, tool.KindCancelled)
	if n := capEnv.served.Load(); n != 1 {
		t.Fatalf("env served %d requests after the caller cancelled, want 1", n)
	}
	wantOK(t, call(t, other, `{}`), "pong")
}

// countingObserver counts what reaches the observer (the path to stderr
// and to MCP notifications alike).
type countingObserver struct {
	mu    sync.Mutex
	lines []string
	bytes int
}

func (o *countingObserver) Progress(tool.Progress) {}
func (o *countingObserver) Log(_ slogLevel, msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, msg)
	o.bytes += len(msg)
}

// A guest logging 16 KiB lines in a loop gets the per-call budget: exactly
// the lines that fit, then one note counting the rest.
func TestLogFloodBounded(t *testing.T) {
	const lineBytes, n = 16 << 10, 500
	rt := newRuntime(t, runtime.Options{})
	f := watFixture{
		name:    "logflood",
		imports: `(import "warden" "log" (func $log (param i32 i64)))`,
		funcs:   `(global $i (mut i32) (i32.const 0))`,
		failBody: fmt.Sprintf(`(loop $again
        (call $log (i32.const 1) (i64.const %d))
        (global.set $i (i32.add (global.get $i) (i32.const 1)))
        (br_if $again (i32.lt_u (global.get $i) (i32.const %d))))`, pack(8192, lineBytes), n),
	}
	tl := loadTool(t, rt, "logflood", f.build(t), runtime.Limits{})
	other := pingTool(t, rt)
	obs := &countingObserver{}
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"fail":true}`), Observer: obs})
	wantOK(t, res, "pong")
	kept := runtime.DefaultLogBytes / lineBytes
	if len(obs.lines) != kept+1 {
		t.Fatalf("observer got %d lines, want %d and a note", len(obs.lines), kept)
	}
	if obs.bytes-len(obs.lines[kept]) != kept*lineBytes {
		t.Fatalf("observer got %d bytes of log lines, want %d", obs.bytes-len(obs.lines[kept]), kept*lineBytes)
	}
	want := fmt.Sprintf("dropped %d log lines (%d bytes) over the per-call limit", n-kept, (n-kept)*lineBytes)
	if !strings.HasPrefix(obs.lines[kept], want) {
		t.Fatalf("note = %q, want prefix %q", obs.lines[kept], want)
	}
	// The line budget holds too: 1 KiB of lines, 100 lines.
	small := watFixture{name: "logflood2", imports: f.imports, funcs: f.funcs,
		failBody: strings.Replace(f.failBody, fmt.Sprint(pack(8192, lineBytes)), fmt.Sprint(pack(8192, 1)), 1)}
	tl = loadTool(t, rt, "logflood2", small.build(t), runtime.Limits{LogLines: 100})
	obs = &countingObserver{}
	wantOK(t, tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"fail":true}`), Observer: obs}), "pong")
	if len(obs.lines) != 101 || !strings.HasPrefix(obs.lines[100], fmt.Sprintf("dropped %d log lines (%d bytes)", n-100, n-100)) {
		t.Fatalf("got %d lines, last %q", len(obs.lines), obs.lines[len(obs.lines)-1])
	}
	wantOK(t, call(t, other, `{}`), "pong")
}

// A loop in the start section runs under the meter: it is out_of_fuel, not
// a bare unreachable, and the error names the start function (by its
// index: wat2wasm writes no name section), not _initialize.
func TestStartSectionLoopMetered(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	f := watFixture{name: "startloop", funcs: `(func $spin (loop $l (br $l))) (start $spin)`}
	_, err := rt.Load(context.Background(), "startloop", f.build(t), runtime.Limits{Fuel: 10_000_000})
	// warden_alloc, warden_abi_version and warden_describe come first.
	if want := "start function (func 3): ran out of fuel (budget 10000000)"; err == nil || err.Error() != want {
		t.Fatalf("load error = %v, want %q", err, want)
	}
	wantOK(t, call(t, pingTool(t, rt), `{}`), "pong")
}

// withFuncName appends a name section naming function idx to wasm, as a
// toolchain's debug names would. Every length here is under 128, so each
// LEB128 is one byte.
func withFuncName(wasm []byte, idx byte, name string) []byte {
	names := append([]byte{1, idx, byte(len(name))}, name...) // a vector of one (index, name)
	sub := append([]byte{1, byte(len(names))}, names...)      // subsection 1: function names
	body := append([]byte{4, 'n', 'a', 'm', 'e'}, sub...)
	out := append([]byte(nil), wasm...)
	out = append(out, 0, byte(len(body))) // a custom section
	return append(out, body...)
}

// TestLoadStageNamed: guest code that outlives the load budget at load is
// reported as what ran: the start section's function (with its name
// section's name, escaped, when it has one), _initialize, or describe.
// Each sleeps an hour in WASI, so the budget passes whatever the
// machine's speed.
func TestLoadStageNamed(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	sleep := `(func $sleep ` + sleepHour + `)`
	limits := runtime.Limits{LoadBudget: shortTimeout}
	cases := []struct {
		name, funcs string
		named       string // the start function's name in a name section
		want        string
	}{
		{name: "start", funcs: sleep + ` (start $sleep)`,
			want: "start function (func 4): did not finish within the load budget of 300ms"},
		{name: "startnamed", funcs: sleep + ` (start $sleep)`, named: "sleep\u202eevil",
			want: `start function (func 4 $sleep\u202eevil): did not finish within the load budget of 300ms`},
		{name: "init", funcs: sleep + ` (func (export "_initialize") (call $sleep))`,
			want: "_initialize: did not finish within the load budget of 300ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wasm := watFixture{name: c.name, imports: pollImport, funcs: c.funcs}.build(t)
			if c.named != "" {
				wasm = withFuncName(wasm, 4, c.named)
			}
			_, err := rt.Load(callerGuard(t), c.name, wasm, limits)
			if err == nil || err.Error() != c.want {
				t.Fatalf("load error = %v, want %q", err, c.want)
			}
		})
	}
	// describe is reached only past the others: a module whose describe
	// sleeps.
	src := strings.Replace(watFixture{name: "describe", imports: pollImport}.wat(),
		`(func (export "warden_describe") (result i64) (i64.const`,
		`(func (export "warden_describe") (result i64) `+sleepHour+` (i64.const`, 1)
	_, err := rt.Load(callerGuard(t), "describe", watBytes(t, src), limits)
	if want := "warden_describe: did not finish within the load budget of 300ms"; err == nil || err.Error() != want {
		t.Fatalf("load error = %v, want %q", err, want)
	}
	wantOK(t, call(t, pingTool(t, rt), `{}`), "pong")
}

// A start function that only initializes still runs, before _initialize.
func TestStartSectionRuns(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	f := watFixture{name: "started",
		funcs:    `(global $s (mut i32) (i32.const 0)) (func $st (global.set $s (i32.const 7))) (start $st)`,
		failBody: `(if (i32.ne (global.get $s) (i32.const 7)) (then unreachable))`}
	tl := loadTool(t, rt, "started", f.build(t), runtime.Limits{Isolation: runtime.IsolationCall})
	for range 2 {
		wantOK(t, call(t, tl, `{"fail":true}`), "pong")
	}
}

// Host functions are unavailable while a module loads: calling one from
// _initialize, a start function or describe is a typed guest error, not an
// internal one.
func TestHostCallAtLoad(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	imp := `(import "warden" "log" (func $log (param i32 i64)))`
	for name, funcs := range map[string]string{
		"init":  `(func (export "_initialize") (call $log (i32.const 1) (i64.const 0)))`,
		"start": `(func $st (call $log (i32.const 1) (i64.const 0))) (start $st)`,
	} {
		_, err := rt.Load(context.Background(), name, watFixture{name: name, imports: imp, funcs: funcs}.build(t), runtime.Limits{})
		if err == nil || !strings.Contains(err.Error(), "warden.log called while the module loads") ||
			!strings.Contains(err.Error(), "host functions are unavailable at load") {
			t.Fatalf("%s: load error = %v", name, err)
		}
		var te *tool.Error
		if !errorsAs(err, &te) || te.Kind != tool.KindBadOutput {
			t.Fatalf("%s: error %v is not a bad_output tool error", name, err)
		}
	}
	wantOK(t, call(t, pingTool(t, rt), `{}`), "pong")
}

type slogLevel = slog.Level

func errorsAs(err error, target any) bool { return errors.As(err, target) }

func toolDesc(name string) string {
	return fmt.Sprintf(`{"tools":[{"name":%q,"description":"x","inputSchema":{"type":"object"}}]}`, name)
}

// An Extism plugin's log functions share the per-call log budget.
func TestExtismLogFloodBounded(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	desc := descOf("xflood")
	out := `{"content":[{"type":"text","text":"flooded"}]}`
	wasm := watBytes(t, fmt.Sprintf(`(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (memory (export "memory") 1)
  (data (i32.const 0) %s)
  (data (i32.const 32768) %s)
  (func $out (param $ptr i32) (param $len i32)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
      (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
        (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (call $output_set (local.get $off) (i64.extend_i32_u (local.get $len))))
  (func (export "describe") (result i32) (call $out (i32.const 0) (i32.const %d)) (i32.const 0))
  (func (export "call") (result i32)
    (local $i i32) (local $off i64)
    (loop $again
      (local.set $off (call $alloc (i64.const 1)))
      (call $store_u8 (local.get $off) (i32.const 120))
      (call $log_info (local.get $off))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 2000))))
    (call $out (i32.const 32768) (i32.const %d)) (i32.const 0)))`,
		watString(desc), watString(out), len(desc), len(out)))
	m, err := rt.Load(context.Background(), "xflood", wasm, runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	obs := &countingObserver{}
	res := callWith(t, toolNamed(t, m, "xflood"), `{}`, runtime.CallRequest{Observer: obs})
	wantOK(t, res, "flooded")
	if len(obs.lines) != runtime.DefaultLogLines+1 {
		t.Fatalf("observer got %d lines, want %d and a note", len(obs.lines), runtime.DefaultLogLines)
	}
	if note := obs.lines[len(obs.lines)-1]; !strings.HasPrefix(note, "dropped 1000 log lines (1000 bytes) over the per-call limit") {
		t.Fatalf("note = %q", note)
	}
	wantOK(t, call(t, pingTool(t, rt), `{}`), "pong")
}

// A compile past the compile budget is refused at once, naming the config
// key, and other modules still load.
func TestCompileBudget(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	// 2,000 functions: some milliseconds of compiling at least, far more
	// than a budget of a microsecond.
	var funcs strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&funcs, "(func $f%d (param i32) (result i32) (i32.add (local.get 0) (i32.const %d)))\n", i, i)
	}
	f := watFixture{name: "bigmodule", funcs: funcs.String()}
	_, err := rt.Load(context.Background(), "bigmodule", f.build(t), runtime.Limits{CompileBudget: time.Microsecond})
	if err == nil || !strings.Contains(err.Error(), "did not finish within the compile budget of 1µs (tools.defaults.compile_budget") {
		t.Fatalf("load error = %v", err)
	}
	wantOK(t, call(t, pingTool(t, rt), `{}`), "pong")
}
