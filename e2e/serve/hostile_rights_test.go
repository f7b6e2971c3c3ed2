package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/tool"
)

// rightsWorld is a tools dir where modules try to borrow another tool's
// rights, and a config with a secret granted to two tools:
//   - hostcalls.wasm, pinned, granted env SECRET (no module field: it belongs
//     to module hostcalls);
//   - aaa-evil.wasm, the same bytes under another file name, unpinned: it
//     describes the tool hostcalls too, and sorts first;
//   - shouty.wasm, whose tool is READER, while tools.grants.reader grants the
//     secret (to module reader, which is not installed);
//   - dots.wasm, a WAT module describing tools named ".", ".." and dots_ok;
//   - .hidden.wasm, a module file whose name is not a module name.
type rightsWorld struct {
	*env
	secret string
}

func newRightsWorld(t *testing.T) *rightsWorld {
	t.Helper()
	e := newEnv(t, "", "hostcalls", "shouty")
	w := &rightsWorld{env: e, secret: "s3cret-" + rand.Text()}
	hostcalls, err := os.ReadFile(filepath.Join(e.tools, "hostcalls.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	w.write(t, "aaa-evil.wasm", hostcalls)
	w.write(t, ".hidden.wasm", hostcalls)
	w.write(t, "dots.wasm", describingWAT(t, ".", "..", "dots_ok"))
	sum := sha256.Sum256(hostcalls)
	cfg := fmt.Sprintf(`project:
  root: %s
env:
  values:
    SECRET: {value: %s}
tools:
  dir: %s
  cache_dir: %s
  grants:
    hostcalls: {env: [SECRET]}                   # belongs to module hostcalls
    reader: {env: [SECRET], fs: {read: ["."]}}   # belongs to module reader (not installed)
  pins:
    hostcalls: %s
log:
  level: debug
`, e.dir, w.secret, e.tools, built.cacheDir, hex.EncodeToString(sum[:]))
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *rightsWorld) write(t *testing.T, name string, wasm []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.tools, name), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
}

// describingWAT is a native tool module describing tools with the given
// names; every call answers "ok".
func describingWAT(t *testing.T, names ...string) []byte {
	t.Helper()
	var tools []map[string]any
	for _, n := range names {
		tools = append(tools, map[string]any{"name": n, "description": "e2e fixture", "inputSchema": map[string]any{"type": "object"}})
	}
	desc, _ := json.Marshal(map[string]any{"tools": tools})
	const reply = `{"content":[{"type":"text","text":"ok"}]}`
	hexed := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "\\%02x", s[i])
		}
		return b.String()
	}
	return testwasm.WATString(t, fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 32768))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) "%s")
  (data (i32.const 16384) "%s")
  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const %d)))
  (func (export "warden_call") (param i64) (result i64)
    (i64.or (i64.shl (i64.const 16384) (i64.const 32)) (i64.const %d))))`,
		hexed(string(desc)), hexed(reply), len(desc), len(reply)))
}

// listed is one tools/list: the names and the refusals in its _meta.
func listed(t *testing.T, cs *mcp.ClientSession) (names []string, refused []map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	raw, _ := json.Marshal(res.Meta["warden/refused"])
	json.Unmarshal(raw, &refused)
	return names, refused
}

// healthz is the JSON of /healthz.
func healthz(t *testing.T, s *httpServer) (body string, refused []map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body = readAll(resp.Body)
	var h struct {
		Status     string           `json:"status"`
		Refused    []map[string]any `json:"refused"`
		LoadErrors []map[string]any `json:"load_errors"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || h.Refused == nil {
		t.Fatalf("/healthz: %v %s", err, body)
	}
	// A module that failed to load (this test's .hidden.wasm) makes the
	// server degraded, and /healthz names it; tools are still served.
	if want := map[bool]string{false: "ok", true: "degraded"}[len(h.LoadErrors) > 0]; h.Status != want {
		t.Fatalf("/healthz status %q, want %q: %s", h.Status, want, body)
	}
	return body, h.Refused
}

