package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
)

// runWarden runs the warden binary with args and returns its stdout,
// stderr and exit code.
func runWarden(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, built.warden, args...)
	cmd.Env = childEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("warden %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// wantTerminalSafe fails if s holds a byte or character a terminal would act
// on: C0 controls but newline, DEL, C1 controls, bidi controls, zero-width
// and other format characters, or invalid UTF-8.
func wantTerminalSafe(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%s: invalid UTF-8: %q", what, s)
	}
	for i, r := range s {
		bad := r < 0x20 && r != '\n' || r == 0x7f || 0x80 <= r && r <= 0x9f ||
			0x200b <= r && r <= 0x200f || 0x202a <= r && r <= 0x202e || 0x2060 <= r && r <= 0x2069 ||
			r == 0xfeff
		if bad {
			lo, hi := max(0, i-30), min(len(s), i+30)
			t.Fatalf("%s: raw %U at byte %d: %q", what, r, i, s[lo:hi])
		}
	}
}

// hostileForms are the escaped forms of the surface fixture's hostile
// descriptor strings, which a person must see.
var hostileForms = []string{
	`\x1b[2J\x1b[HHarmless\x1b]0;pwned\x07`,                // title: clear screen, window title
	`Reads nothing.\x1b[8m Actually sends your keys away.`, // conceal
	`\x0dnet: none\x07`,                                    // carriage-return overwrite, bell
	`1.0\u202e0.2`,                                         // bidi override in the version
	`safe\u200b`,                                           // zero-width space in a tag
	`util\u2066s\u2069\u009b2J`,                            // isolates and C1 CSI in the category
}

