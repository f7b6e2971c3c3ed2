package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/tool"
)

// escapeWorld is a project next to a fake home, with a secret in every
// place a tool must not reach, and the hostcalls guest installed.
type escapeWorld struct {
	root, project, home, secret string
	app                         *App
	cfgPath                     string
	logs                        *syncBuffer
}

func newEscapeWorld(t *testing.T) *escapeWorld {
	t.Helper()
	guest := testwasm.BuildGoFile(t, "../../runtime/testdata/goguest/hostcalls")
	wasm, err := os.ReadFile(guest)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 12)
	rand.Read(b)
	w := &escapeWorld{root: t.TempDir(), secret: "s3cret-" + hex.EncodeToString(b), logs: &syncBuffer{}}
	w.project = filepath.Join(w.root, "project")
	w.home = filepath.Join(w.root, "home")
	files := map[string]string{
		"home/.ssh/id_rsa":          w.secret,
		"home/notes.txt":            w.secret,
		"project/src/main.go":       "package main // visible\n",
		"project/docs/readme.md":    "docs-marker",
		"project/.env":              "TOKEN=" + w.secret + "\n",
		"project/.ENV":              "TOKEN=" + w.secret + "\n",
		"project/config/.env.local": w.secret,
		"project/keys/server.pem":   w.secret,
		"tools/hostcalls.wasm":      string(wasm),
	}
	for name, content := range files {
		p := filepath.Join(w.root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"project/src/up":       "../../home/.ssh/id_rsa",             // relative, out of the root
		"project/src/abs":      filepath.Join(w.home, ".ssh/id_rsa"), // absolute
		"project/src/dotenv":   "../.env",                            // inside the root, to a denied file
		"project/src/homedir":  "../../home",                         // a directory out of the root
		"project/src/innocent": "../keys/server.pem",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(w.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The deny-list resolves ~ from HOME; the build and compile caches were
	// located before this.
	t.Setenv("HOME", w.home)
	t.Setenv("WARDEN_ESCAPE_SECRET", w.secret)
	w.app, w.cfgPath = startApp(t, w.project, w.config(""), w.logs)
	if errs := w.app.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatal(errs)
	}
	return w
}

// config is the project's config.yaml with grants (YAML lines for
// tools.grants, "" for none).
func (w *escapeWorld) config(grants string) string {
	return fmt.Sprintf(`project:
  root: .
tools:
  dir: ../tools
  cache_dir: %s
  grants:
    other: {fs: {read: [.]}, env: [SECRET]}
%s
env:
  values:
    SECRET: {from_env: WARDEN_ESCAPE_SECRET}
    VISIBLE: {value: shown}
`, userCacheDir, grants)
}

func (w *escapeWorld) setGrants(t *testing.T, grants string) {
	t.Helper()
	if err := os.WriteFile(w.cfgPath, []byte(w.config(grants)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
}

// outcome is one capability's reply as the guest reports it.
type outcome struct {
	Result json.RawMessage `json:"result"`
	Error  *tool.Error     `json:"error"`
}

// hostcalls calls the guest with an fs and an env request and returns the
// replies it received, after checking the secret is nowhere in the result,
// its details, the guest's captured output or the log.
func (w *escapeWorld) hostcalls(t *testing.T, fsReq, envReq any) (fs, env outcome) {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"fs": fsReq, "env": envReq})
	res := call(t, w.app, "hostcalls", string(args))
	all, _ := json.Marshal(struct {
		*tool.Result
		Captured *tool.Captured
		Meta     map[string]any
	}{res, res.Captured, res.Meta})
	if strings.Contains(string(all), w.secret) {
		t.Fatalf("the secret leaked into the result: %s", all)
	}
	if strings.Contains(w.logs.String(), w.secret) {
		t.Fatalf("the secret leaked into the log")
	}
	if res.IsError {
		t.Fatalf("the guest failed: %+v", res.Error)
	}
	var out struct{ FS, Env outcome }
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatalf("structured content %s: %v", res.StructuredContent, err)
	}
	return out.FS, out.Env
}

func kindOf(o outcome) tool.Kind {
	if o.Error == nil {
		return ""
	}
	return o.Error.Kind
}

