package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// schemaModule is a WAT tool module describing tools (a JSON array) whose
// every call answers "ok" with structuredContent.
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
		watQuote(desc), watQuote(resp), uint64(16)<<32|uint64(len(desc)), uint64(131072)<<32|uint64(len(resp)))
}

func watQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		if c == '"' || c == '\\' || c < 0x20 || c > 0x7e {
			b.WriteString(`\` + strconv.FormatUint(uint64(c)|0x100, 16)[1:])
		} else {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// anyOfLevels is $defs entries a0..a<levels>: each level's anyOf pair
// doubles the validator's work on one value.
func anyOfLevels(levels int) string {
	var defs []string
	for i := 0; i < levels; i++ {
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]}`, i, i+1, i+1))
	}
	return strings.Join(append(defs, fmt.Sprintf(`"a%d":{"type":"integer"}`, levels)), ",")
}

func stringList(n int) map[string]any {
	items := make([]any, n)
	for i := range items {
		items[i] = "x"
	}
	return map[string]any{"list": items}
}

// TestHostileSchemas: modules whose schemas crashed (a cycle of in-place
// applicators) or stalled (exponential anyOf) warden serve are refused at
// load with the module and the problem named; a tool whose schema is
// costly only on a long list fails that call with its typed kind; the
// server survives all of it and echo still answers.
func TestHostileSchemas(t *testing.T) {
	e := newEnv(t, "", "echo")
	costly := `{"type":"object","properties":{"list":{"type":"array","items":{"$ref":"#/$defs/a0"}}},"$defs":{` + anyOfLevels(8) + `}}`
	modules := map[string]string{
		"cyclic":    `[{"name":"cyclic","description":"d","inputSchema":{"type":"object","allOf":[{"$ref":"#"}]}}]`,
		"defscycle": `[{"name":"defscycle","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}}}}]`,
		"exponential": `[{"name":"exponential","description":"d","inputSchema":{"type":"object","$ref":"#/$defs/a0","$defs":{` + anyOfLevels(40) + `}}},` +
			`{"name":"exponential_out","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object","$ref":"#/$defs/a0","$defs":{` + anyOfLevels(40) + `}}}]`,
		"costly": `[{"name":"costly_in","description":"d","inputSchema":` + costly + `},` +
			`{"name":"costly_out","description":"d","inputSchema":{"type":"object"},"outputSchema":` + costly + `}]`,
	}
	for name, tools := range modules {
		structured := `{}`
		if name == "costly" {
			structured = `{"list":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 5000), ",") + `]}`
		}
		wasm := testwasm.WATString(t, schemaModule(tools, structured))
		if err := os.WriteFile(filepath.Join(e.tools, name+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs, stderr := stdioServer(t, e, "", nil)

	got := toolNames(t, cs)
	if want := sorted("costly_in", "costly_out", "echo"); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tools %v, want %v", got, want)
	}
	for module, want := range map[string]string{
		"cyclic":      `inputSchema: #: the in-place applicators form a cycle`,
		"defscycle":   `outputSchema: #/$defs/a: the in-place applicators form a cycle, #/$defs/a -($ref)-> #/$defs/b -(allOf/0)-> #/$defs/b/allOf/0 -($ref)-> #/$defs/a`,
		"exponential": `tool \"exponential\": inputSchema: #: validating any single value against this subschema takes more than 262144 evaluation steps`,
	} {
		// The list answers once the loads ended; their error lines are
		// written by the load's callback, maybe just after: wait for them.
		eventually(t, fmt.Sprintf("a log line refusing %s.wasm with %q", module, want), func() bool {
			return len(stderr.lines("tool not loaded", module+".wasm", want)) > 0
		})
	}

	res := call(t, cs, "costly_in", stringList(5000))
	wantFailure(t, res, "invalid_arguments")
	if msg := text(t, res); !strings.Contains(msg, "arguments too complex to validate against the inputSchema of costly_in: more than 262144 schema evaluation steps") {
		t.Errorf("costly_in: %s", msg)
	}
	wantEcho(t, cs, "after costly input")

	res = call(t, cs, "costly_out", map[string]any{})
	wantFailure(t, res, "bad_output")
	if msg := text(t, res); !strings.Contains(msg, "too complex to validate against its outputSchema") {
		t.Errorf("costly_out: %s", msg)
	}
	wantEcho(t, cs, "after costly output")

	// A short list is validated: an ordinary mismatch, then a valid call.
	wantFailure(t, call(t, cs, "costly_in", stringList(3)), "invalid_arguments")
	if res := call(t, cs, "costly_in", map[string]any{"list": []any{1, 2, 3}}); res.IsError {
		t.Fatalf("costly_in with integers: %s", dump(res))
	}
	wantEcho(t, cs, "still serving")
}
