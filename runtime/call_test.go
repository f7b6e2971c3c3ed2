package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// recorder is a tool.Observer that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	logs     []string
	progress []tool.Progress
}

func (r *recorder) Progress(p tool.Progress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, p)
}

func (r *recorder) Log(level slog.Level, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, level.String()+" "+msg)
}

// echoer is a fake capability that records its requests and answers with a
// fixed result.
type echoer struct {
	mu       sync.Mutex
	requests []string
	calls    []*hostfuncs.Call
	result   any
	err      error
}

func (e *echoer) Name() string { return "echoer" }

func (e *echoer) Serve(_ context.Context, call *hostfuncs.Call, request []byte) (any, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = append(e.requests, string(request))
	e.calls = append(e.calls, call)
	return e.result, e.err
}

// hostCallFixture logs, reports progress twice (the second report does not
// increase and must be dropped), asks the echoer capability, and returns the
// capability's result object as its own response.
func hostCallFixture() watFixture {
	progress := `{"progress":1,"total":2,"message":"half"}`
	stale := `{"progress":1,"total":2,"message":"stale"}`
	request := `{"op":"x","path":"src"}`
	return watFixture{
		name: "hostcalls",
		imports: `(import "warden" "log" (func $log (param i32 i64)))
  (import "warden" "progress" (func $progress (param i64)))
  (import "warden" "echoer" (func $echoer (param i64) (result i64)))`,
		funcs: fmt.Sprintf(`(global $r (mut i64) (i64.const 0))
  (data (i32.const 3072) "hello")
  (data (i32.const 3100) %s)
  (data (i32.const 3200) %s)
  (data (i32.const 3300) %s)`, watString(progress), watString(request), watString(stale)),
		failBody: fmt.Sprintf(`(call $log (i32.const 2) (i64.const %d))
      (call $progress (i64.const %d))
      (call $progress (i64.const %d))
      (global.set $r (call $echoer (i64.const %d)))
      ;; skip {"result": and the closing brace of the reply
      (return (i64.or
        (i64.shl (i64.add (i64.shr_u (global.get $r) (i64.const 32)) (i64.const 10)) (i64.const 32))
        (i64.sub (i64.and (global.get $r) (i64.const 0xffffffff)) (i64.const 11))))`,
			pack(3072, 5), pack(3100, len(progress)), pack(3300, len(stale)), pack(3200, len(request))),
	}
}

