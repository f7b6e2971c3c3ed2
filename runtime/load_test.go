package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
)

// module assembles a tool module from parts, for load-time checks.
type module struct {
	version    int
	memoryMin  int
	descriptor string
	initBody   string // body of _initialize; "" exports none
	extra      string // extra module fields
	omit       string // an export to leave out
}

func (m module) wat() string {
	if m.version == 0 {
		m.version = 1
	}
	if m.memoryMin == 0 {
		m.memoryMin = 1
	}
	if m.descriptor == "" {
		m.descriptor = `{"tools":[{"name":"ok","description":"fine","inputSchema":{"type":"object"}}]}`
	}
	exports := map[string]string{
		"warden_alloc":       `(func (export "warden_alloc") (param i32) (result i32) (i32.const 4096))`,
		"warden_abi_version": fmt.Sprintf(`(func (export "warden_abi_version") (result i32) (i32.const %d))`, m.version),
		"warden_describe":    fmt.Sprintf(`(func (export "warden_describe") (result i64) (i64.const %d))`, pack(16, len(m.descriptor))),
		"warden_call":        `(func (export "warden_call") (param i64) (result i64) (i64.const 0))`,
	}
	delete(exports, m.omit)
	var b strings.Builder
	fmt.Fprintf(&b, "(module\n  (memory (export \"memory\") %d)\n  (data (i32.const 16) %s)\n", m.memoryMin, watString(m.descriptor))
	for _, name := range []string{"warden_alloc", "warden_abi_version", "warden_describe", "warden_call"} {
		if e, ok := exports[name]; ok {
			b.WriteString("  " + e + "\n")
		}
	}
	if m.initBody != "" {
		fmt.Fprintf(&b, "  (func (export \"_initialize\") %s)\n", m.initBody)
	}
	b.WriteString(m.extra + ")")
	return b.String()
}

