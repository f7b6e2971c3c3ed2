package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/env"
	wfs "github.com/warden-run/warden/hostfuncs/fs"
	wnet "github.com/warden-run/warden/hostfuncs/net"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// extismRuntime is newRuntime with a compilation cache on disk shared by
// every Extism test (and kept between runs, like testwasm's builds): the
// fixtures are multi-megabyte Go modules, compiled once instead of per test.
func extismRuntime(t testing.TB, opts runtime.Options) *runtime.Runtime {
	t.Helper()
	if opts.CacheDir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = os.TempDir()
		}
		opts.CacheDir = filepath.Join(base, "warden-test", "wazero")
	}
	return newRuntime(t, opts)
}

// extismFixtures holds each fixture's bytes once built: asking testwasm
// again costs a `go list` per load.
var extismFixtures sync.Map

func extismFixture(t testing.TB, shape string) []byte {
	t.Helper()
	if b, ok := extismFixtures.Load(shape); ok {
		return b.([]byte)
	}
	b := testwasm.BuildGo(t, "testdata/extism/"+shape)
	extismFixtures.Store(shape, b)
	return b
}

// extismPlugin loads the Extism plugin fixture testdata/extism/<shape>.
func extismPlugin(t testing.TB, rt *runtime.Runtime, shape string, limits runtime.Limits) *runtime.Module {
	t.Helper()
	m, err := rt.Load(context.Background(), shape, extismFixture(t, shape), limits)
	if err != nil {
		t.Fatalf("load %s: %v", shape, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func toolNamed(t testing.TB, m *runtime.Module, name string) *runtime.Tool {
	t.Helper()
	for _, tl := range m.Tools() {
		if tl.Descriptor.Name == name {
			return tl
		}
	}
	t.Fatalf("module %s has no tool %s (rejected: %v)", m.Name(), name, m.Rejected())
	return nil
}

func callWith(t testing.TB, tl *runtime.Tool, args string, req runtime.CallRequest) *tool.Result {
	t.Helper()
	req.Arguments = json.RawMessage(args)
	return tl.Call(context.Background(), req)
}

// extismWAT is a hand-written v1 Extism plugin: describe outputs desc,
// call outputs out (both through the kernel, as a PDK would).
func extismWAT(t testing.TB, desc, out, imports string) []byte {
	t.Helper()
	return testwasm.WATString(t, extismWATSource(desc, out, imports))
}

func extismWATSource(desc, out, imports string) string {
	return fmt.Sprintf(`(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  %s
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
  (func (export "call") (result i32) (call $out (i32.const 32768) (i32.const %d)) (i32.const 0)))`,
		imports, watString(desc), watString(out), len(desc), len(out))
}

// TestExtismToolListChanged: a plugin importing hyper-mcp's
// notify_tool_list_changed loads and may call it; the tools served stay
// the ones it described at load.
func TestExtismToolListChanged(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	src := extismWATSource(descOf("add_tool"), `{"content":[{"type":"text","text":"added"}]}`,
		`(import "extism:host/user" "notify_tool_list_changed" (func $notify))`)
	src = strings.Replace(src, `(func (export "call") (result i32) (call $out`, `(func (export "call") (result i32) (call $notify) (call $out`, 1)
	m, err := rt.Load(context.Background(), "changing", testwasm.WATString(t, src), runtime.Limits{})
	if err != nil {
		t.Fatalf("a plugin importing notify_tool_list_changed was refused: %v", err)
	}
	defer m.Close(context.Background())
	add := toolNamed(t, m, "add_tool")
	for range 2 {
		wantOK(t, call(t, add, `{}`), "added")
	}
	if names := len(m.Tools()); names != 1 {
		t.Fatalf("tools after the notification: %d, want the 1 described at load", names)
	}
}

func descOf(names ...string) string {
	var tools []string
	for _, n := range names {
		tools = append(tools, fmt.Sprintf(`{"name":%q,"description":"d","inputSchema":{"type":"object"}}`, n))
	}
	return `{"tools":[` + strings.Join(tools, ",") + `]}`
}

func TestExtismV1Compute(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	m := extismPlugin(t, rt, "v1", runtime.Limits{})
	add := toolNamed(t, m, "v1_add")
	for range 3 {
		res := call(t, add, `{"a":2,"b":40}`)
		wantOK(t, res, "42")
		if fuel, _ := res.Meta[tool.MetaFuel].(int64); fuel <= 0 {
			t.Fatalf("fuel consumed = %v", res.Meta[tool.MetaFuel])
		}
	}
	// Arguments are checked against the plugin's schema before it runs.
	wantKind(t, call(t, add, `{"a":"two"}`), tool.KindInvalidArguments)
	if got := strings.Join(m.Imports(), " "); !strings.Contains(got, "extism:host/env.http_request") || strings.Contains(got, "warden:extism") {
		t.Fatalf("imports are the plugin's own: %v", m.Imports())
	}
	if got := strings.Join(m.Exports(), " "); !strings.Contains(got, "describe") || !strings.Contains(got, "call") {
		t.Fatalf("exports = %v", m.Exports())
	}
}

func TestExtismV2(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	m := extismPlugin(t, rt, "v2", runtime.Limits{})
	upper := toolNamed(t, m, "v2_upper")
	if upper.Descriptor.OutputSchema == nil {
		t.Fatal("outputSchema of the MCP tool was lost")
	}
	res := call(t, upper, `{"text":"abc"}`)
	wantOK(t, res, "ABC")
	if string(res.StructuredContent) != `{"upper":"ABC"}` {
		t.Fatalf("structured = %s", res.StructuredContent)
	}
	// isError: a tool-level failure, with the plugin's content kept.
	e := wantKind(t, call(t, toolNamed(t, m, "v2_error"), `{}`), tool.KindFailed)
	if e.Message != "reported by tool v2_error (module v2), not by warden: no such thing" {
		t.Fatalf("message = %q", e.Message)
	}
	// The request context carries the call id.
	res = callWith(t, toolNamed(t, m, "v2_context"), `{}`, runtime.CallRequest{CallID: "call-7"})
	wantOK(t, res, `{"_meta":{},"id":"call-7"}`)
	wantOK(t, call(t, upper, `{"text":"x"}`), "X")
}

// TestExtismFailures: each failure has its kind, and the next call of the
// same module works.
func TestExtismFailures(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	cases := []struct {
		shape, tool, args string
		limits            runtime.Limits
		kind              tool.Kind
		trap              tool.TrapClass
		message           string
	}{
		{shape: "v1", tool: "v1_fail", args: `{"how":"error_set"}`, kind: tool.KindFailed, message: "plugin failed on purpose"},
		{shape: "v1", tool: "v1_fail", args: `{"how":"rc"}`, kind: tool.KindFailed, message: "call returned 7"},
		{shape: "v1", tool: "v1_fail", args: `{"how":"is_error"}`, kind: tool.KindFailed, message: "tool-level failure"},
		{shape: "v1", tool: "v1_trap", args: `{}`, kind: tool.KindTrapped, trap: tool.TrapOutOfBoundsMemory},
		// The healthy call after it runs under the same deadline, so the
		// deadline leaves room for a busy machine.
		{shape: "v1", tool: "v1_loop", args: `{}`, limits: runtime.Limits{Timeout: 2 * time.Second}, kind: tool.KindTimeout, message: "did not finish within 2s"},
		{shape: "v1", tool: "v1_loop", args: `{}`, limits: runtime.Limits{Fuel: 50_000_000}, kind: tool.KindOutOfFuel, message: "out of fuel after 50000000 units"},
		{shape: "v1", tool: "v1_grow", args: `{"mb":64}`, limits: runtime.Limits{Memory: 48 << 20}, kind: tool.KindOutOfMemory, message: "48 MiB"},
		{shape: "v1", tool: "v1_fetch", args: `{"url":"https://example.com/"}`, kind: tool.KindDenied, message: "no net capability"},
		// An uncaught Go panic in an export ends in unreachable.
		{shape: "v2", tool: "v2_panic", args: `{}`, kind: tool.KindTrapped, trap: tool.TrapUnreachable},
		{shape: "v2", tool: "v2_bad", args: `{}`, kind: tool.KindBadOutput, message: "not a JSON CallToolResult"},
	}
	for _, c := range cases {
		t.Run(c.shape+"/"+c.tool+c.args, func(t *testing.T) {
			m := extismPlugin(t, rt, c.shape, c.limits)
			failing := toolNamed(t, m, c.tool)
			healthy, healthyArgs, want := "v1_add", `{"a":1,"b":2}`, "3"
			if c.shape == "v2" {
				healthy, healthyArgs, want = "v2_upper", `{"text":"ok"}`, "OK"
			}
			for range 2 {
				e := wantKind(t, call(t, failing, c.args), c.kind)
				if e.Trap != c.trap {
					t.Fatalf("trap = %q, want %q (%v)", e.Trap, c.trap, e)
				}
				if !strings.Contains(e.Message, c.message) {
					t.Fatalf("message %q does not contain %q", e.Message, c.message)
				}
				wantOK(t, call(t, toolNamed(t, m, healthy), healthyArgs), want)
			}
		})
	}
}

func TestExtismNotifications(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	v1 := extismPlugin(t, rt, "v1", runtime.Limits{})
	rec := &recorder{}
	wantOK(t, callWith(t, toolNamed(t, v1, "v1_notify"), `{}`, runtime.CallRequest{Observer: rec}), "notified")
	if len(rec.progress) != 3 || rec.progress[2] != (tool.Progress{Progress: 3, Total: 3, Message: "step 3"}) {
		t.Fatalf("progress = %+v", rec.progress)
	}
	wantLogs := []string{"INFO pdk log line", "WARN fixture: careful", `INFO {"k":1}`}
	if strings.Join(rec.logs, "|") != strings.Join(wantLogs, "|") {
		t.Fatalf("logs = %q, want %q", rec.logs, wantLogs)
	}

	v2 := extismPlugin(t, rt, "v2", runtime.Limits{})
	rec = &recorder{}
	wantOK(t, callWith(t, toolNamed(t, v2, "v2_notify"), `{}`, runtime.CallRequest{Observer: rec}), "ok")
	if len(rec.progress) != 2 || rec.progress[0].Progress != 50 || rec.progress[1].Progress != 100 {
		t.Fatalf("progress = %+v (the non-increasing report must be dropped)", rec.progress)
	}
	if strings.Join(rec.logs, "|") != "ERROR v2 says hi" {
		t.Fatalf("logs = %q", rec.logs)
	}
}

func TestExtismHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Fixture", "yes")
		fmt.Fprintf(w, "%s %s", r.Method, body)
	}))
	defer srv.Close()
	netCap, err := wnet.New(wnet.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := extismRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{netCap}})
	v1 := extismPlugin(t, rt, "v1", runtime.Limits{})
	fetch := toolNamed(t, v1, "v1_fetch")
	args := fmt.Sprintf(`{"url":%q}`, srv.URL+"/x?token=secret")
	granted := runtime.CallRequest{Grants: tool.Capabilities{Net: []string{srv.URL}}}

	wantOK(t, callWith(t, fetch, args, granted), "200 yes GET ")
	// Not granted: denied by warden.net, and the token stays out of the message.
	e := wantKind(t, call(t, fetch, args), tool.KindDenied)
	if strings.Contains(e.Message, "secret") {
		t.Fatalf("message leaks the query: %q", e.Message)
	}
	// A grant of the host by name only covers https on 443: loopback and
	// the test port stay refused (warden.net's SSRF guard, not Extism's
	// host glob).
	wantKind(t, callWith(t, fetch, args, runtime.CallRequest{Grants: tool.Capabilities{Net: []string{"*"}}}), tool.KindDenied)
	wantOK(t, callWith(t, fetch, args, granted), "200 yes GET ")
	// A request the plugin got wrong is its failure, not the caller's.
	if e := wantKind(t, callWith(t, fetch, `{"url":"ftp://127.0.0.1/x"}`, granted), tool.KindFailed); !strings.Contains(e.Message, "invalid HTTP request") {
		t.Fatalf("message = %q", e.Message)
	}

	v2 := extismPlugin(t, rt, "v2", runtime.Limits{})
	res := callWith(t, toolNamed(t, v2, "v2_fetch"), fmt.Sprintf(`{"url":%q,"body":"ping"}`, srv.URL), granted)
	wantOK(t, res, "200 POST ping")
}

