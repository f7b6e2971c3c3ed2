package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A tool granted the whole project root (fs.read and fs.write ".") in the
// default layout, where config.yaml, the tools dir and the memory store live
// under the project root, tries to rewrite its own policy: grant itself
// more in config.yaml (hot-reloaded), drop a module into the tools dir
// (hot-loaded), rewrite the audit log or the memory store's lock, read
// config.yaml's secrets, and read WARDEN_SERVER_TOKEN through env. Each is
// refused naming the path as warden's own, nothing changes on disk, no
// reload happens, and the session serves on.
func TestToolCannotRewriteWardensOwnFiles(t *testing.T) {
	e := newEnv(t, "", "hostcalls", "echo")
	audit := filepath.Join(e.dir, "audit.log")
	cfg := `# the tool may write the whole project
project:
  root: ` + e.dir + `
tools:
  dir: ` + e.tools + `
  cache_dir: ` + built.cacheDir + `
  grants:
    hostcalls:
      fs: {read: ["."], write: ["."]}
    echo: {}
server:
  token: secret-token-never-read
log:
  level: info
  audit: ` + audit + `
`
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, stderr := stdioServer(t, e, "2025-11-25", nil)
	wantEcho(t, cs, "before")

	before := snapshot(t, e.config, e.tools)
	type attempt struct {
		req  map[string]any
		want string
	}
	const never = "; no grant can allow a tool to read or write it"
	attempts := []attempt{
		{map[string]any{"op": "write", "path": "config.yaml", "content": "tools: {grants: {hostcalls: {net: ['*']}}}"},
			`write "config.yaml": warden's own config file` + never},
		{map[string]any{"op": "append", "path": e.config, "content": "\n# more"},
			`append "` + e.config + `": warden's own config file` + never},
		{map[string]any{"op": "read", "path": "config.yaml"},
			`read "config.yaml": warden's own config file` + never},
		{map[string]any{"op": "write", "path": "tools/evil.wasm", "encoding": "base64", "content": "AGFzbQEAAAA="},
			`write "tools/evil.wasm": warden's own tools dir` + never},
		{map[string]any{"op": "write", "path": "tools/echo.wasm", "content": "x"},
			`write "tools/echo.wasm": warden's own tools dir` + never},
		{map[string]any{"op": "read", "path": "tools/echo.wasm"},
			`read "tools/echo.wasm": warden's own tools dir` + never},
		{map[string]any{"op": "remove", "path": "tools", "recursive": true},
			`remove "tools": warden's own tools dir` + never},
		{map[string]any{"op": "write", "path": ".warden-edit-1.tmp", "content": "x"},
			`write ".warden-edit-1.tmp": warden's own config file (an edit being saved)` + never},
		{map[string]any{"op": "write", "path": "audit.log", "content": "{}"},
			`write "audit.log": warden's own audit log` + never},
		{map[string]any{"op": "write", "path": ".warden/memories.lock", "content": "x"},
			`write ".warden/memories.lock": warden's own memory store lock file` + never},
	}
	for _, a := range attempts {
		res := call(t, cs, "hostcalls", map[string]any{"fs": a.req, "env": map[string]any{"op": "get", "key": "WARDEN_SERVER_TOKEN"}})
		var out struct {
			FS, Env struct {
				Error *struct{ Kind, Message string }
			}
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if res.IsError || json.Unmarshal(raw, &out) != nil {
			t.Fatalf("%v: %s", a.req, dump(res))
		}
		if out.FS.Error == nil || out.FS.Error.Kind != "denied" || out.FS.Error.Message != a.want {
			t.Errorf("%v:\n got %+v\nwant denied %q", a.req, out.FS.Error, a.want)
		}
		wantEnv := `env: key "WARDEN_SERVER_TOKEN" is warden's own configuration (WARDEN_*); no grant can give it to tool "hostcalls"`
		if out.Env.Error == nil || out.Env.Error.Kind != "denied" || out.Env.Error.Message != wantEnv {
			t.Errorf("env WARDEN_SERVER_TOKEN:\n got %+v\nwant denied %q", out.Env.Error, wantEnv)
		}
		if strings.Contains(string(raw), "secret-token-never-read") {
			t.Fatalf("the token reached the tool: %s", raw)
		}
	}
	// A listing of the root omits warden's own files like any denied one.
	res := hostcallsFS(t, call(t, cs, "hostcalls", hostcallsArgs(map[string]any{"op": "list", "path": "."})))
	if res.FS.Error != nil || strings.Contains(string(res.FS.Result), "config.yaml") || strings.Contains(string(res.FS.Result), `"tools"`) {
		t.Fatalf("list .: %+v %s", res.FS.Error, res.FS.Result)
	}
	if after := snapshot(t, e.config, e.tools); after != before {
		t.Fatalf("warden's own files changed:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".warden", "memories.lock")); err == nil {
		t.Fatal("the memory store's lock file was written")
	}
	// The session still serves, and nothing was reloaded.
	wantEcho(t, cs, "after")
	if got := toolNames(t, cs); strings.Join(got, ",") != "echo,hostcalls" {
		t.Fatalf("tools after the attempts: %v", got)
	}
	if l := stderr.lines("config reloaded"); len(l) > 0 {
		t.Fatalf("config was reloaded: %q", l)
	}
	if l := stderr.lines("secret-token-never-read"); len(l) > 0 {
		t.Fatalf("the token was logged: %q", l)
	}

	// The owner cannot grant a WARDEN_* key either: `warden grant` refuses
	// and writes nothing.
	cmd := exec.Command(built.warden, "grant", "hostcalls", "env=WARDEN_SERVER_TOKEN", "--config", e.config)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `"WARDEN_SERVER_TOKEN" is warden's own configuration`) {
		t.Fatalf("warden grant env=WARDEN_SERVER_TOKEN: %v\n%s", err, out)
	}
	if after := snapshot(t, e.config, e.tools); after != before {
		t.Fatal("warden grant wrote config.yaml")
	}

	// Nor an fs grant of warden's own file: it would give nothing.
	cmd = exec.Command(built.warden, "grant", "hostcalls", "fs.write=tools/evil.wasm", "--config", e.config)
	cmd.Env = childEnv()
	out, err = cmd.CombinedOutput()
	if want := `tools.grants.hostcalls.fs.write: grant fs.write "tools/evil.wasm": warden's own tools dir` + never; err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("warden grant fs.write=tools/evil.wasm: %v\n%s\nwant %q", err, out, want)
	}
	if after := snapshot(t, e.config, e.tools); after != before {
		t.Fatal("warden grant wrote config.yaml")
	}

	// An edit of config.yaml that grants one is refused at reload, naming
	// the key, and the previous config stays in force.
	bad := strings.Replace(cfg, `fs: {read: ["."], write: ["."]}`,
		"fs: {read: [\".\"], write: [\".\"]}\n      env: [warden_server_token]", 1) +
		"env:\n  values:\n    warden_server_token: {from_env: WARDEN_SERVER_TOKEN}\n"
	if err := os.WriteFile(e.config, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the edit refused", func() bool {
		return len(stderr.lines("config change refused", `tools.grants.hostcalls.env: \"warden_server_token\" is warden's own configuration`)) > 0
	})
	for _, want := range []string{`env.values.warden_server_token: a WARDEN_* key is warden's own configuration`} {
		if len(stderr.lines("config change refused", want)) == 0 {
			t.Errorf("the refusal does not say %q", want)
		}
	}
	wantEcho(t, cs, "still serving")
}

// snapshot is a digest of the config file's bytes and of every file of the
// tools dir, with their names, for comparison.
func snapshot(t *testing.T, config, tools string) string {
	t.Helper()
	b := sha256.New()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(data)
	entries, err := os.ReadDir(tools)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range entries {
		data, err := os.ReadFile(filepath.Join(tools, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(b, "\n%s %d\n", de.Name(), len(data))
		b.Write(data)
	}
	return hex.EncodeToString(b.Sum(nil))
}
