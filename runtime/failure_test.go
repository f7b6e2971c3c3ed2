package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

func newRuntime(t testing.TB, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = "off"
	}
	rt, err := runtime.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

func loadTool(t testing.TB, rt *runtime.Runtime, name string, wasm []byte, limits runtime.Limits) *runtime.Tool {
	t.Helper()
	m, err := rt.Load(context.Background(), name, wasm, limits)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	if len(m.Tools()) == 0 {
		t.Fatalf("load %s: no tools (rejected: %v)", name, m.Rejected())
	}
	return m.Tools()[0]
}

func call(t testing.TB, tl *runtime.Tool, args string) *tool.Result {
	t.Helper()
	return tl.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(args)})
}

func wantOK(t testing.TB, res *tool.Result, text string) {
	t.Helper()
	if res.IsError {
		t.Fatalf("want success, got error %v", res.Error)
	}
	if len(res.Content) == 0 || res.Content[0].Text != text {
		t.Fatalf("want text %q, got %+v", text, res.Content)
	}
}

func wantKind(t testing.TB, res *tool.Result, kind tool.Kind) *tool.Error {
	t.Helper()
	if !res.IsError || res.Error == nil {
		t.Fatalf("want %s error, got success %+v", kind, res.Content)
	}
	if res.Error.Kind != kind {
		t.Fatalf("want kind %s, got %v", kind, res.Error)
	}
	if res.Meta[tool.MetaKind] != string(kind) {
		t.Fatalf("meta kind = %v, want %s", res.Meta[tool.MetaKind], kind)
	}
	return res.Error
}

// respond returns instructions that make warden_call return s, placed at
// address 3072 by a data segment the fixture adds.
func respond(s string) (body, data string) {
	return fmt.Sprintf("(return (i64.const %d))", pack(3072, len(s))),
		fmt.Sprintf("(data (i32.const 3072) %s)", watString(s))
}

// TestFailureModes runs every way a guest can fail, checks the error kind
// (and trap class or exit code), and that the next call on the same tool
// succeeds: the broken instance was discarded, the host kept serving.
func TestFailureModes(t *testing.T) {
	badJSONBody, badJSONData := respond("this is not json")
	hostKindBody, hostKindData := respond(`{"error":{"kind":"timeout","message":"lying"}}`)
	guestErrBody, guestErrData := respond(`{"error":{"kind":"not_found","message":"no such widget"}}`)
	badContentBody, badContentData := respond(`{"content":[{"type":"image"}]}`)
	cases := []struct {
		fixture watFixture
		limits  runtime.Limits
		kind    tool.Kind
		trap    tool.TrapClass
		exit    uint32
		message string
	}{
		{fixture: watFixture{name: "unreachable", failBody: "unreachable"},
			kind: tool.KindTrapped, trap: tool.TrapUnreachable},
		{fixture: watFixture{name: "oob", failBody: "(drop (i32.load (i32.const 0x7ffffff0)))"},
			kind: tool.KindTrapped, trap: tool.TrapOutOfBoundsMemory},
		{fixture: watFixture{name: "div0", failBody: "(drop (i32.div_u (i32.const 1) (global.get $zero)))"},
			kind: tool.KindTrapped, trap: tool.TrapIntegerDivideByZero},
		{fixture: watFixture{name: "overflow", failBody: "(drop (i32.div_s (i32.const 0x80000000) (global.get $minus1)))"},
			kind: tool.KindTrapped, trap: tool.TrapIntegerOverflow},
		{fixture: watFixture{name: "conversion", failBody: "(drop (i32.trunc_f32_s (f32.div (f32.convert_i32_s (global.get $zero)) (f32.convert_i32_s (global.get $zero)))))"},
			kind: tool.KindTrapped, trap: tool.TrapInvalidConversion},
		{fixture: watFixture{name: "stack", failBody: "(call $recurse)",
			funcs: "(func $recurse (call $recurse))"},
			kind: tool.KindTrapped, trap: tool.TrapStackOverflow},
		{fixture: watFixture{name: "indirect", failBody: "(drop (call_indirect (param i32) (result i32) (i32.const 1) (i32.const 0)))",
			funcs: "(table 1 funcref) (elem (i32.const 0) $nothing) (func $nothing)"},
			kind: tool.KindTrapped, trap: tool.TrapIndirectCallMismatch},
		{fixture: watFixture{name: "table", failBody: "(call_indirect (i32.const 5))",
			funcs: "(table 1 funcref) (elem (i32.const 0) $nothing) (func $nothing)"},
			kind: tool.KindTrapped, trap: tool.TrapTableOutOfBounds},
		{fixture: watFixture{name: "loop", failBody: "(loop $spin (br $spin))"},
			limits: runtime.Limits{Timeout: 50 * time.Millisecond}, kind: tool.KindTimeout},
		{fixture: watFixture{name: "grow", failBody: "(loop $more (br_if $more (i32.ne (memory.grow (i32.const 4)) (i32.const -1)))) unreachable"},
			limits: runtime.Limits{Memory: 1 << 20}, kind: tool.KindOutOfMemory},
		{fixture: watFixture{name: "exit", failBody: "(call $proc_exit (i32.const 7))",
			imports: `(import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))`},
			kind: tool.KindGuestExit, exit: 7},
		{fixture: watFixture{name: "badptr", failBody: fmt.Sprintf("(return (i64.const %d))", pack(0xfffff000, 4096))},
			kind: tool.KindBadOutput, message: "outside guest memory"},
		{fixture: watFixture{name: "badjson", failBody: badJSONBody, funcs: badJSONData},
			kind: tool.KindBadOutput, message: "not valid JSON"},
		{fixture: watFixture{name: "huge", failBody: fmt.Sprintf("(return (i64.const %d))", pack(0, 60000))},
			limits: runtime.Limits{MaxOutput: 50000}, kind: tool.KindBadOutput, message: "over the output limit"},
		{fixture: watFixture{name: "hostkind", failBody: hostKindBody, funcs: hostKindData},
			kind: tool.KindBadOutput, message: "may not report"},
		{fixture: watFixture{name: "badcontent", failBody: badContentBody, funcs: badContentData},
			kind: tool.KindBadOutput, message: "content[0]"},
		{fixture: watFixture{name: "guesterror", failBody: guestErrBody, funcs: guestErrData},
			kind: tool.KindNotFound, message: "no such widget"},
		{fixture: watFixture{name: "badhostptr",
			failBody: "(call $log (i32.const 1) (i64.const 0x7ffffff000000010))",
			imports:  `(import "warden" "log" (func $log (param i32 i64)))`},
			kind: tool.KindBadOutput, message: "outside guest memory"},
	}
	rt := newRuntime(t, runtime.Options{})
	for _, c := range cases {
		t.Run(c.fixture.name, func(t *testing.T) {
			tl := loadTool(t, rt, c.fixture.name, c.fixture.build(t), c.limits)
			wantOK(t, call(t, tl, `{}`), "pong")
			for range 2 {
				res := call(t, tl, `{"fail":true}`)
				e := wantKind(t, res, c.kind)
				if e.Trap != c.trap {
					t.Errorf("trap = %q, want %q", e.Trap, c.trap)
				}
				if c.kind == tool.KindGuestExit && (e.ExitCode == nil || *e.ExitCode != c.exit) {
					t.Errorf("exit code = %v, want %d", e.ExitCode, c.exit)
				}
				if !strings.Contains(e.Message, c.message) {
					t.Errorf("message %q does not mention %q", e.Message, c.message)
				}
				wantOK(t, call(t, tl, `{}`), "pong")
			}
		})
	}
}