func TestExtismFiles(t *testing.T) {
	root, home := t.TempDir(), t.TempDir()
	for path, content := range map[string]string{
		"docs/a.txt": "alpha", "docs/.env": "TOKEN=1", "secret/b.txt": "beta", "out/keep.txt": "",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsCap, err := wfs.New(wfs.Config{ProjectRoot: root, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	rt := extismRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{fsCap}})
	file := toolNamed(t, extismPlugin(t, rt, "v1", runtime.Limits{}), "v1_file")
	grants := runtime.CallRequest{Grants: tool.Capabilities{FS: tool.FSAccess{Read: []string{"docs"}, Write: []string{"out"}}}}

	wantOK(t, callWith(t, file, `{"path":"docs/a.txt"}`, grants), "alpha")
	wantOK(t, callWith(t, file, fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "docs/a.txt")), grants), "alpha")
	wantOK(t, callWith(t, file, `{"path":"docs","list":true}`, grants), "a.txt") // .env is deny-listed: not listed
	for _, c := range []struct{ args, message string }{
		{`{"path":"secret/b.txt"}`, "not granted"},
		{`{"path":"docs/.env"}`, "deny rule"},
		{`{"path":"docs/new.txt","content":"x"}`, "not granted"},
	} {
		e := wantKind(t, callWith(t, file, c.args, grants), tool.KindDenied)
		if !strings.Contains(e.Message, c.message) || !strings.Contains(strings.ToLower(e.Message), "permission denied") {
			t.Fatalf("%s: message %q, want %q and the plugin's own error", c.args, e.Message, c.message)
		}
	}
	wantOK(t, callWith(t, file, `{"path":"out/c.txt","content":"written"}`, grants), "wrote 7")
	if b, err := os.ReadFile(filepath.Join(root, "out/c.txt")); err != nil || string(b) != "written" {
		t.Fatalf("out/c.txt = %q, %v", b, err)
	}
	// Grants are per call: the same instance, without them, reads nothing.
	wantKind(t, call(t, file, `{"path":"docs/a.txt"}`), tool.KindDenied)
	wantOK(t, callWith(t, file, `{"path":"docs/a.txt"}`, grants), "alpha")
}