func TestEscape(t *testing.T) {
	w := newEscapeWorld(t)
	read := func(p string) map[string]any { return map[string]any{"op": "read", "path": p} }
	getEnv := func(key string) map[string]any { return map[string]any{"op": "get", "key": key} }
	homeSecret := filepath.Join(w.home, ".ssh/id_rsa")
	depth := strings.Count(w.project, "/")
	const srcOnly = "    hostcalls: {fs: {read: [src]}, env: [VISIBLE]}"
	const all = "    hostcalls: {fs: {read: [.], write: [.]}, env: [VISIBLE]}"

	cases := []struct {
		name   string
		grants string
		fs     map[string]any
		want   tool.Kind
	}{
		{"dot-dot out of a granted dir", srcOnly, read("src/../../home/.ssh/id_rsa"), tool.KindDenied},
		{"dot-dot chain to the filesystem root", all, read(strings.Repeat("../", depth+3) + strings.TrimPrefix(homeSecret, "/")), tool.KindDenied},
		{"dot-dot through a granted dir", all, read("src/../../project/../home/notes.txt"), tool.KindDenied},
		{"absolute path outside the root", all, read(homeSecret), tool.KindDenied},
		{"absolute path of a denied file in the root", all, read(filepath.Join(w.project, ".env")), tool.KindDenied},
		{"symlink out of the root (relative)", all, read("src/up"), tool.KindDenied},
		{"symlink out of the root (absolute)", all, read("src/abs"), tool.KindDenied},
		{"symlinked directory out of the root", all, read("src/homedir/notes.txt"), tool.KindDenied},
		{"symlink to .env in the root", all, read("src/dotenv"), tool.KindDenied},
		{"symlink to a *.pem in the root", all, read("src/innocent"), tool.KindDenied},
		{".env", all, read(".env"), tool.KindDenied},
		{".ENV (case variant)", all, read(".ENV"), tool.KindDenied},
		{".env.local", all, read("config/.env.local"), tool.KindDenied},
		{"/proc/self/environ", all, read("/proc/self/environ"), tool.KindDenied},
		{"/proc/self/root", all, read("/proc/self/root" + homeSecret), tool.KindDenied},
		{"/proc/self/cwd", all, read("/proc/self/cwd/.env"), tool.KindDenied},
		{"~ is not expanded", all, read("~/notes.txt"), tool.KindNotFound},
		{"NUL byte", all, read("src/main.go\x00../../home/.ssh/id_rsa"), tool.KindInvalidArguments},
		{"very long path", all, read("src/" + strings.Repeat("a/", 2100) + "x"), tool.KindInvalidArguments},
		{"very long component", all, read("src/" + strings.Repeat("a", 300)), tool.KindInvalidArguments},
		{"grant for src reading docs", srcOnly, read("docs/readme.md"), tool.KindDenied},
		{"grant for src listing the root", srcOnly, map[string]any{"op": "list", "path": "."}, tool.KindDenied},
		{"no grant at all", "", read("src/main.go"), tool.KindDenied},
		{"write over .env", all, map[string]any{"op": "write", "path": ".env", "content": "x"}, tool.KindDenied},
		{"write through a symlink out", all, map[string]any{"op": "write", "path": "src/up", "content": "x"}, tool.KindDenied},
		// Walkers leave denied entries out: no error, and no secret.
		{"search everything for the secret", all, map[string]any{"op": "search", "pattern": "s3cret-"}, ""},
		{"glob everything", all, map[string]any{"op": "glob", "pattern": "**"}, ""},
		{"list the root", all, map[string]any{"op": "list", "path": "."}, ""},
		{"read a granted file", srcOnly, read("src/main.go"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w.setGrants(t, c.grants)
			fs, env := w.hostcalls(t, c.fs, getEnv("VISIBLE"))
			if kindOf(fs) != c.want {
				t.Errorf("fs reply %s %+v, want kind %q", fs.Result, fs.Error, c.want)
			}
			if c.grants != "" && (env.Error != nil || !strings.Contains(string(env.Result), `"shown"`)) {
				t.Errorf("env reply %s %+v, want the granted value", env.Result, env.Error)
			}
			if c.grants == "" && kindOf(env) != tool.KindDenied {
				t.Errorf("env without a grant: %s %+v", env.Result, env.Error)
			}
			if c.want == "" {
				for _, hidden := range []string{".env", ".ENV", "server.pem", "id_rsa"} {
					if strings.Contains(string(fs.Result), hidden) {
						t.Errorf("%s listed: %s", hidden, fs.Result)
					}
				}
			}
			if c.name == "grant for src reading docs" && strings.Contains(fmt.Sprint(string(fs.Result), fs.Error), "docs-marker") {
				t.Errorf("denied read returned content: %+v", fs)
			}
			if c.name == "search everything for the secret" && !strings.Contains(string(fs.Result), `"matches":[]`) {
				t.Errorf("search found something: %s", fs.Result)
			}
			if c.name == "read a granted file" && !strings.Contains(string(fs.Result), "package main // visible") {
				t.Errorf("granted read: %s", fs.Result)
			}
		})
	}

	// env: only granted keys, never the host environment.
	w.setGrants(t, srcOnly)
	for _, key := range []string{"SECRET", "secret", "HOME", "WARDEN_ESCAPE_SECRET", "PATH"} {
		_, env := w.hostcalls(t, read("src/main.go"), getEnv(key))
		if kindOf(env) != tool.KindDenied {
			t.Errorf("env get %s: %s %+v, want denied", key, env.Result, env.Error)
		}
	}
	_, env := w.hostcalls(t, read("src/main.go"), map[string]any{"op": "list"})
	if env.Error != nil || string(env.Result) != `{"keys":["VISIBLE"]}` {
		t.Errorf("env list: %s %+v", env.Result, env.Error)
	}
}

