package fs

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

type nopObserver struct{}

func (nopObserver) Progress(tool.Progress) {}
func (nopObserver) Log(slog.Level, string) {}

// secret marks the content of every file a tool must never see.
const secret = "SECRET-d3adb33f"

// env is a fake machine: a home directory (reached through a symlink, as
// HOME sometimes is), a project root inside it, an extra root, and secrets
// in all the usual places.
type env struct {
	tmp, home, homeLink, proj, notes string
	fs                               *FS
}

func newEnv(t testing.TB) *env {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{tmp: tmp, home: filepath.Join(tmp, "home"), homeLink: filepath.Join(tmp, "homelink")}
	e.proj = filepath.Join(e.home, "proj")
	e.notes = filepath.Join(tmp, "notes")
	files := map[string]string{
		"home/.ssh/id_ed25519":          secret,
		"home/.aws/credentials":         secret,
		"home/.bash_history":            secret,
		"home/.config/gh/hosts.yml":     secret,
		"home/.netrc":                   secret,
		"home/public.txt":               "public\n",
		"home/proj/src/a.go":            "package a\n\nfunc A() {}\n",
		"home/proj/src/b.go":            "package a\n\nfunc B() { A() }\n",
		"home/proj/src/deep/c.go":       "package deep\n",
		"home/proj/src/ID_RSA":          secret,
		"home/proj/src/.ENV":            secret,
		"home/proj/src/conf/.env.local": secret,
		"home/proj/src/server.Pem":      secret,
		"home/proj/docs/a.md":           "# docs\nline 2\nline 3\n",
		"home/proj/config/.env":         secret,
		"home/proj/config/app.yaml":     "name: app\n",
		"home/proj/out/keep.txt":        "keep\n",
		"home/proj/private/p.txt":       secret,
		"notes/todo.md":                 "- [ ] one\n- [ ] two\n",
		"notes/.env":                    secret,
	}
	for name, content := range files {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"homelink":                e.home,
		"home/proj/src/escape":    "../../.ssh/id_ed25519", // out of the root
		"home/proj/src/abs":       filepath.Join(e.home, "public.txt"),
		"home/proj/src/toenv":     "../config/.env", // inside the root, deny-listed
		"home/proj/src/todocs":    "../docs/a.md",   // inside the root, not granted
		"home/proj/src/docsdir":   "../docs",
		"home/proj/src/dangling":  "../docs/new.md", // creating it would write docs/
		"home/proj/out/linkedsrc": "../src",
		"home/proj/src/homedir":   "../..",
		"home/proj/docs/rooted":   filepath.Join(e.proj, "src"), // absolute, inside the root
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(tmp, name)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Config{
		ProjectRoot: e.proj,
		Roots:       map[string]string{"notes": e.notes},
		Deny:        []string{"private/**"},
		Home:        e.homeLink,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.fs = c
	return e
}

func call(name string, read, write []string) *hostfuncs.Call {
	return &hostfuncs.Call{
		Tool:     name,
		Grants:   tool.Capabilities{FS: tool.FSAccess{Read: read, Write: write}},
		Observer: nopObserver{},
	}
}

// serve runs one request and returns the reply as the guest would see it.
func (e *env) serve(t *testing.T, c *hostfuncs.Call, req string) (string, error) {
	t.Helper()
	res, err := e.fs.Serve(context.Background(), c, []byte(req))
	if err != nil {
		return "", err
	}
	out, merr := json.Marshal(res)
	if merr != nil {
		t.Fatalf("marshal reply: %v", merr)
	}
	return string(out), nil
}

func (e *env) ok(t *testing.T, c *hostfuncs.Call, req string, into any) string {
	t.Helper()
	out, err := e.serve(t, c, req)
	if err != nil {
		t.Fatalf("%s: %v", req, err)
	}
	if into != nil {
		if err := json.Unmarshal([]byte(out), into); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func (e *env) fail(t *testing.T, c *hostfuncs.Call, req string, kind tool.Kind) string {
	t.Helper()
	out, err := e.serve(t, c, req)
	if err == nil {
		t.Fatalf("%s: want %s error, got reply %s", req, kind, out)
	}
	var te *tool.Error
	if !asToolError(err, &te) || te.Kind != kind {
		t.Fatalf("%s: want kind %s, got %v (%T)", req, kind, err, err)
	}
	// The message may repeat the guest's own path, nothing else of the host.
	var r struct{ Path, Pattern string }
	json.Unmarshal([]byte(req), &r)
	msg := te.Message
	for _, p := range []string{r.Path, r.Pattern} {
		if p != "" {
			msg = strings.ReplaceAll(msg, p, "<path>")
		}
	}
	e.noLeak(t, req, msg)
	return te.Message
}

// noLeak asserts that s holds no secret content and no host path.
func (e *env) noLeak(t testing.TB, what, s string) {
	t.Helper()
	if strings.Contains(s, secret) {
		t.Fatalf("%s: secret content leaked: %s", what, s)
	}
	if strings.Contains(s, e.tmp) {
		t.Fatalf("%s: host path leaked: %s", what, s)
	}
}

func asToolError(err error, te **tool.Error) bool {
	e, ok := err.(*tool.Error)
	*te = e
	return ok
}
