package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeWithoutHome starts `warden serve` the way an init system or
// `env -i` does, with PATH alone in its environment: no $HOME. warden takes
// the home from the user database and serves, and a deny rule under ~ still
// denies: a file the tool is granted (the project root is inside the home)
// is refused because the rule matches it, while its neighbour is read.
func TestServeWithoutHome(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("a service without a home variable is tested on Unix")
	}
	u, err := user.Current()
	if err != nil || !filepath.IsAbs(u.HomeDir) || u.HomeDir == "/" {
		t.Skipf("the user database has no usable home for this user (%v): nothing to fall back to", err)
	}
	project, err := os.MkdirTemp(u.HomeDir, ".warden-e2e-nohome-")
	if err != nil {
		t.Skipf("cannot make a project inside the home %s: %v", u.HomeDir, err)
	}
	t.Cleanup(func() { os.RemoveAll(project) })
	rel, err := filepath.Rel(u.HomeDir, project)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"secret.txt": "hunter2", "notes.txt": "milk"} {
		if err := os.WriteFile(filepath.Join(project, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, "", "hostcalls")
	rule := "~/" + filepath.ToSlash(rel) + "/secret.txt"
	cfg := fmt.Sprintf("project:\n  root: %s\ntools:\n  dir: %s\n  cache_dir: %s\n  grants:\n    hostcalls:\n      fs: {read: [.]}\nsecurity:\n  deny: [%q]\nlog:\n  level: info\n",
		project, e.tools, built.cacheDir, rule)
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	stderr := &logBuffer{}
	dumpOnFailure(t, "warden serve (stdio, env -i)", stderr)
	cmd := exec.Command(built.warden, "serve", "--config", e.config)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to warden serve started without $HOME: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("warden serve did not exit cleanly after stdin closed: %v", err)
		}
	})
	waitLoaded(t, cs)

	read := func(path string) (result json.RawMessage, errMsg string) {
		t.Helper()
		res := call(t, cs, "hostcalls", map[string]any{"fs": map[string]any{"op": "read", "path": path}})
		var out struct {
			FS struct {
				Result json.RawMessage
				Error  *struct{ Kind, Message string }
			}
		}
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("read %s: %v: %s", path, err, dump(res))
		}
		if out.FS.Error != nil {
			return nil, out.FS.Error.Kind + ": " + out.FS.Error.Message
		}
		return out.FS.Result, ""
	}
	if got, msg := read("notes.txt"); msg != "" || !json.Valid(got) || !containsJSONString(got, "milk") {
		t.Fatalf("read notes.txt (granted, no rule): %s, %s", got, msg)
	}
	want := fmt.Sprintf(`denied: read "secret.txt": matches deny rule %q (security.deny); deny rules always win over grants and also apply to the real path behind symlinks`, rule)
	if got, msg := read("secret.txt"); msg != want {
		t.Fatalf("read secret.txt under the ~ rule:\n got %s, %q\nwant %q", got, msg, want)
	}
}

// containsJSONString reports whether the JSON value v holds the string s
// anywhere (as a string value).
func containsJSONString(v json.RawMessage, s string) bool {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(x any) bool {
		switch x := x.(type) {
		case string:
			return x == s
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(x)
}
