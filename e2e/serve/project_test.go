package serve

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wardenIn runs the real binary in dir with env added to childEnv (so no
// WARDEN_CONFIG of the test's own) and returns what it printed and its exit
// code.
func wardenIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(built.warden, args...)
	cmd.Dir = dir
	cmd.Env = childEnv(env...)
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

// projectEnv is a project whose config names its paths relative to
// itself (the tools dir, the project root by default), as warden new writes
// one, serving echo.
func projectEnv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	e, err := makeEnv(dir, "", "echo")
	if err != nil {
		t.Fatal(err)
	}
	cfg := "tools:\n  dir: tools\n  cache_dir: " + built.cacheDir + "\n  grants:\n    echo: {}\n"
	if err := os.WriteFile(e.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// parents lists dir and every directory above it, as the not-found
// message names them.
func parents(dir string) string {
	var out []string
	for d := dir; ; d = filepath.Dir(d) {
		out = append(out, d)
		if filepath.Dir(d) == d {
			return strings.Join(out, ", ")
		}
	}
}

// TestProjectFromSubfolder: tools and call run in a subfolder of a project
// find its config.yaml as git finds .git, and behave exactly as at its root:
// the config's relative paths resolve against the config's folder.
func TestProjectFromSubfolder(t *testing.T) {
	dir := projectEnv(t)
	sub := filepath.Join(dir, "src", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	atRoot, stderr, code := wardenIn(t, dir, nil, "tools")
	if code != 0 || !strings.Contains(atRoot, "echo") {
		t.Fatalf("tools at the root: exit %d\n%s%s", code, atRoot, stderr)
	}
	below, stderr, code := wardenIn(t, sub, nil, "tools")
	if code != 0 || below != atRoot {
		t.Fatalf("tools in a subfolder: exit %d\n%s%s\nwant, as at the root:\n%s", code, below, stderr, atRoot)
	}
	out, stderr, code := wardenIn(t, sub, nil, "call", "echo", `{"text":"from below"}`)
	if code != 0 || !strings.Contains(out, "from below") {
		t.Fatalf("call in a subfolder: exit %d\n%s%s", code, out, stderr)
	}
}

// TestNoProject: outside any project, the commands that need one fail with
// where they looked (every folder up to the root) and how to give one,
// instead of an empty table and exit 0; one that works without a project
// says it runs on the defaults.
func TestNoProject(t *testing.T) {
	elsewhere := t.TempDir()
	want := "warden: no config.yaml in " + elsewhere + " or any parent folder\n" +
		"  looked for: --config (not given), $WARDEN_CONFIG (not set), config.yaml in " + parents(elsewhere) + "\n" +
		"  create a project with warden new NAME, or point warden at a config with --config PATH or WARDEN_CONFIG=PATH\n"
	for _, args := range [][]string{
		{"tools"},
		{"call", "echo", `{"text":"x"}`},
		{"grant", "echo", "net=example.com"},
		{"revoke", "echo", "net"},
		{"install", "--yes", built.wasm["echo"]},
		{"sync"},
		{"update"},
		{"migrate"},
	} {
		out, stderr, code := wardenIn(t, elsewhere, nil, args...)
		if code != 2 || stderr != want || out != "" {
			t.Errorf("warden %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", strings.Join(args, " "), code, out, stderr, want)
		}
	}
	// An empty --config is no config either, and is not searched past.
	out, stderr, code := wardenIn(t, elsewhere, nil, "tools", "-c", "")
	if wantEmpty := "warden: no config file given\n  point warden at a config with --config PATH or WARDEN_CONFIG=PATH\n"; code != 2 || stderr != wantEmpty || out != "" {
		t.Errorf("tools -c '': exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", code, out, stderr, wantEmpty)
	}
	_, stderr, code = wardenIn(t, elsewhere, nil, "inspect", built.wasm["echo"])
	note := "warden: note: no config.yaml here or in any parent folder; using the defaults (tools from " + filepath.Join(elsewhere, "bin", "tools") + ")\n"
	if code != 0 || !strings.HasPrefix(stderr, note) {
		t.Errorf("inspect: exit %d, stderr:\n%s\nwant exit 0 and first:\n%s", code, stderr, note)
	}
}

// TestProjectChoiceOrder: --config, then $WARDEN_CONFIG, win over the
// config.yaml found from the working directory.
func TestProjectChoiceOrder(t *testing.T) {
	dir := projectEnv(t)
	other := t.TempDir() // a project with no tools
	if err := os.WriteFile(filepath.Join(other, "config.yaml"), []byte("tools:\n  dir: .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"tools", "-c", filepath.Join(other, "config.yaml")}},
		{[]string{"WARDEN_CONFIG=" + filepath.Join(other, "config.yaml")}, []string{"tools"}},
	} {
		out, stderr, code := wardenIn(t, dir, c.env, c.args...)
		if code != 0 || strings.Contains(out, "echo") {
			t.Errorf("%v %v: exit %d, want the other project's empty table:\n%s%s", c.env, c.args, code, out, stderr)
		}
	}
}

// TestProjectParentNotWardens: a config.yaml above the working directory
// that is another program's is refused by the commands that need a
// project, and does not stop warden new.
func TestProjectParentNotWardens(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("database:\n  url: postgres://x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := wardenIn(t, sub, nil, "tools")
	want := "warden: " + filepath.Join(dir, "config.yaml") + " does not look like a warden config\n" +
		"  its top-level keys: database\n" +
		"  warden's top-level keys: project, tools, security, server, lsp, net, env, secrets, memory, tasks, log, access, approvals\n" +
		"  point warden at its config with --config PATH or WARDEN_CONFIG=PATH\n"
	if code != 2 || stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant exit 2, stderr:\n%s", code, stderr, want)
	}
	if out, stderr, code := wardenIn(t, sub, nil, "new", "wc", "--lang", "wat"); code != 0 {
		t.Fatalf("new under another program's config: exit %d\n%s%s", code, out, stderr)
	}
}

// TestProjectParentForeign (attacker): on a shared machine anyone can write
// config.yaml into a folder above yours (/tmp). One found in a parent that
// another user owns is refused, naming both owners and how to use it anyway;
// in the working directory itself it is where you chose to be, and is read.
func TestProjectParentForeign(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := projectEnv(t)
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.Chown(cfg, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := wardenIn(t, sub, nil, "tools")
	want := "warden: " + cfg + " belongs to uid 4242, not to you (uid 0): a config found in a parent folder is used only when it is yours\n" +
		"  someone else's config.yaml would grant your tools what they chose\n" +
		"  to use it anyway, pass it: --config " + cfg + "\n"
	if code != 2 || stderr != want || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", code, out, stderr, want)
	}
	if out, stderr, code := wardenIn(t, dir, nil, "tools"); code != 0 || !strings.Contains(out, "echo") {
		t.Fatalf("in the config's own folder: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, code := wardenIn(t, sub, nil, "tools", "-c", cfg); code != 0 || !strings.Contains(out, "echo") {
		t.Fatalf("with -c: exit %d\n%s%s", code, out, stderr)
	}
}