func TestLoadRejections(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	cases := []struct {
		name   string
		wasm   func(t *testing.T) []byte
		limits runtime.Limits
		want   string
	}{
		{"malformed", func(t *testing.T) []byte { return []byte("\x00asm\x01\x00\x00\x00garbage") }, runtime.Limits{}, "invalid module"},
		{"not wasm", func(t *testing.T) []byte { return []byte("#!/bin/sh\necho hi\n") }, runtime.Limits{}, "invalid module"},
		{"missing call", func(t *testing.T) []byte { return testwasm.WATString(t, module{omit: "warden_call"}.wat()) },
			runtime.Limits{}, "missing export warden_call (i64) -> (i64)"},
		{"missing alloc", func(t *testing.T) []byte { return testwasm.WATString(t, module{omit: "warden_alloc"}.wat()) },
			runtime.Limits{}, "missing export warden_alloc"},
		{"wrong signature", func(t *testing.T) []byte {
			return testwasm.WATString(t, module{omit: "warden_call",
				extra: `(func (export "warden_call") (param i32 i32) (result i64) (i64.const 0))`}.wat())
		}, runtime.Limits{}, "export warden_call has signature (i32, i32) -> (i64), want (i64) -> (i64)"},
		{"other ABI version", func(t *testing.T) []byte { return testwasm.WATString(t, module{version: 2}.wat()) },
			runtime.Limits{}, "module speaks tool ABI v2; this warden speaks v1"},
		{"unknown import", func(t *testing.T) []byte {
			return testwasm.WATString(t, strings.Replace(module{}.wat(), "(module", `(module (import "env" "launch_missiles" (func))`, 1))
		}, runtime.Limits{}, "imports env.launch_missiles, which this host does not provide"},
		{"unprovided capability", func(t *testing.T) []byte {
			return testwasm.WATString(t, strings.Replace(module{}.wat(), "(module", `(module (import "warden" "fs" (func (param i64) (result i64)))`, 1))
		}, runtime.Limits{}, "imports warden.fs, which this host does not provide"},
		{"wrong import signature", func(t *testing.T) []byte {
			return testwasm.WATString(t, strings.Replace(module{}.wat(), "(module", `(module (import "warden" "log" (func (param i32)))`, 1))
		}, runtime.Limits{}, "imports warden.log with signature (i32) -> (), want (i32, i64) -> ()"},
		{"imported memory", func(t *testing.T) []byte {
			src := strings.Replace(module{}.wat(), `(memory (export "memory") 1)`, `(import "env" "memory" (memory 1)) (export "memory" (memory 0))`, 1)
			return testwasm.WATString(t, src)
		}, runtime.Limits{}, "this module imports its memory"},
		{"command not reactor", func(t *testing.T) []byte {
			return testwasm.WATString(t, module{extra: `(func (export "_start"))`}.wat())
		}, runtime.Limits{}, "exports _start: a tool must be a reactor"},
		{"initialize traps", func(t *testing.T) []byte { return testwasm.WATString(t, module{initBody: "unreachable"}.wat()) },
			runtime.Limits{}, "_initialize: trapped (unreachable)"},
		{"initialize loops", func(t *testing.T) []byte { return testwasm.WATString(t, module{initBody: "(loop $l (br $l))"}.wat()) },
			runtime.Limits{LoadBudget: 100 * time.Millisecond}, "_initialize: did not finish within the load budget of 100ms"},
		{"memory above limit", func(t *testing.T) []byte { return testwasm.WATString(t, module{memoryMin: 40}.wat()) },
			runtime.Limits{Memory: 2 << 20}, "memory minimum 40 pages (2 MiB) is above the tool's limit of 2 MiB"},
		{"descriptor not JSON", func(t *testing.T) []byte { return testwasm.WATString(t, module{descriptor: "tools: [ok]"}.wat()) },
			runtime.Limits{}, "descriptor is not valid JSON"},
		{"no tools", func(t *testing.T) []byte { return testwasm.WATString(t, module{descriptor: `{"tools":[]}`}.wat()) },
			runtime.Limits{}, "descriptor lists no tools"},
		{"every tool invalid", func(t *testing.T) []byte {
			return testwasm.WATString(t, module{descriptor: `{"tools":[{"name":"a b","description":"","inputSchema":{"type":"string"}}]}`}.wat())
		}, runtime.Limits{}, `no valid tools: tool "a b": name "a b": must be 1-128 characters`},
		{"bad limits", func(t *testing.T) []byte { return testwasm.WATString(t, module{}.wat()) },
			runtime.Limits{Isolation: "sometimes"}, `limits: isolation: must be call, session or shared, got "sometimes"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := rt.Load(context.Background(), c.name, c.wasm(t), c.limits)
			if err == nil {
				t.Fatalf("loaded; want error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, c.want)
			}
		})
	}
	// The runtime is unharmed by all of the above.
	tl := loadTool(t, rt, "ping", testwasm.WAT(t, "testdata/ping.wat"), runtime.Limits{})
	wantOK(t, call(t, tl, `{}`), "pong")
}

// TestDescriptorValidation: each bad tool is rejected with the reason, and
// the module's good tools still load.
func TestDescriptorValidation(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	desc := `{"tools":[
	  {"name":"good","title":"Good","description":"fine","inputSchema":{"type":"object"},
	   "annotations":{"readOnlyHint":true},"tags":["x"],"capabilities":{"fs":{"read":["src"]},"lsp":["go"]}},
	  {"name":"empty_description","description":" ","inputSchema":{"type":"object"}},
	  {"name":"bad name!","description":"x","inputSchema":{"type":"object"}},
	  {"name":"not_object","description":"x","inputSchema":{"type":"array"}},
	  {"name":"invalid_schema","description":"x","inputSchema":{"type":"object","properties":{"a":{"minimum":"high"}}}},
	  {"name":"remote_ref","description":"x","inputSchema":{"type":"object","$ref":"https://example.com/s.json"}},
	  {"name":"bad_output_schema","description":"x","inputSchema":{"type":"object"},"outputSchema":{"type":"string"}},
	  {"name":"bad_memory","description":"x","inputSchema":{"type":"object"},"capabilities":{"memory":"everything"}},
	  {"name":"good","description":"again","inputSchema":{"type":"object"}},
	  {"name":"no_schema","description":"x"},
	  {"name":"bad_task","description":"x","inputSchema":{"type":"object"},"execution":{"taskSupport":"sometimes"}},
	  {"name":"task_ok","description":"x","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}
	]}`
	m, err := rt.Load(context.Background(), "mixed", testwasm.WATString(t, module{descriptor: desc}.wat()), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools()) != 2 || m.Tools()[0].Descriptor.Name != "good" || m.Tools()[1].Descriptor.TaskSupport() != "optional" {
		t.Fatalf("tools = %v, want good and task_ok", m.Tools())
	}
	want := map[string]string{
		"empty_description": "description: must not be empty",
		"bad name!":         "must be 1-128 characters",
		"not_object":        `root must have "type": "object"`,
		"invalid_schema":    "inputSchema",
		"remote_ref":        "inputSchema",
		"bad_output_schema": "outputSchema",
		"bad_memory":        "capabilities.memory",
		"good":              "used by another tool of this module",
		"no_schema":         "inputSchema: missing",
		"bad_task":          `tool "bad_task": execution.taskSupport "sometimes": must be "forbidden", "optional" or "required" (or absent, which means "forbidden")`,
	}
	got := map[string]string{}
	for _, r := range m.Rejected() {
		got[r.Name] = r.Reason.Error()
	}
	for name, reason := range want {
		if !strings.Contains(got[name], reason) {
			t.Errorf("rejection of %q = %q, want it to contain %q", name, got[name], reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("rejected %d tools, want %d: %v", len(got), len(want), got)
	}
}

// TestPingServesOneSessionForever: under isolation "session" one instance
// serves every call of the session, so ping's allocator must reuse memory.
// Its old bump allocator never freed and failed on call 272 with
// "warden_alloc(238) returned 65522, outside guest memory".
func TestPingServesOneSessionForever(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "ping", testwasm.WAT(t, "testdata/ping.wat"), runtime.Limits{Isolation: runtime.IsolationSession})
	// Requests of about 220 bytes: 1000 of them are more than ping's 64 KiB.
	args := json.RawMessage(`{"pad":"` + strings.Repeat("x", 200) + `"}`)
	for i := range 1000 {
		res := tl.Call(context.Background(), runtime.CallRequest{Arguments: args, Session: "s1"})
		if res.IsError {
			t.Fatalf("call %d: %v", i+1, res.Error)
		}
		if len(res.Content) != 1 || res.Content[0].Text != "pong" {
			t.Fatalf("call %d: content %+v, want pong", i+1, res.Content)
		}
	}
}
