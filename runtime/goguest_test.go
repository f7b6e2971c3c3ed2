package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

func goGuest(t testing.TB, name string) []byte {
	t.Helper()
	return testwasm.BuildGo(t, "testdata/goguest/"+name)
}

func TestGoEcho(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{})
	for range 3 {
		res := call(t, tl, `{"text":"hello"}`)
		wantOK(t, res, "hello")
		if string(res.StructuredContent) != `{"text":"hello"}` {
			t.Fatalf("structured = %s", res.StructuredContent)
		}
		if fuel, _ := res.Meta[tool.MetaFuel].(int64); fuel <= 0 {
			t.Fatalf("fuel consumed = %v", res.Meta[tool.MetaFuel])
		}
	}
}

// TestGoGuestFailures runs the standard-Go failure fixtures: each failure
// has its kind, a second call fails the same way (on a fresh instance, not
// a wedged one), and a healthy tool in the same runtime keeps working.
func TestGoGuestFailures(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	echo := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{})
	cases := []struct {
		name    string
		limits  runtime.Limits
		kind    tool.Kind
		trap    tool.TrapClass
		message string
	}{
		{name: "panic", kind: tool.KindFailed, message: "fixture panic"},
		{name: "exit", kind: tool.KindGuestExit, message: "exited with code 3"},
		{name: "loop", limits: runtime.Limits{Timeout: 200 * time.Millisecond}, kind: tool.KindTimeout, message: "did not finish within 200ms"},
		{name: "loop", limits: runtime.Limits{Fuel: 20_000_000}, kind: tool.KindOutOfFuel, message: "out of fuel after 20000000 units"},
		{name: "sleep", limits: runtime.Limits{Timeout: 200 * time.Millisecond}, kind: tool.KindTimeout},
		{name: "recurse", kind: tool.KindTrapped, trap: tool.TrapStackOverflow},
		{name: "grow", limits: runtime.Limits{Memory: 32 << 20}, kind: tool.KindOutOfMemory, message: "32 MiB"},
		{name: "badjson", kind: tool.KindBadOutput, message: "not valid JSON"},
		{name: "badptr", kind: tool.KindBadOutput, message: "outside guest memory"},
		{name: "hugeoutput", kind: tool.KindBadOutput, message: "over the output limit"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%s", c.name, c.kind), func(t *testing.T) {
			tl := loadTool(t, rt, c.name, goGuest(t, c.name), c.limits)
			for range 2 {
				e := wantKind(t, call(t, tl, `{}`), c.kind)
				if e.Trap != c.trap {
					t.Errorf("trap = %q, want %q", e.Trap, c.trap)
				}
				if !strings.Contains(e.Message, c.message) {
					t.Errorf("message %q does not mention %q", e.Message, c.message)
				}
				wantOK(t, call(t, echo, `{"text":"still here"}`), "still here")
			}
		})
	}
}

func TestGoGuestPanicDetails(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "panic", goGuest(t, "panic"), runtime.Limits{})
	res := call(t, tl, `{}`)
	wantKind(t, res, tool.KindFailed)
	if !strings.Contains(string(res.Details), "goroutine") && !strings.Contains(string(res.Details), "panic") {
		t.Errorf("details carry no stack: %s", res.Details)
	}
}

func TestGoGuestPanicInInit(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	_, err := rt.Load(context.Background(), "panicinit", goGuest(t, "panicinit"), runtime.Limits{})
	// A Go panic during init aborts (a trap), with the panic on stderr.
	if err == nil || !strings.Contains(err.Error(), "_initialize: trapped (unreachable)") ||
		!strings.Contains(err.Error(), "fixture panic during init") {
		t.Fatalf("err = %v", err)
	}
}

func TestGoGuestStdoutFlood(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "stdoutflood", goGuest(t, "stdoutflood"), runtime.Limits{})
	res := call(t, tl, `{}`)
	wantOK(t, res, "ok")
	c := res.Captured
	if c == nil || len(c.Stdout) != runtime.DefaultCaptureBytes || len(c.Stderr) != runtime.DefaultCaptureBytes {
		t.Fatalf("captured %d/%d bytes, want %d of each", len(c.Stdout), len(c.Stderr), runtime.DefaultCaptureBytes)
	}
	if want := int64(2*(10<<20) - 2*runtime.DefaultCaptureBytes); c.Dropped != want {
		t.Errorf("dropped %d, want %d", c.Dropped, want)
	}
}

// TestIsolation: under "call" no call sees another's state; under "session"
// a session sees only its own; under "shared" every call shares.
func TestIsolation(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	wasm := goGuest(t, "state")
	counts := func(tl *runtime.Tool, sessions ...string) string {
		var got []string
		for _, s := range sessions {
			res := tl.Call(context.Background(), runtime.CallRequest{Session: s})
			if res.IsError {
				t.Fatal(res.Error)
			}
			got = append(got, res.Content[0].Text)
		}
		return strings.Join(got, ",")
	}
	callTool := loadTool(t, rt, "state", wasm, runtime.Limits{Isolation: runtime.IsolationCall})
	if got := counts(callTool, "a", "a", "b", "a"); got != "1,1,1,1" {
		t.Errorf("isolation call: %s", got)
	}
	sessionTool := loadTool(t, rt, "state", wasm, runtime.Limits{Isolation: runtime.IsolationSession})
	if got := counts(sessionTool, "a", "a", "b", "a", "b"); got != "1,2,1,3,2" {
		t.Errorf("isolation session: %s", got)
	}
	sessionTool.Module().EndSession(context.Background(), "a")
	if got := counts(sessionTool, "a"); got != "1" {
		t.Errorf("after the session ended: %s", got)
	}
	sharedTool := loadTool(t, rt, "state", wasm, runtime.Limits{Isolation: runtime.IsolationShared, MaxInstances: 1})
	if got := counts(sharedTool, "a", "b", "c"); got != "1,2,3" {
		t.Errorf("isolation shared: %s", got)
	}
}

