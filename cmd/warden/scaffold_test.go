package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/internal/pgtest"
)

var realBinary struct {
	once sync.Once
	path string
	err  error
}

// wardenBinary builds this command once, for tests of what only the real
// process shows: stderr and exit codes.
func wardenBinary(t testing.TB) string {
	t.Helper()
	realBinary.once.Do(func() {
		dir, err := os.MkdirTemp("", "warden-cmd-test")
		if err != nil {
			realBinary.err = err
			return
		}
		realBinary.path = filepath.Join(dir, "warden")
		if out, err := exec.Command("go", "build", "-o", realBinary.path, ".").CombinedOutput(); err != nil {
			realBinary.err = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if realBinary.err != nil {
		t.Fatal(realBinary.err)
	}
	return realBinary.path
}

// runIn runs the real binary in dir with a clean WARDEN_CONFIG.
func runIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(wardenBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WARDEN_CONFIG=")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func TestServeWithoutConfig(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runIn(t, dir, nil, "serve")
	var looked []string
	for d := dir; ; d = filepath.Dir(d) {
		looked = append(looked, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	want := `warden: no config.yaml in ` + dir + ` or any parent folder
  looked for: --config (not given), $WARDEN_CONFIG (not set), config.yaml in ` + strings.Join(looked, ", ") + `
  create a project with warden new NAME, or point warden at a config with --config PATH or WARDEN_CONFIG=PATH
  for an MCP client, warden mcp-config claude|vscode|cursor --config PATH prints a snippet that does
  to serve with no config anyway (the defaults, tools from ./bin/tools): warden serve --allow-empty
`
	if code != exitUsage || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr, exitUsage, want)
	}
}

func TestServeRefusesAnotherProgramsConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("database:\n  url: postgres://x\nport: 5432\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runIn(t, dir, nil, "serve")
	want := `warden: ` + filepath.Join(dir, "config.yaml") + ` does not look like a warden config
  its top-level keys: database, port
  warden's top-level keys: project, tools, security, server, lsp, net, env, secrets, memory, tasks, log, access, approvals
  point warden at its config with --config PATH or WARDEN_CONFIG=PATH
`
	if code != exitUsage || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr, exitUsage, want)
	}
}

// TestServeAllowEmpty: with --allow-empty and no config, serve starts; an
// empty stdin ends the session and it exits cleanly.
func TestServeAllowEmpty(t *testing.T) {
	_, stderr, code := runIn(t, t.TempDir(), nil, "serve", "--allow-empty")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestMCPConfigCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("tools:\n  dir: .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A symlinked binary is named by its target.
	link := filepath.Join(t.TempDir(), "warden-link")
	if err := os.Symlink(wardenBinary(t), link); err != nil {
		t.Fatal(err)
	}
	exe, err := filepath.EvalSymlinks(wardenBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "mcp-config", "cursor", "--name", "mytools")
	cmd.Dir = dir // ./config.yaml is the config in force
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "WARDEN_CONFIG=", "HOME="+home)
	var where strings.Builder
	cmd.Stderr = &where
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	// Where the snippet goes, on stderr: this OS's files (the rules of
	// every OS are tested in internal/scaffold).
	if runtime.GOOS == "linux" {
		wantWhere := "Merge it into the client's file (create it with this content if there is none):\n" +
			"  Cursor, for every project:    " + home + "/.cursor/mcp.json\n" +
			"  Cursor, in a project:         .cursor/mcp.json\n"
		if where.String() != wantWhere {
			t.Errorf("stderr:\n%s\nwant:\n%s", where.String(), wantWhere)
		}
	}
	want := `{
  "mcpServers": {
    "mytools": {
      "command": "` + exe + `",
      "args": [
        "serve",
        "--config",
        "` + cfg + `"
      ]
    }
  }
}
`
	if string(out) != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}

	_, stderr, code := runIn(t, t.TempDir(), nil, "mcp-config", "claude")
	if code != exitUsage || !strings.HasPrefix(stderr, "warden: no config.yaml in ") {
		t.Fatalf("without a config: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestNewCommand(t *testing.T) {
	parent := t.TempDir()
	out, err := run(t, "", "new", "wc", "--lang", "wat", "--dir", parent)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "Created "+filepath.Join(parent, "wc")+": a WebAssembly text tool named wc.\n\nNext:\n  cd "+filepath.Join(parent, "wc")+"\n") {
		t.Fatalf("output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(parent, "wc", "wc.wat")); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "", "new", "wc", "--lang", "wat", "--dir", parent)
	if err == nil || err.Error() != filepath.Join(parent, "wc")+" already exists and is not empty: choose another name or --dir" {
		t.Fatalf("second new: %v", err)
	}
}

// TestNewLanguageNames: --lang takes any case and the usual other names of
// a language, and the real binary says which language it wrote, with the
// right article; an unknown one exits with usage and names the choices.
func TestNewLanguageNames(t *testing.T) {
	parent := t.TempDir()
	for _, c := range []struct{ lang, want, file string }{
		{"AS", "an AssemblyScript tool", "assembly/index.ts"},
		{"ts", "an AssemblyScript tool", "assembly/index.ts"},
		{"Golang", "a Go tool", "main.go"},
		{"GO", "a Go tool", "main.go"},
		{"c", "a C tool", "t.c"},
		{"Wat", "a WebAssembly text tool", "t.wat"},
	} {
		dir := filepath.Join(parent, c.lang)
		stdout, stderr, code := runIn(t, parent, nil, "new", "t", "--lang", c.lang, "--dir", dir)
		abs := filepath.Join(dir, "t")
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "Created "+abs+": "+c.want+" named t.\n") {
			t.Errorf("--lang %s: exit %d, stderr %q, stdout:\n%s", c.lang, code, stderr, stdout)
		}
		if _, err := os.Stat(filepath.Join(abs, c.file)); err != nil {
			t.Errorf("--lang %s: %v", c.lang, err)
		}
	}
	_, stderr, code := runIn(t, parent, nil, "new", "t", "--lang", "rust")
	if want := "warden: unknown language \"rust\": want one of go, c, assemblyscript, wat (or golang, as, ts)\n"; code != exitUsage || stderr != want {
		t.Errorf("--lang rust: exit %d, stderr:\n%s\nwant exit %d, stderr:\n%s", code, stderr, exitUsage, want)
	}
}

// pg is the PostgreSQL server of this test binary (pgtest), started by
// the first test that asks for a database.
var pg *pgtest.Server

func TestMain(m *testing.M) {
	pg = pgtest.New()
	code := m.Run()
	pg.Stop()
	if realBinary.path != "" {
		os.RemoveAll(filepath.Dir(realBinary.path))
	}
	os.Exit(code)
}
