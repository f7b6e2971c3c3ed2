// Package e2e holds end-to-end tests that run warden's bundled tools as
// wasm modules through internal/app (and, for process lifetime, through
// the warden binary), against real external processes.
//
// The LSP tests need gopls (PATH or ~/go/bin); without it they skip.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// lspTools are the bundled tools under test, all served by the one module
// lspModule (tools-wasm/lsp).
var lspTools = []string{"symbols", "definition", "references", "hover", "workspace_symbols"}

// lspModule is the module, and its tools-wasm folder, serving lspTools.
const lspModule = "lsp"

// goplsPath finds gopls, or skips the test.
func goplsPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "gopls")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("gopls not found in PATH or ~/go/bin")
	return ""
}

// Fixture sizes: chosen to pass the tools' exploring caps (symbols 200,
// references 100) so that overflow and paging are exercised.
const (
	manyFuncs = 230 // functions in many/many.go, plus Hot and Use
	hotUses   = 120 // calls of Hot in many/many.go
	moreUses  = 10  // calls of Hot in many/more.go
)

// writeProject builds the project the tools look at: the lsp capability's
// fixture module (shapes, secret, main.go) plus a generated package many/
// with more symbols and references than the exploring caps show.
func writeProject(t testing.TB, dir string) {
	t.Helper()
	src := filepath.Join("..", "hostfuncs", "lsp", "testdata", "fixture")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatalf("copy fixture: %v", err)
	}
	var many strings.Builder
	many.WriteString("// Package many has many symbols and references.\npackage many\n\n")
	many.WriteString("// Hot is called from everywhere.\nfunc Hot() int { return 1 }\n\n")
	for i := range manyFuncs {
		fmt.Fprintf(&many, "// F%d returns %d.\nfunc F%d() int { return %d }\n\n", i, i, i, i)
	}
	many.WriteString("// Use calls Hot many times.\nfunc Use() int {\n\tn := 0\n")
	for range hotUses {
		many.WriteString("\tn += Hot()\n")
	}
	many.WriteString("\treturn n\n}\n")
	var more strings.Builder
	more.WriteString("package many\n\n// More calls Hot too.\nfunc More() int {\n\treturn 0")
	for range moreUses {
		more.WriteString(" +\n\t\tHot()")
	}
	more.WriteString("\n}\n")
	for name, content := range map[string]string{
		"many/many.go": many.String(),
		"many/more.go": more.String(),
		// A secret the deny-list hides, next to files the tools may read.
		"shapes/.env": "TOKEN=hunter2\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// line returns the 1-based line of the n-th line of path (relative to the
// project) that contains needle, and the 1-based byte column of needle.
func findPos(t testing.TB, project, path, needle string, n int) (line, column int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(project, path))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if c := strings.Index(l, needle); c >= 0 {
			if n--; n == 0 {
				return i + 1, c + 1
			}
		}
	}
	t.Fatalf("%q not found %d times in %s", needle, n, path)
	return 0, 0
}

// env is a loaded warden: an App over a project with the LSP tools.
type env struct {
	app     *app.App
	project string
	config  string // config.yaml path
	tools   string // tools dir
}

// buildTools builds the named tools-wasm folders (cached by content) into
// a tools dir.
func buildTools(t testing.TB, dir string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		wasm, err := os.ReadFile(testwasm.BuildGoFile(t, filepath.Join("..", "tools-wasm", name)))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// grantsYAML grants every LSP tool lsp: [go] and read access to the
// project, except those named in withoutLSP, which get fs read only. Each
// entry is bound to lspModule, the module serving the five tools.
func grantsYAML(withoutLSP ...string) string {
	var b strings.Builder
	for _, name := range lspTools {
		lsp := "[go]"
		for _, w := range withoutLSP {
			if w == name {
				lsp = "[]"
			}
		}
		fmt.Fprintf(&b, "    %s:\n      module: %s\n      lsp: %s\n      fs:\n        read: [\".\"]\n", name, lspModule, lsp)
	}
	return b.String()
}

// newEnv writes a project, a tools dir and a config, and loads them. The
// "secret" directory is deny-listed by config, ".env" by the built-in list.
func newEnv(t testing.TB, grants string) *env {
	t.Helper()
	return newEnvWith(t, grants, "")
}

// newEnvWith is newEnv with more lsp.languages entries (YAML, indented
// under languages:).
func newEnvWith(t testing.TB, grants, languages string) *env {
	t.Helper()
	gopls := goplsPath(t)
	dir := t.TempDir()
	e := &env{project: filepath.Join(dir, "project"), tools: filepath.Join(dir, "tools"), config: filepath.Join(dir, "config.yaml")}
	writeProject(t, e.project)
	buildTools(t, e.tools, lspModule)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = dir
	}
	yaml := fmt.Sprintf(`project:
  root: %s
tools:
  dir: %s
  cache_dir: %s
  grants:
%ssecurity:
  deny: ["secret"]
lsp:
  languages:
    go:
      command: %s
%slog:
  level: warn
`, e.project, e.tools, filepath.Join(cache, "warden-test", "e2e-compile"), grants, gopls, languages)
	if err := os.WriteFile(e.config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.config)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx := context.Background()
	e.app, err = app.New(ctx, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.app.Close(context.Background()) })
	if errs := e.app.Catalog().LoadTools(ctx); len(errs) > 0 {
		t.Fatalf("load tools: %v", errs)
	}
	return e
}