// TestGrantAppliesWithoutRestart: with the config watched, a grant written
// by `warden grant` (config.EditFile) applies to the next call, and so does
// its revoke.
func TestGrantAppliesWithoutRestart(t *testing.T) {
	w := newEscapeWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.app.WatchConfig(ctx); err != nil {
		t.Fatal(err)
	}
	readMain := map[string]any{"op": "read", "path": "src/main.go"}
	getEnv := map[string]any{"op": "get", "key": "VISIBLE"}
	if fs, _ := w.hostcalls(t, readMain, getEnv); kindOf(fs) != tool.KindDenied {
		t.Fatalf("before the grant: %s %+v", fs.Result, fs.Error)
	}
	edit := func(f func(*config.Document) error) {
		t.Helper()
		if _, err := config.EditFile(w.cfgPath, f); err != nil {
			t.Fatal(err)
		}
	}
	// waitFor calls until the fs reply has the wanted kind; the watcher
	// settles for 50ms before it reloads.
	waitFor := func(want tool.Kind) outcome {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			fs, _ := w.hostcalls(t, readMain, getEnv)
			if kindOf(fs) == want || time.Now().After(deadline) {
				return fs
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	edit(func(d *config.Document) error {
		return d.Grant("hostcalls", config.GrantChange{Key: "fs.read", Values: []string{"src"}})
	})
	if fs := waitFor(""); fs.Error != nil || !strings.Contains(string(fs.Result), "visible") {
		t.Fatalf("after the grant: %s %+v", fs.Result, fs.Error)
	}
	edit(func(d *config.Document) error {
		return d.Revoke("hostcalls", config.GrantChange{Key: "fs.read"})
	})
	if fs := waitFor(tool.KindDenied); kindOf(fs) != tool.KindDenied {
		t.Fatalf("after the revoke: %s %+v", fs.Result, fs.Error)
	}
	// An invalid edit by hand is refused; the grants in force stay.
	edit(func(d *config.Document) error {
		return d.Grant("hostcalls", config.GrantChange{Key: "fs.read", Values: []string{"src"}})
	})
	waitFor("")
	text, _ := os.ReadFile(w.cfgPath)
	os.WriteFile(w.cfgPath, append(text, []byte("log: {level: loud}\n")...), 0o644)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(w.logs.String(), "config change refused"); {
		if time.Now().After(deadline) {
			t.Fatal("the invalid config was not refused")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fs, _ := w.hostcalls(t, readMain, getEnv); fs.Error != nil {
		t.Fatalf("an invalid config dropped the grant: %+v", fs.Error)
	}
}