func TestExtismConfig(t *testing.T) {
	envCap, err := env.New(env.Config{Values: map[string]env.Value{"API_BASE": {Value: "https://api.example"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := extismRuntime(t, runtime.Options{Capabilities: []hostfuncs.Capability{envCap}})
	cfg := toolNamed(t, extismPlugin(t, rt, "v1", runtime.Limits{}), "v1_config")
	wantOK(t, callWith(t, cfg, `{"key":"API_BASE"}`, runtime.CallRequest{Grants: tool.Capabilities{Env: []string{"API_BASE"}}}), "true https://api.example")
	// Not granted: absent to the plugin, which here does not fail.
	wantOK(t, call(t, cfg, `{"key":"API_BASE"}`), "false ")
}

// TestExtismToolConfig: a tool's own config (tools.grants.<tool>.config)
// answers config_get for any key, as the plugin's author spelled it, and
// only for the call it is given to.
func TestExtismToolConfig(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	cfg := toolNamed(t, extismPlugin(t, rt, "v1", runtime.Limits{}), "v1_config")
	t.Setenv("WARDEN_TEST_BRAVE_KEY", "brave-secret")
	own := runtime.CallRequest{Config: map[string]hostfuncs.SecretValue{
		"api-key":  {FromEnv: "WARDEN_TEST_BRAVE_KEY"},
		"base-url": {Value: "https://api.search.brave.com"},
		"unset":    {FromEnv: "WARDEN_TEST_NOT_SET"},
	}}
	for key, want := range map[string]string{
		"api-key":  "true brave-secret",
		"base-url": "true https://api.search.brave.com",
		"BASE-URL": "true https://api.search.brave.com", // config.yaml keys are lower-cased
		"unset":    "false ",
		"other":    "false ",
	} {
		wantOK(t, callWith(t, cfg, `{"key":"`+key+`"}`, own), want)
	}
	// Another call (another tool's, or none) does not see it.
	wantOK(t, call(t, cfg, `{"key":"api-key"}`), "false ")
}

func TestExtismIsolation(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	for _, c := range []struct {
		isolation runtime.Isolation
		session   string
		want      []string
	}{
		{runtime.IsolationCall, "", []string{"global=1 var=1", "global=1 var=1", "global=1 var=1"}},
		{runtime.IsolationShared, "", []string{"global=1 var=1", "global=2 var=2", "global=3 var=3"}},
		{runtime.IsolationSession, "s1", []string{"global=1 var=1", "global=2 var=2", "global=3 var=3"}},
	} {
		t.Run(string(c.isolation), func(t *testing.T) {
			state := toolNamed(t, extismPlugin(t, rt, "v1", runtime.Limits{Isolation: c.isolation, MaxInstances: 1}), "v1_state")
			for _, want := range c.want {
				wantOK(t, callWith(t, state, `{}`, runtime.CallRequest{Session: c.session}), want)
			}
		})
	}
}

func TestExtismLoad(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	load := func(wasm []byte) (*runtime.Module, error) {
		m, err := rt.Load(context.Background(), "wat", wasm, runtime.Limits{})
		if err == nil {
			t.Cleanup(func() { m.Close(context.Background()) })
		}
		return m, err
	}
	// Descriptor checks as for native tools: a bad tool is rejected alone.
	m, err := load(extismWAT(t, descOf("good", "bad name"), `{"content":[{"type":"text","text":"hi"}]}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Tools()) != 1 || len(m.Rejected()) != 1 || m.Rejected()[0].Name != "bad name" {
		t.Fatalf("tools %v, rejected %v", m.Tools(), m.Rejected())
	}
	wantOK(t, call(t, m.Tools()[0], `{}`), "hi")

	for _, c := range []struct {
		wasm []byte
		want string
	}{
		{extismWAT(t, descOf("x"), "", `(import "extism:host/user" "create_message" (func (param i64) (result i64)))`),
			"imports extism:host/user.create_message, which this host does not provide"},
		{extismWAT(t, `{"tools":[]}`, "", ""), "descriptor lists no tools"},
		{extismWAT(t, `not json`, "", ""), "descriptor is not valid JSON"},
		{testwasm.WATString(t, `(module (import "extism:host/env" "alloc" (func (param i64) (result i64))) (memory (export "memory") 1))`),
			"exports neither describe and call (v1) nor list_tools and call_tool"},
	} {
		if _, err := load(c.wasm); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("load error %v, want %q", err, c.want)
		}
	}

	// Tools are exposed under their own names; a name another module
	// also describes is refused like a native one: neither is pinned, so
	// neither module serves it.
	reg := catalog.NewTable()
	a, _ := load(extismWAT(t, descOf("same", "only_a"), `{"content":[]}`, ""))
	b, err := rt.Load(context.Background(), "other", extismWAT(t, descOf("same", "only_b"), `{"content":[]}`, ""), runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	reg.Put(a, false)
	if _, refused := reg.Put(b, false); len(refused) != 2 || refused[0].Tool != "same" || refused[1].Tool != "same" {
		t.Fatalf("refused = %v", refused)
	}
	if _, ok := reg.Tool("same"); ok {
		t.Fatal("a name two unpinned modules describe is served")
	}
	if tl, ok := reg.Tool("only_b"); !ok || tl.Module() != b {
		t.Fatal("only_b not registered")
	}
}

// TestExtismToolsDir: a plugin dropped into the tools directory loads
// through the ordinary path (ModuleFiles, LoadFile), unchanged.
func TestExtismToolsDir(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "testdata/extism/v2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hyper.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := runtime.ModuleFiles(dir)
	if err != nil || len(files) != 1 {
		t.Fatalf("module files %v, %v", files, err)
	}
	rt := extismRuntime(t, runtime.Options{CacheDir: t.TempDir()})
	m, err := rt.LoadFile(context.Background(), files[0], runtime.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	if m.Name() != "hyper" {
		t.Fatalf("name = %q", m.Name())
	}
	wantOK(t, call(t, toolNamed(t, m, "v2_upper"), `{"text":"dir"}`), "DIR")
}

// TestExtismSDKOnWazero112: the SDK's go.mod asks for wazero v1.9; the
// build resolves v1.12, the version warden's own runtime uses, and the
// other Extism tests run the SDK on it. This one pins the versions they ran
// with, so that a dependency change that alters the pairing is noticed.
func TestExtismSDKOnWazero112(t *testing.T) {
	cmd := exec.Command(filepath.Join(goruntime.GOROOT(), "bin", "go"), "list", "-m", "-f", "{{.Path}} {{.Version}}",
		"github.com/tetratelabs/wazero", "github.com/extism/go-sdk")
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "github.com/tetratelabs/wazero v1.12.0\ngithub.com/extism/go-sdk v1.7.1"; got != want {
		t.Fatalf("go list -m:\n%s\nwant\n%s", got, want)
	}
}

// TestExtismDiscard: a trap discards the instance (its state is gone), a
// failure the plugin reports does not.
func TestExtismDiscard(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	m := extismPlugin(t, rt, "v1", runtime.Limits{Isolation: runtime.IsolationShared, MaxInstances: 1})
	state := toolNamed(t, m, "v1_state")
	wantOK(t, call(t, state, `{}`), "global=1 var=1")
	wantKind(t, call(t, toolNamed(t, m, "v1_fail"), `{"how":"error_set"}`), tool.KindFailed)
	wantOK(t, call(t, state, `{}`), "global=2 var=2")
	wantKind(t, call(t, toolNamed(t, m, "v1_trap"), `{}`), tool.KindTrapped)
	wantOK(t, call(t, state, `{}`), "global=1 var=1")
}

// TestExtismConcurrentCalls: concurrent calls share a bounded pool of
// plugin instances, each call with its own answer.
func TestExtismConcurrentCalls(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	upper := toolNamed(t, extismPlugin(t, rt, "v2", runtime.Limits{MaxInstances: 3}), "v2_upper")
	const workers, calls = 8, 5
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range calls {
				text := fmt.Sprintf("w%d-c%d", w, i)
				res := upper.Call(context.Background(), runtime.CallRequest{Arguments: json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))})
				if res.IsError || res.Content[0].Text != strings.ToUpper(text) {
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

// TestExtismStartSection: a plugin's start function runs under the meter,
// like a native module's: a loop there ends the load as out of fuel, not as
// an unmetered spin or a bare unreachable; one that only initializes runs
// before the plugin's code, in every fresh instance.
func TestExtismStartSection(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	looping := extismWAT(t, descOf("spin"), `{"content":[{"type":"text","text":"never"}]}`,
		`(func $spin (loop $l (br $l))) (start $spin)`)
	_, err := rt.Load(context.Background(), "startloop", looping, runtime.Limits{Fuel: 10_000_000})
	// The kernel's alloc, store_u8 and output_set are imported first.
	if want := "start function (func 3): ran out of fuel (budget 10000000)"; err == nil || err.Error() != want {
		t.Fatalf("load error = %v, want %q", err, want)
	}
	// A start function asleep in WASI ends with the load budget, and says so.
	sleeping := extismWAT(t, descOf("sleepy"), `{"content":[{"type":"text","text":"never"}]}`,
		pollImport+` (func $sleep `+sleepHour+`) (start $sleep)`)
	_, err = rt.Load(callerGuard(t), "startsleep", sleeping, runtime.Limits{LoadBudget: shortTimeout})
	if want := "start function (func 4): did not finish within the load budget of 300ms"; err == nil || err.Error() != want {
		t.Fatalf("load error = %v, want %q", err, want)
	}

	// The start function writes the output's first byte: "Xi" becomes "hi"
	// only if it ran before the call, in a fresh instance too.
	started := extismWAT(t, descOf("started"), `{"content":[{"type":"text","text":"Xi"}]}`,
		`(func $st (i32.store8 (i32.const 32803) (i32.const 104))) (start $st)`)
	m, err := rt.Load(context.Background(), "started", started, runtime.Limits{Isolation: runtime.IsolationCall})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		wantOK(t, call(t, toolNamed(t, m, "started"), `{}`), "hi")
	}
}