// shared is one env for the tests that only query: gopls starts once.
var shared struct {
	once sync.Once
	env  *env
	tb   *detached
	skip string
}

// sharedEnv returns the env of the package's query tests. It outlives the
// test that first asks for it, so it is built on a detached testing.TB and
// closed by TestMain.
func sharedEnv(t *testing.T) *env {
	t.Helper()
	goplsPath(t)
	shared.once.Do(func() {
		tb := &detached{name: "shared-env"}
		shared.tb = tb
		func() {
			defer func() {
				if r := recover(); r != nil && r != errDetachedFail {
					panic(r)
				}
			}()
			shared.env = newEnv(tb, grantsYAML())
		}()
		if tb.failed {
			shared.skip = tb.msg
		}
	})
	if shared.env == nil {
		t.Fatalf("shared env: %s", shared.skip)
	}
	return shared.env
}

// call runs one tool call through the app, as the MCP server would.
func (e *env) call(t testing.TB, name string, args any, cursor string) *tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: name, Arguments: raw, Cursor: cursor, Observer: nopObserver{}})
	if err != nil {
		t.Fatalf("%s %s: %v", name, raw, err)
	}
	return res
}

// ok runs a call that must succeed and decodes its structured content.
func (e *env) ok(t testing.TB, name string, args any, cursor string, out any) *tool.Result {
	t.Helper()
	res := e.call(t, name, args, cursor)
	if res.IsError {
		t.Fatalf("%s %v: %v", name, args, res.Error)
	}
	if err := json.Unmarshal(res.StructuredContent, out); err != nil {
		t.Fatalf("%s: structured content %s: %v", name, res.StructuredContent, err)
	}
	return res
}

// fails runs a call that must fail with kind, its message containing want.
func (e *env) fails(t testing.TB, name string, args any, cursor string, kind tool.Kind, want string) {
	t.Helper()
	res := e.call(t, name, args, cursor)
	if !res.IsError || res.Error == nil {
		t.Fatalf("%s %v: want %s error, got %s", name, args, kind, res.StructuredContent)
	}
	if res.Error.Kind != kind || !strings.Contains(res.Error.Message, want) {
		t.Fatalf("%s %v: got %s %q, want %s containing %q", name, args, res.Error.Kind, res.Error.Message, kind, want)
	}
}

type nopObserver struct{}

func (nopObserver) Progress(tool.Progress) {}
func (nopObserver) Log(slog.Level, string) {}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.tb != nil {
		shared.tb.close() // closes the app, which stops gopls
	}
	os.Exit(code)
}

// detached is a testing.TB for fixtures shared by several tests: failures
// end the setup (with errDetachedFail) instead of a test, and cleanups run
// when TestMain says so. Only the methods the setup helpers use are
// implemented; the embedded nil TB makes any other one panic loudly.
type detached struct {
	testing.TB
	name     string
	failed   bool
	msg      string
	cleanups []func()
	dirs     []string
}

var errDetachedFail = fmt.Errorf("detached fixture failed")

func (d *detached) Helper()      {}
func (d *detached) Name() string { return d.name }
func (d *detached) Fatalf(format string, args ...any) {
	d.failed, d.msg = true, fmt.Sprintf(format, args...)
	panic(errDetachedFail)
}
func (d *detached) Fatal(args ...any) { d.Fatalf("%s", fmt.Sprint(args...)) }
func (d *detached) Skip(args ...any)  { d.Fatalf("skipped: %s", fmt.Sprint(args...)) }
func (d *detached) Cleanup(f func())  { d.cleanups = append(d.cleanups, f) }
func (d *detached) TempDir() string {
	dir, err := os.MkdirTemp("", "warden-e2e-")
	if err != nil {
		d.Fatalf("temp dir: %v", err)
	}
	d.dirs = append(d.dirs, dir)
	return dir
}

// close runs the cleanups, last first, and removes the temp dirs.
func (d *detached) close() {
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
	for _, dir := range d.dirs {
		os.RemoveAll(dir)
	}
}