func TestHostImports(t *testing.T) {
	cap := &echoer{result: map[string]any{"content": []map[string]string{{"type": "text", "text": "from host"}}}}
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{cap}})
	tl := loadTool(t, rt, "hostcalls", hostCallFixture().build(t), runtime.Limits{})
	obs := &recorder{}
	grants := tool.Capabilities{FS: tool.FSAccess{Read: []string{"src"}}}
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{"fail":true}`), Grants: grants, Observer: obs})
	wantOK(t, res, "from host")
	if strings.Join(obs.logs, "|") != "WARN hello" {
		t.Errorf("logs = %q", obs.logs)
	}
	if len(obs.progress) != 1 || obs.progress[0] != (tool.Progress{Progress: 1, Total: 2, Message: "half"}) {
		t.Errorf("progress = %+v, want one report (the stale one dropped)", obs.progress)
	}
	if len(cap.requests) != 1 || cap.requests[0] != `{"op":"x","path":"src"}` {
		t.Errorf("capability got %q", cap.requests)
	}
	if c := cap.calls[0]; c.Tool != "hostcalls" || len(c.Grants.FS.Read) != 1 || c.Grants.FS.Read[0] != "src" {
		t.Errorf("capability saw call %+v", c)
	}
}

func TestCapabilityErrorReply(t *testing.T) {
	cap := &echoer{err: tool.Errorf(tool.KindDenied, "no fs grant")}
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{cap}})
	tl := loadTool(t, rt, "hostcalls", hostCallFixture().build(t), runtime.Limits{})
	// The reply is {"error":{"kind":"denied","message":"no fs grant"}}; the
	// fixture strips ten bytes from the front and one from the end, which
	// leaves a fragment that is not JSON: the guest sees the error reply,
	// not a trap, and its garbled response is bad_output.
	res := call(t, tl, `{"fail":true}`)
	e := wantKind(t, res, tool.KindBadOutput)
	if !strings.Contains(e.Message, "not valid JSON") {
		t.Fatal(e)
	}
}

func TestArgumentValidation(t *testing.T) {
	f := hostCallFixture()
	f.schema = `{"type":"object","properties":{"text":{"type":"string","minLength":1},"fail":{"type":"boolean"}},"required":["text"],"additionalProperties":false}`
	cap := &echoer{result: map[string]any{"content": []map[string]string{{"type": "text", "text": "from host"}}}}
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{cap}})
	tl := loadTool(t, rt, "hostcalls", f.build(t), runtime.Limits{})
	for _, args := range []string{`{"fail":true}`, `{"text":"","fail":true}`, `{"text":"x","fail":true,"extra":1}`, `[1,2]`, `{"text":`, `"text"`} {
		res := call(t, tl, args)
		e := wantKind(t, res, tool.KindInvalidArguments)
		if !strings.Contains(e.Message, "hostcalls") {
			t.Errorf("%s: message %q does not name the tool", args, e.Message)
		}
	}
	if len(cap.requests) != 0 {
		t.Fatalf("guest ran %d times on invalid arguments", len(cap.requests))
	}
	wantOK(t, call(t, tl, `{"text":"x"}`), "from host")
}

func TestOutputSchema(t *testing.T) {
	good, goodData := respond(`{"structuredContent":{"n":3}}`)
	bad, badData := respond(`{"structuredContent":{"n":"three"}}`)
	rt := newRuntime(t, runtime.Options{})
	build := func(body, data string) *runtime.Tool {
		desc := `{"tools":[{"name":"counted","description":"x","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}]}`
		src := module{descriptor: desc, omit: "warden_call",
			extra: fmt.Sprintf(`%s (func (export "warden_call") (param i64) (result i64) %s)`, data, body)}.wat()
		src = strings.Replace(src, `(func (export "warden_alloc") (param i32) (result i32) (i32.const 4096))`,
			`(func (export "warden_alloc") (param i32) (result i32) (i32.const 8192))`, 1)
		return loadTool(t, rt, "counted", watBytes(t, src), runtime.Limits{})
	}
	res := call(t, build(good, goodData), `{}`)
	wantOK(t, res, `{"n":3}`) // mirrored as text for clients without structuredContent
	if string(res.StructuredContent) != `{"n":3}` {
		t.Errorf("structuredContent = %s", res.StructuredContent)
	}
	e := wantKind(t, call(t, build(bad, badData), `{}`), tool.KindBadOutput)
	if !strings.Contains(e.Message, "outputSchema") {
		t.Error(e)
	}
	none, noneData := respond(`{"content":[{"type":"text","text":"no structure"}]}`)
	wantKind(t, call(t, build(none, noneData), `{}`), tool.KindBadOutput)
}

// TestGuestOutputCaptured: a guest flooding stdout and stderr gets its call
// through; what it wrote is kept up to the bound, and not a byte reaches the
// process's own stdout.
func TestGuestOutputCaptured(t *testing.T) {
	f := watFixture{
		name:    "flood",
		imports: `(import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))`,
		funcs: `(global $i (mut i32) (i32.const 0))
  ;; one iovec at 3072: 32 KiB starting at 8192 (zeroes, then "x"s)
  (data (i32.const 3072) "\00\20\00\00\00\80\00\00")`,
		failBody: `(memory.fill (i32.const 8192) (i32.const 120) (i32.const 32768))
      (loop $again
        (drop (call $fd_write (i32.const 1) (i32.const 3072) (i32.const 1) (i32.const 3088)))
        (drop (call $fd_write (i32.const 2) (i32.const 3072) (i32.const 1) (i32.const 3088)))
        (global.set $i (i32.add (global.get $i) (i32.const 1)))
        (br_if $again (i32.lt_u (global.get $i) (i32.const 32))))`,
	}
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "flood", f.build(t), runtime.Limits{})

	stdout := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout = w
	res := call(t, tl, `{"fail":true}`)
	os.Stdout = stdout
	w.Close()
	leaked, _ := io.ReadAll(r)

	wantOK(t, res, "pong")
	if len(leaked) != 0 {
		t.Fatalf("%d bytes reached stdout", len(leaked))
	}
	c := res.Captured
	if c == nil || len(c.Stdout) != runtime.DefaultCaptureBytes || len(c.Stderr) != runtime.DefaultCaptureBytes {
		t.Fatalf("captured %+v, want %d bytes of each", c, runtime.DefaultCaptureBytes)
	}
	if want := int64(2 * (32*32768 - runtime.DefaultCaptureBytes)); c.Dropped != want {
		t.Errorf("dropped = %d, want %d", c.Dropped, want)
	}
	if strings.Trim(c.Stdout, "x") != "" {
		t.Error("captured bytes are not what the guest wrote")
	}
	// Capture is per call: the next call starts empty.
	if res := call(t, tl, `{}`); res.Captured != nil {
		t.Errorf("next call captured %+v", res.Captured)
	}
}

// TestTrapQuotesStderr: a guest that panics (writes why to stderr, then
// traps, as Rust and AssemblyScript do) shows the model why, not only
// "unreachable"; control characters in that line are escaped and the line
// is bounded. The next call works.
func TestTrapQuotesStderr(t *testing.T) {
	// The fixture has no name section: the trap names warden_call by its
	// index.
	const flood = "flood failed in function $4 (the module has no name section to name it)"
	for _, c := range []struct{ stderr, want string }{
		{"thread '<unnamed>' panicked at src/lib.rs:10:5:\nmissing required configuration: api-key\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
			flood + "; its stderr says: thread '<unnamed>' panicked at src/lib.rs:10:5: missing required configuration: api-key"},
		{"panic: boom\x1b[31m\n\ngoroutine 1 [running]:\nmain.main()\n",
			flood + `; its stderr says: panic: boom\x1b[31m`},
		{"abort: b must not be zero at stats.ts:3:5\n",
			flood + "; its stderr says: abort: b must not be zero at stats.ts:3:5"},
		{strings.Repeat("y", 600) + "\n",
			flood + "; its stderr says: " + strings.Repeat("y", 240) + "…(360 more bytes)"},
		{"", flood},
	} {
		msg := c.stderr
		f := watFixture{
			name:    "flood",
			imports: `(import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))`,
			// One iovec at 3072: len(msg) bytes at 8192.
			funcs: fmt.Sprintf(`(data (i32.const 3072) %s)
  (data (i32.const 8192) %s)`, watString(string([]byte{0, 0x20, 0, 0, byte(len(msg)), byte(len(msg) >> 8), 0, 0})), watString(msg)),
			failBody: `(drop (call $fd_write (i32.const 2) (i32.const 3072) (i32.const 1) (i32.const 3088)))
      unreachable`,
		}
		rt := newRuntime(t, runtime.Options{})
		tl := loadTool(t, rt, "flood", f.build(t), runtime.Limits{})
		e := wantKind(t, call(t, tl, `{"fail":true}`), tool.KindTrapped)
		if e.Message != c.want {
			t.Errorf("message:\n got %q\nwant %q", e.Message, c.want)
		}
		wantOK(t, call(t, tl, `{}`), "pong")
	}
}