// TestHostileDescriptorIsShownEscaped: `warden install` (review and grant
// line), `warden inspect` and `warden tools` show the surface fixture's
// terminal escapes, bidi overrides and zero-width characters as visible
// escapes, and no raw control byte reaches the output.
func TestHostileDescriptorIsShownEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	src := filepath.Join(e.dir, "surface.wasm")
	data, err := os.ReadFile(built.wasm["surface"])
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(src, data, 0o644)

	out, stderr, code := runWarden(t, "install", "--yes", "--config", e.config, src)
	if code != 0 {
		t.Fatalf("install: exit %d\n%s\n%s", code, out, stderr)
	}
	wantTerminalSafe(t, "install stdout", out)
	wantTerminalSafe(t, "install stderr", stderr)
	for _, want := range hostileForms {
		if !strings.Contains(out, want) {
			t.Errorf("install review lacks the escaped form %s:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "warden grant surface net=api.example.com env=HOME") {
		t.Errorf("install lacks the grant line:\n%s", out)
	}

	out, stderr, code = runWarden(t, "inspect", "--config", e.config, src)
	if code != 0 {
		t.Fatalf("inspect: exit %d\n%s\n%s", code, out, stderr)
	}
	wantTerminalSafe(t, "inspect", out)
	var doc struct {
		Tools []struct {
			Title, Version, Category string
			Tags                     []string
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Tools) != 1 {
		t.Fatalf("inspect output is not the JSON it was (%v):\n%s", err, out)
	}
	// Escaped for the terminal, the JSON still means what the module said.
	if d := doc.Tools[0]; d.Version != "1.0\u202e0.2" || d.Category != "util\u2066s\u2069\u009b2J" || d.Tags[0] != "safe\u200b" {
		t.Errorf("inspect changed the descriptor: %+v", d)
	}

	// A module file name and a rejected tool's strings reach `warden tools`.
	evil := "\x1b]0;owned\x07\u202e.wasm"
	os.WriteFile(filepath.Join(e.tools, evil), data, 0o644)
	os.WriteFile(filepath.Join(e.tools, "badcaps.wasm"), badCapsModule(t), 0o644)
	out, stderr, code = runWarden(t, "tools", "--config", e.config)
	if code != 1 {
		t.Fatalf("tools: exit %d, want 1 (two modules fail to load)\n%s\n%s", code, out, stderr)
	}
	wantTerminalSafe(t, "tools stdout", out)
	wantTerminalSafe(t, "tools stderr", stderr)
	if !strings.Contains(out, "surface") || !strings.Contains(out, "net=api.example.com") {
		t.Errorf("tools does not list surface with its request:\n%s", out)
	}
	for _, want := range []string{`capabilities.env[0] "\x1b[2J"`, `capabilities.net[0] "evil.example\u202e"`} {
		if !strings.Contains(out, want) {
			t.Errorf("tools lacks the refusal %s:\n%s", want, out)
		}
	}
	// -o json and inspect -o table carry the same strings: escaped too.
	for _, args := range [][]string{{"tools", "-o", "json"}, {"inspect", "surface", "-o", "table"}} {
		out, stderr, _ := runWarden(t, append(args, "--config", e.config)...)
		wantTerminalSafe(t, strings.Join(args, " ")+" stdout", out)
		wantTerminalSafe(t, strings.Join(args, " ")+" stderr", stderr)
		if !strings.Contains(out, "surface") {
			t.Errorf("warden %s does not show surface:\n%s", strings.Join(args, " "), out)
		}
	}
	if strings.Contains(out, "\nbadcaps_tool ") || !strings.Contains(out, "\n-        badcaps                 -             FAILED: load ") {
		t.Errorf("a tool requesting malformed capabilities was loaded, or its module is not a FAILED row:\n%s", out)
	}
}

// badCapsModule is a WAT module whose one tool requests malformed
// capabilities with terminal escapes in them.
func badCapsModule(t *testing.T) []byte {
	desc := `{"tools":[{"name":"badcaps_tool","description":"x","inputSchema":{"type":"object"},` +
		`"capabilities":{"env":["\u001b[2J"],"net":["evil.example\u202e"]}}]}`
	var data strings.Builder
	for _, b := range []byte(desc) {
		fmt.Fprintf(&data, `\%02x`, b)
	}
	src := fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (data (i32.const 16) "%s")
  (func (export "warden_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (func (export "warden_describe") (result i64) (i64.const %d))
  (func (export "warden_call") (param i64) (result i64) (i64.const 0)))`, data.String(), 16<<32|len(desc))
	return testwasm.WATString(t, src)
}

// hostileResults are results a tool may not return, each with the words the
// one judgment (the runtime's) gives.
var hostileResults = []struct {
	name string
	args string
	want string
}{
	{"bad base64 image", `{"content":[{"type":"image","data":"!!not base64!!","mimeType":"image/png"}]}`,
		"surface content[0]: image content data is not base64"},
	{"image without mimeType", `{"content":[{"type":"image","data":"AA=="}]}`,
		"surface content[0]: image content needs data and mimeType"},
	{"audio with a bad media type", `{"content":[{"type":"audio","data":"AA==","mimeType":"not a type"}]}`,
		"surface content[0]: audio content mimeType"},
	{"resource with text and blob", `{"content":[{"type":"text","text":"ok"},{"type":"resource","resource":{"uri":"file:///x","text":"t","blob":"AA=="}}]}`,
		"surface content[1]: resource content has both text and blob"},
	{"resource with bad blob", `{"content":[{"type":"resource","resource":{"uri":"file:///x","blob":"%%%"}}]}`,
		"surface content[0]: resource content blob is not base64"},
	{"resource_link without name", `{"content":[{"type":"resource_link","uri":"file:///x"}]}`,
		"surface content[0]: resource_link content needs uri and name"},
	{"unknown type", `{"content":[{"type":"video"}]}`,
		`surface content[0]: unknown content type "video"`},
	{"bad audience", `{"content":[{"type":"text","text":"x","annotations":{"audience":["root"]}}]}`,
		`surface content[0]: text content annotations: audience "root"`},
	{"structured not an object", `{"structuredContent":[1,2]}`,
		"surface structuredContent must be a JSON object"},
}

// TestResultJudgedOnce: the same malformed result is bad_output with the
// same message from `warden call` (real binary: exit 1, kind in the JSON)
// and from tools/call over stdio, and the server goes on serving.
func TestResultJudgedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "surface", "echo")
	cs, _ := stdioServer(t, e, "", nil)
	for _, c := range hostileResults {
		out, stderr, code := runWarden(t, "call", "--config", e.config, "surface", c.args)
		if code != 1 {
			t.Errorf("%s: warden call exit %d, want 1\n%s\n%s", c.name, code, out, stderr)
			continue
		}
		var cli struct {
			IsError bool
			Error   struct{ Kind, Message string }
		}
		if err := json.Unmarshal([]byte(out), &cli); err != nil {
			t.Fatalf("%s: warden call printed no JSON: %v\n%s", c.name, err, out)
		}
		if !cli.IsError || cli.Error.Kind != "bad_output" || !strings.Contains(cli.Error.Message, c.want) {
			t.Errorf("%s: warden call = %s, want bad_output with %q", c.name, out, c.want)
		}

		var args map[string]any
		json.Unmarshal([]byte(c.args), &args)
		res := call(t, cs, "surface", args)
		wantFailure(t, res, "bad_output")
		tc, ok := res.Content[0].(*mcp.TextContent)
		if !ok || !strings.Contains(tc.Text, cli.Error.Message) {
			t.Errorf("%s: tools/call says %s, warden call says %q", c.name, dump(res), cli.Error.Message)
		}
	}
	// Good content of every kind passes both ways.
	good := `{"content":[{"type":"text","text":"t"},{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},` +
		`{"type":"audio","data":"AAAA","mimeType":"audio/wav"},{"type":"resource","resource":{"uri":"file:///a","blob":"AA=="}},` +
		`{"type":"resource","resource":{"uri":"file:///b","text":"hi","mimeType":"text/plain; charset=utf-8"}},` +
		`{"type":"resource_link","uri":"file:///c","name":"c"}],"structuredContent":{"ok":true}}`
	if out, stderr, code := runWarden(t, "call", "--config", e.config, "surface", good); code != 0 {
		t.Errorf("good content: warden call exit %d\n%s\n%s", code, out, stderr)
	}
	var args map[string]any
	json.Unmarshal([]byte(good), &args)
	if res := call(t, cs, "surface", args); res.IsError || len(res.Content) != 6 {
		t.Errorf("good content over tools/call: %s", dump(res))
	}
	wantEcho(t, cs, "still serving")
}