// TestResetAfterGrowth: a call that grows memory leaves nothing behind and
// does not make the next call's memory grow again (virtual memory size).
func TestResetAfterGrowth(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "jq", testwasm.BuildGo(t, "../tools-wasm/jq"), runtime.Limits{MaxInstances: 1})
	big := `{"filter":"[.[] | . * 2] | length","input":[` + strings.Repeat("1,", 200000) + `1]}`
	for range 5 {
		res := call(t, tl, big)
		if res.IsError {
			t.Fatal(res.Error)
		}
		if !strings.Contains(res.Content[0].Text, "200001") {
			t.Fatalf("jq said %q", res.Content[0].Text)
		}
	}
}

func TestMultiAndRejected(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	m, err := rt.Load(context.Background(), "multi", goGuest(t, "multi"), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools()) != 2 {
		t.Fatalf("multi has %d tools", len(m.Tools()))
	}
	m2, err := rt.Load(context.Background(), "badschema", goGuest(t, "badschema"), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m2.Tools()) != 1 || m2.Tools()[0].Descriptor.Name != "badschema_valid" ||
		len(m2.Rejected()) != 1 || !strings.Contains(m2.Rejected()[0].Reason.Error(), "inputSchema") {
		t.Fatalf("tools %v rejected %v", m2.Tools(), m2.Rejected())
	}
}

func TestGoHostCalls(t *testing.T) {
	fs := &namedCapability{name: "fs", result: map[string]string{"content": "file body"}}
	env := &namedCapability{name: "env", err: tool.Errorf(tool.KindDenied, "env key HOME is not granted")}
	unused := func(name string) hostfuncs.Capability {
		return &namedCapability{name: name, err: tool.Errorf(tool.KindInternal, "%s: not expected in this test", name)}
	}
	rt := newRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{fs, env, unused("memory"), unused("lsp"), unused("net"),
		unused("elicit"), unused("sample"), unused("roots"), unused("ask")}})
	tl := loadTool(t, rt, "hostcalls", goGuest(t, "hostcalls"), runtime.Limits{})
	obs := &recorder{}
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(`{}`), Observer: obs, CallID: "c1"})
	if res.IsError {
		t.Fatal(res.Error)
	}
	var got struct {
		FS  struct{ Result map[string]string }
		Env struct{ Error *tool.Error }
	}
	if err := json.Unmarshal(res.StructuredContent, &got); err != nil {
		t.Fatal(err)
	}
	if got.FS.Result["content"] != "file body" || got.Env.Error == nil || got.Env.Error.Kind != tool.KindDenied {
		t.Fatalf("guest saw %s", res.StructuredContent)
	}
	if len(obs.progress) != 3 || len(obs.logs) != 2 || !strings.Contains(obs.logs[0], "hostcalls: starting c1") {
		t.Fatalf("observer got progress %v logs %v", obs.progress, obs.logs)
	}
}

// guestImports are the capability imports of a Go guest that uses
// warden.Host: the SDK refers to all of them.
var guestImports = []string{"fs", "memory", "lsp", "net", "env", "elicit", "sample", "roots", "ask"}

// stubCapabilities serves every guest import but those in provided with a
// capability that fails: for tests that expect the guest not to use them.
func stubCapabilities(provided ...hostfuncs.Capability) []hostfuncs.Capability {
	have := map[string]bool{}
	for _, c := range provided {
		have[c.Name()] = true
	}
	out := append([]hostfuncs.Capability(nil), provided...)
	for _, name := range guestImports {
		if !have[name] {
			out = append(out, &namedCapability{name: name, err: tool.Errorf(tool.KindDenied, "%s: not provided in this test", name)})
		}
	}
	return out
}

type namedCapability struct {
	name   string
	result any
	err    error
}

func (c *namedCapability) Name() string { return c.name }
func (c *namedCapability) Serve(context.Context, *hostfuncs.Call, []byte) (any, error) {
	return c.result, c.err
}

// TestConcurrentCalls: many calls at once on one module get their own
// instances (created from the snapshot while others run), each with the
// right answer, and every instance returns to the pool or is closed.
func TestConcurrentCalls(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "echo", testwasm.BuildGo(t, "../tools-wasm/echo"), runtime.Limits{MaxInstances: 6})
	const workers, calls = 24, 10
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range calls {
				text := fmt.Sprintf("w%d-c%d", w, i)
				res := call(t, tl, fmt.Sprintf(`{"text":%q}`, text))
				if res.IsError || res.Content[0].Text != text {
					errs <- fmt.Errorf("%s: %+v %v", text, res.Error, res.Content)
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