// refusalOf finds the refusal of tool by module.
func refusalOf(refused []map[string]any, tool, module string) map[string]any {
	for _, r := range refused {
		if r["tool"] == tool && r["module"] == module {
			return r
		}
	}
	return nil
}

// envOutcome calls a tool that asks warden.env for SECRET and returns the
// whole result as JSON, and the env error the host answered (nil when the
// host gave the value).
func envOutcome(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, *tool.Error) {
	t.Helper()
	all, envErr, _ := outcomes(t, cs, name, args)
	return all, envErr
}

// outcomes is envOutcome with the fs error too.
func outcomes(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, *tool.Error, *tool.Error) {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: %s", name, dump(res))
	}
	type outcome struct {
		Error *tool.Error `json:"error"`
	}
	var out struct {
		Env outcome `json:"env"`
		FS  outcome `json:"fs"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v: %s", name, err, raw)
	}
	return dump(res), out.Env.Error, out.FS.Error
}

// TestHostileRights: a module never borrows another tool's rights.
//
// The impostor aaa-evil describes the pinned hostcalls' tool name and sorts
// first: the pinned module serves the name, the impostor's tool is refused
// (visible in tools/list _meta, /healthz, `warden tools`), and the secret
// granted to hostcalls reaches only the pinned module. With the pinned
// module removed the impostor serves the name but its grant entry belongs to
// module hostcalls: every env request is denied with the config line that
// says so. READER (module shouty) gets nothing of reader's grant. Tools named
// "." and "..", and a module file named .hidden.wasm, are refused with the
// rule. The secret appears in no response but the pinned module's own, and
// never in the server's log.
func TestHostileRights(t *testing.T) {
	t.Parallel()
	w := newRightsWorld(t)
	secretArgs := map[string]any{"env": map[string]any{"op": "get", "key": "SECRET"}, "fs": map[string]any{"op": "stat", "path": "."}}

	// `warden tools` shows the refusal and the grant of another module,
	// and .hidden.wasm as a FAILED row (so it exits 1).
	cmd := exec.Command(built.warden, "tools", "--config", w.config)
	cmd.Env = childEnv()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("warden tools: %v, want exit 1\n%s%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{
		"REFUSED (1; not served):",
		`hostcalls (module aaa-evil): tool "hostcalls" of module aaa-evil is refused: it is also described by module hostcalls; only module hostcalls is pinned (tools.pins.hostcalls)`,
		"GRANTS OF ANOTHER MODULE (1; nothing granted):",
		`tools.grants.reader is bound to module reader (no module field: the module named like the tool); tool "READER" is served by module shouty`,
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("warden tools lacks %q:\n%s", want, stdout.String())
		}
	}
	for _, want := range []string{`FAILED: load ` + filepath.Join(w.tools, ".hidden.wasm") + `: module name ".hidden" (the file name without .wasm) must be ` + tool.NameRule,
		"REJECTED (2; not served, the module's other tools are):", `name "."`, `name ".."`} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("warden tools lacks %q:\n%s", want, stdout.String())
		}
	}
	if want := "warden: 1 module failed to load (.hidden)\n"; !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("warden tools stderr does not end with %q:\n%s", want, stderr.String())
	}

	hs := startHTTP(t, w.env)
	t.Cleanup(func() {
		if strings.Contains(hs.stderr.String(), w.secret) {
			t.Errorf("the secret is in the server's log")
		}
	})
	cs := hs.connect(t, "", nil, nil)

	// 1. Both modules loaded: the pinned one serves, the impostor is refused.
	names, refused := listed(t, cs)
	if !slices.Equal(sorted(names...), []string{"READER", "dots_ok", "hostcalls"}) {
		t.Fatalf("tools/list = %v", names)
	}
	r := refusalOf(refused, "hostcalls", "aaa-evil")
	if r == nil || len(refused) != 1 || fmt.Sprint(r["modules"]) != "[aaa-evil hostcalls]" ||
		!strings.Contains(fmt.Sprint(r["reason"]), "remove aaa-evil.wasm from the tools dir or rename its tool") {
		t.Fatalf("tools/list _meta warden/refused = %v", refused)
	}
	if _, hr := healthz(t, hs); refusalOf(hr, "hostcalls", "aaa-evil") == nil || len(hr) != 1 {
		t.Fatalf("/healthz refused = %v", hr)
	}
	got, envErr := envOutcome(t, cs, "hostcalls", secretArgs)
	if envErr != nil || !strings.Contains(got, w.secret) {
		t.Fatalf("the pinned hostcalls does not get its own grant: %s", got)
	}

	// 2. READER, served by shouty, gets nothing of tools.grants.reader.
	got, envErr = envOutcome(t, cs, "READER", map[string]any{})
	if envErr == nil || envErr.Kind != tool.KindDenied || strings.Contains(got, w.secret) ||
		!strings.Contains(envErr.Message, `tools.grants.reader is bound to module reader`) ||
		!strings.Contains(envErr.Message, `tool "READER" is served by module shouty`) {
		t.Fatalf("READER: %s", got)
	}
	if res := call(t, cs, "dots_ok", map[string]any{}); res.IsError {
		t.Fatalf("dots_ok: %s", dump(res))
	}

	// 3. The pinned module removed: the impostor is the only candidate and
	// serves the name, with nothing granted.
	if err := os.Remove(filepath.Join(w.tools, "hostcalls.wasm")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the impostor un-refused", func() bool { _, hr := healthz(t, hs); return len(hr) == 0 })
	if _, refused := listed(t, cs); len(refused) != 0 {
		t.Fatalf("refusals after the pinned module left: %v", refused)
	}
	got, envErr, fsErr := outcomes(t, cs, "hostcalls", secretArgs)
	if envErr == nil || envErr.Kind != tool.KindDenied || strings.Contains(got, w.secret) ||
		!strings.Contains(envErr.Message, `tools.grants.hostcalls is bound to module hostcalls`) ||
		!strings.Contains(envErr.Message, `tool "hostcalls" is served by module aaa-evil`) {
		t.Fatalf("the impostor's env: %s", got)
	}
	if fsErr == nil || fsErr.Kind != tool.KindDenied || !strings.Contains(fsErr.Message, `tools.grants.hostcalls is bound to module hostcalls`) {
		t.Fatalf("the fs denial lacks the note: %s", got)
	}

	// 4. The pinned module back: it wins over the impostor loaded first.
	hostcalls, _ := os.ReadFile(filepath.Join(w.tools, "aaa-evil.wasm"))
	w.write(t, "hostcalls.wasm", hostcalls)
	eventually(t, "the impostor refused again", func() bool { _, hr := healthz(t, hs); return len(hr) == 1 })
	got, envErr = envOutcome(t, cs, "hostcalls", secretArgs)
	if envErr != nil || !strings.Contains(got, w.secret) {
		t.Fatalf("the pinned hostcalls back: %s", got)
	}

	// 5. Another impostor, added later, cannot displace the pinned module.
	w.write(t, "zzz-evil.wasm", hostcalls)
	eventually(t, "the late impostor refused", func() bool { _, hr := healthz(t, hs); return refusalOf(hr, "hostcalls", "zzz-evil") != nil })
	body, hr := healthz(t, hs)
	if len(hr) != 2 || strings.Contains(body, w.secret) {
		t.Fatalf("/healthz: %s", body)
	}
	got, envErr = envOutcome(t, cs, "hostcalls", secretArgs)
	if envErr != nil || !strings.Contains(got, w.secret) {
		t.Fatalf("the pinned hostcalls with a late impostor: %s", got)
	}
	if names, refused := listed(t, cs); !slices.Contains(names, "hostcalls") || len(refused) != 2 {
		t.Fatalf("tools/list %v, refused %v", names, refused)
	}
	// The registry refuses the module (what /healthz showed above) before
	// the refusal's log line is written: wait for the line, not on luck.
	eventually(t, "the late impostor's refusal logged", func() bool {
		return len(hs.stderr.lines("tool refused", "zzz-evil")) > 0
	})
	// The server lives on: the next call to another tool still works.
	if res := call(t, cs, "dots_ok", map[string]any{}); res.IsError {
		t.Fatalf("dots_ok: %s", dump(res))
	}
}
