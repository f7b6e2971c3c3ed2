package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// costlyList is an object schema whose "list" items each cost about 2^9
// evaluations: cheap for a short list, over the validation budget for a
// long one.
const costlyList = `{"type":"object","properties":{"list":{"type":"array","items":{"$ref":"#/$defs/a0"}}},"$defs":{` +
	`"a0":{"anyOf":[{"$ref":"#/$defs/a1"},{"$ref":"#/$defs/a1"}]},"a1":{"anyOf":[{"$ref":"#/$defs/a2"},{"$ref":"#/$defs/a2"}]},` +
	`"a2":{"anyOf":[{"$ref":"#/$defs/a3"},{"$ref":"#/$defs/a3"}]},"a3":{"anyOf":[{"$ref":"#/$defs/a4"},{"$ref":"#/$defs/a4"}]},` +
	`"a4":{"anyOf":[{"$ref":"#/$defs/a5"},{"$ref":"#/$defs/a5"}]},"a5":{"anyOf":[{"$ref":"#/$defs/a6"},{"$ref":"#/$defs/a6"}]},` +
	`"a6":{"anyOf":[{"$ref":"#/$defs/a7"},{"$ref":"#/$defs/a7"}]},"a7":{"anyOf":[{"$ref":"#/$defs/a8"},{"$ref":"#/$defs/a8"}]},` +
	`"a8":{"type":"integer"}}}`

// longList is {"list": [n strings]}: no item is an integer.
func longList(n int) string {
	return `{"list":[` + strings.TrimSuffix(strings.Repeat(`"x",`, n), ",") + `]}`
}

// schemaModule is a WAT module describing tools (a JSON array) whose every
// call answers "ok" with structuredContent.
func schemaModule(tools, structured string) string {
	desc := `{"tools":` + tools + `}`
	resp := `{"content":[{"type":"text","text":"ok"}],"structuredContent":` + structured + `}`
	return fmt.Sprintf(`(module
  (memory (export "memory") 8)
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 393216))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) %s)
  (data (i32.const 131072) %s)
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param i64) (result i64) (i64.const %d)))`,
		watString(desc), watString(resp), pack(16, len(desc)), pack(131072, len(resp)))
}

// TestCostlySchemasFailTheCallNotTheHost: over budget, the input schema's
// validation is invalid_arguments and the output schema's bad_output; the
// same tools then serve cheaper calls, and so does a tool without schemas.
func TestCostlySchemasFailTheCallNotTheHost(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tools := `[{"name":"costly_in","description":"d","inputSchema":` + costlyList + `},
	  {"name":"costly_out","description":"d","inputSchema":{"type":"object"},"outputSchema":` + costlyList + `},
	  {"name":"plain","description":"d","inputSchema":{"type":"object"}}]`
	m, err := rt.Load(context.Background(), "costly", testwasm.WATString(t, schemaModule(tools, longList(5000))), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*runtime.Tool{}
	for _, tl := range m.Tools() {
		byName[tl.Descriptor.Name] = tl
	}
	if len(byName) != 3 {
		t.Fatalf("tools %v, rejected %v", byName, m.Rejected())
	}

	e := wantKind(t, call(t, byName["costly_in"], longList(5000)), tool.KindInvalidArguments)
	if !strings.Contains(e.Message, "arguments too complex to validate against the inputSchema of costly_in: more than 262144 schema evaluation steps") {
		t.Errorf("message %q", e.Message)
	}
	wantKind(t, call(t, byName["costly_in"], longList(3)), tool.KindInvalidArguments) // an ordinary mismatch
	wantOK(t, call(t, byName["costly_in"], `{"list":[]}`), "ok")

	e = wantKind(t, call(t, byName["costly_out"], `{}`), tool.KindBadOutput)
	if !strings.Contains(e.Message, "costly_out structuredContent too complex to validate against its outputSchema: more than 262144 schema evaluation steps") {
		t.Errorf("message %q", e.Message)
	}
	wantOK(t, call(t, byName["plain"], `{}`), "ok")
}

// TestHostileSchemaRefusedAtLoad: a module whose schemas would crash the
// validator is refused at load, with the tool, the schema and the cycle named.
func TestHostileSchemaRefusedAtLoad(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tools := `[{"name":"cyclic","description":"d","inputSchema":{"type":"object","allOf":[{"$ref":"#"}]}},
	  {"name":"cyclic_out","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}}]`
	_, err := rt.Load(context.Background(), "hostile", testwasm.WATString(t, schemaModule(tools, `{}`)), runtime.Limits{})
	if err == nil {
		t.Fatal("loaded")
	}
	for _, want := range []string{`tool "cyclic": inputSchema: #: the in-place applicators form a cycle`,
		`tool "cyclic_out": outputSchema: #/$defs/a: the in-place applicators form a cycle, #/$defs/a -($ref)-> #/$defs/b -($ref)-> #/$defs/a`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("load error %q\nwant it to contain %q", err, want)
		}
	}
	// The runtime is fine: another module loads and serves.
	tl := loadTool(t, rt, "plain", testwasm.WATString(t, schemaModule(`[{"name":"plain","description":"d","inputSchema":{"type":"object"}}]`, `{}`)), runtime.Limits{})
	wantOK(t, call(t, tl, `{}`), "ok")

}
