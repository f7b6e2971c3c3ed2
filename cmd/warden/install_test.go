package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/testwasm"
)

// run runs warden with args and stdin, returning stdout and the error.
func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func setup(t *testing.T) (cfgPath, echo string) {
	t.Helper()
	echo = testwasm.BuildGoFile(t, "../../tools-wasm/echo")
	dir := t.TempDir()
	cache, _ := os.UserCacheDir()
	cfgPath = filepath.Join(dir, "config.yaml")
	body := "tools:\n  dir: tools\n  cache_dir: " + filepath.Join(cache, "warden") + "\n  grants: {}   # none yet\n  pins: {}\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath, echo
}

// TestInstallNonInteractive: without --yes and without a terminal nothing
// is installed and the config is untouched; with --yes it is.
func TestInstallNonInteractive(t *testing.T) {
	cfgPath, echo := setup(t)
	before, _ := os.ReadFile(cfgPath)
	out, err := run(t, "y\n", "-c", cfgPath, "install", "--name", "echo", echo)
	var usage usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "pass --yes") {
		t.Fatalf("non-interactive install: %v", err)
	}
	if !strings.Contains(out, "Tool echo — Echo (version 1.0.0)") {
		t.Errorf("review not shown:\n%s", out)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Error("config changed")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfgPath), "tools", "echo.wasm")); err == nil {
		t.Error("module copied")
	}

	out, err = run(t, "", "-c", cfgPath, "install", "--yes", "--name", "echo", echo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "pinned as tools.pins.echo") {
		t.Errorf("output:\n%s", out)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil || len(cfg.Tools.Pins["echo"]) != 64 {
		t.Fatalf("pin: %v %v", cfg.Tools.Pins, err)
	}
	out, err = run(t, "", "-c", cfgPath, "tools")
	if err != nil || !strings.Contains(out, "NOT GRANTED") {
		t.Errorf("tools: %v\n%s", err, out)
	}
}

func TestGrantCLI(t *testing.T) {
	cfgPath, _ := setup(t)
	out, err := run(t, "", "-c", cfgPath, "grant", "fetch", "net=api.github.com,*.example.com", "env=TOKEN")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"net         api.github.com, *.example.com", "env         TOKEN", "no installed tool is named fetch"} {
		if !strings.Contains(out, want) {
			t.Errorf("grant output lacks %q:\n%s", want, out)
		}
	}
	before, _ := os.ReadFile(cfgPath)
	// The grant belongs to a module: no fetch is installed, so the module
	// named like the tool.
	if !strings.Contains(string(before), "  grants:      # none yet\n    fetch:\n      module: fetch\n      net: [api.github.com, \"*.example.com\"]\n      env: [TOKEN]\n") ||
		!strings.Contains(out, "tools.grants.fetch (module fetch)") {
		t.Errorf("config:\n%s", before)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"grant", "fetch", "net=exa mple.com"}, "tools.grants.fetch.net"},
		{[]string{"grant", "fetch", "shell=yes"}, `tools.grants.fetch: unknown grant key "shell"`},
		{[]string{"revoke", "fetch", "env=OTHER"}, "tools.grants.fetch.env: OTHER is not granted (granted: TOKEN)"},
		{[]string{"revoke", "fetch"}, "--all"},
		{[]string{"grant", "fetch", "--module", "..", "env=TOKEN"}, `--module ".." is not a module name`},
		{[]string{"grant", "fetch", "--module", "a/b", "env=TOKEN"}, `--module "a/b" is not a module name`},
	} {
		_, err := run(t, "", append([]string{"-c", cfgPath}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
		if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
			t.Errorf("%v changed the config", c.args)
		}
	}
	// Adding to an entry keeps its module.
	if out, err := run(t, "", "-c", cfgPath, "grant", "fetch", "env=OTHER"); err != nil || !strings.Contains(out, "(module fetch)") {
		t.Errorf("grant to a bound entry: %v\n%s", err, out)
	}
	// --module never moves what the entry grants to another module: the
	// person asked for env=TOKEN, not for net and env=OTHER to go along.
	before, _ = os.ReadFile(cfgPath)
	_, err = run(t, "", "-c", cfgPath, "grant", "fetch", "--module", "Fetcher", "env=TOKEN")
	if err == nil || !strings.Contains(err.Error(), "tools.grants.fetch belongs to module fetch and holds net, env: binding it to module Fetcher") ||
		!strings.Contains(err.Error(), "warden revoke fetch --all") {
		t.Errorf("grant --module to another module: %v", err)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Errorf("the refused move changed the config:\n%s", after)
	}
	// Emptied, the entry moves, with only what was asked.
	if out, err := run(t, "", "-c", cfgPath, "revoke", "fetch", "--all"); err != nil || !strings.Contains(out, "nothing granted") || !strings.Contains(out, "(module fetch)") {
		t.Errorf("revoke --all: %v\n%s", err, out)
	}
	if out, err := run(t, "", "-c", cfgPath, "grant", "fetch", "--module", "Fetcher", "env=TOKEN"); err != nil || !strings.Contains(out, "(module Fetcher)") {
		t.Errorf("grant --module: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(cfgPath); !strings.Contains(string(after), "    fetch:\n      module: Fetcher\n      env: [TOKEN]\n") {
		t.Errorf("grant --module of an emptied entry:\n%s", after)
	}
}

// TestInstallReviewSaysWhereTheGrantBelongs: a grant entry of the tool's name
// that belongs to another module grants the new module nothing, and the
// review says why rather than leaving "not granted" to look like a mistake.
func TestInstallReviewSaysWhereTheGrantBelongs(t *testing.T) {
	cfgPath, echo := setup(t)
	if _, err := run(t, "", "-c", cfgPath, "grant", "echo", "--module", "real-echo", "env=TOKEN"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "-c", cfgPath, "install", "--yes", "--name", "echo", echo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "note: tools.grants.echo is bound to module real-echo (its module field); tool \"echo\" is served by module echo") {
		t.Errorf("review does not say where the grant belongs:\n%s", out)
	}
	// A plain grant now would add to real-echo's entry while the person
	// looks at echo: refused, naming both, config untouched.
	before, _ := os.ReadFile(cfgPath)
	_, err = run(t, "", "-c", cfgPath, "grant", "echo", "env=OTHER")
	if err == nil || !strings.Contains(err.Error(), "tools.grants.echo belongs to module real-echo, but tool echo is served by module echo; say which module the grant is for") {
		t.Errorf("grant to a tool whose entry is another module's: %v", err)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Errorf("the refused grant changed the config:\n%s", after)
	}
	// Named, it goes where the person said.
	if out, err := run(t, "", "-c", cfgPath, "grant", "echo", "--module", "real-echo", "env=OTHER"); err != nil || !strings.Contains(out, "(module real-echo)") {
		t.Errorf("grant --module real-echo: %v\n%s", err, out)
	}
}

// TestGrantNeverBindsAnImpostor: a new grant entry is bound to an unpinned
// module only when it is named like the tool; an unpinned module of another
// name that describes the tool (an impostor of a tool not installed yet)
// makes warden grant ask for --module, and changes nothing. Once the real
// module is installed (pinned), the grant binds to it.
func TestGrantNeverBindsAnImpostor(t *testing.T) {
	cfgPath, echo := setup(t)
	tools := filepath.Join(filepath.Dir(cfgPath), "tools")
	os.MkdirAll(tools, 0o755)
	data, err := os.ReadFile(echo)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "aaa-evil.wasm"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(cfgPath)
	_, err = run(t, "", "-c", cfgPath, "grant", "echo", "env=TOKEN")
	if err == nil || !strings.Contains(err.Error(), "module aaa-evil, which is not pinned and not named like the tool") {
		t.Fatalf("grant with only an impostor loaded: %v", err)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Fatal("the refused grant changed the config")
	}
	os.Remove(filepath.Join(tools, "aaa-evil.wasm"))
	if _, err := run(t, "", "-c", cfgPath, "install", "--yes", "--name", "echo", echo); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "", "-c", cfgPath, "grant", "echo", "env=TOKEN"); err != nil || !strings.Contains(out, "(module echo)") {
		t.Fatalf("grant to the installed module: %v\n%s", err, out)
	}
}

// TestGrantsOfAMultiToolModule: the bundled lsp module serves five tools.
// warden grant binds an entry to it only when told (--module) while it is
// unpinned, since no tool is named like it; warden tools shows each tool's
// own grant; warden install pins the module once and binds every tool's
// entry to it, keeping what was granted, and then warden grant finds the
// module by itself.
func TestGrantsOfAMultiToolModule(t *testing.T) {
	cfgPath, _ := setup(t)
	lsp := testwasm.BuildGoFile(t, "../../tools-wasm/lsp")
	tools := filepath.Join(filepath.Dir(cfgPath), "tools")
	os.MkdirAll(tools, 0o755)
	data, err := os.ReadFile(lsp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "lsp.wasm"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(cfgPath)
	_, err = run(t, "", "-c", cfgPath, "grant", "hover", "lsp=go")
	if err == nil || !strings.Contains(err.Error(), "tool hover is described by module lsp, which is not pinned and not named like the tool") ||
		!strings.Contains(err.Error(), "--module lsp") {
		t.Fatalf("grant to an unpinned multi-tool module without --module: %v", err)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Fatal("the refused grant changed the config")
	}
	out, err := run(t, "", "-c", cfgPath, "grant", "hover", "--module", "lsp", "lsp=go", "fs.read=.")
	if err != nil || !strings.Contains(out, "hover: tools.grants.hover (module lsp)") {
		t.Fatalf("grant --module lsp: %v\n%s", err, out)
	}
	// Per tool: hover has its grant, the other four nothing.
	out, err = run(t, "", "-c", cfgPath, "tools")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[1] == "lsp" {
			rows[f[0]] = f
		}
	}
	for _, name := range []string{"definition", "hover", "references", "symbols", "workspace_symbols"} {
		row, ok := rows[name]
		if !ok {
			t.Fatalf("warden tools lists no tool %s of module lsp:\n%s", name, out)
		}
		// REQUESTED, GRANTED, NOT GRANTED
		// The tools request every default language; a grant names those
		// a project needs.
		const all = "lsp=c,cpp,go,javascript,python,rust,typescript"
		want := "fs.read=. " + all + " - fs.read=. " + all
		if name == "hover" {
			want = "fs.read=. " + all + " fs.read=. lsp=go lsp=c,cpp,javascript,python,rust,typescript"
		}
		if got := strings.Join(row[3:], " "); got != want {
			t.Errorf("warden tools, %s: %q, want %q", name, got, want)
		}
	}
	// install pins lsp once and binds the five entries, keeping hover's.
	if out, err := run(t, "", "-c", cfgPath, "install", "--yes", "--name", "lsp", lsp); err != nil || !strings.Contains(out, "pinned as tools.pins.lsp") {
		t.Fatalf("install lsp: %v\n%s", err, out)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Tools.Pins) != 1 || len(cfg.Tools.Pins["lsp"]) != 64 {
		t.Fatalf("pins: %v", cfg.Tools.Pins)
	}
	for _, name := range []string{"definition", "hover", "references", "symbols", "workspace_symbols"} {
		if module, explicit, ok := cfg.GrantModule(name); !ok || !explicit || module != "lsp" {
			t.Errorf("tools.grants.%s after install: module %q explicit=%v ok=%v", name, module, explicit, ok)
		}
	}
	if g, _ := cfg.Grants("hover", "lsp"); len(g.LSP) != 1 || len(g.FS.Read) != 1 {
		t.Errorf("install lost hover's grant: %+v", g)
	}
	if g, _ := cfg.Grants("definition", "lsp"); !g.IsZero() {
		t.Errorf("install granted definition: %+v", g)
	}
	if out, err := run(t, "", "-c", cfgPath, "grant", "definition", "lsp=go"); err != nil || !strings.Contains(out, "(module lsp)") {
		t.Fatalf("grant to a tool of the installed module: %v\n%s", err, out)
	}
}

// TestInstallSuggestsAGrantForTheReviewedModule: when a tool's grant entry
// belongs to another module, the review's "to grant what it requests" line
// names the reviewed module (--module): without it, the line would add to
// the other module's entry. Run as printed, it is refused while that entry
// holds a grant (config.yaml byte-identical), and once the entry is emptied
// it grants exactly what was requested, bound to the reviewed module.
func TestInstallSuggestsAGrantForTheReviewedModule(t *testing.T) {
	cfgPath, _ := setup(t)
	wasm := testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"host": "api.example.com"})
	if _, err := run(t, "", "-c", cfgPath, "grant", "released", "--module", "other", "env=TOKEN"); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "", "-c", cfgPath, "install", "--yes", "--name", "released", wasm)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	const suggested = "to grant what released requests: warden grant released --module released net=api.example.com"
	if !strings.Contains(out, "note: tools.grants.released is bound to module other") || !strings.Contains(out, suggested) {
		t.Fatalf("install output lacks the note or %q:\n%s", suggested, out)
	}
	before, _ := os.ReadFile(cfgPath)
	_, err = run(t, "", "-c", cfgPath, "grant", "released", "--module", "released", "net=api.example.com")
	if err == nil || !strings.Contains(err.Error(), "tools.grants.released belongs to module other and holds env") {
		t.Fatalf("the suggested grant while the entry is other's: %v", err)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Fatalf("a refused grant changed the config:\n%s", after)
	}
	if _, err := run(t, "", "-c", cfgPath, "revoke", "released", "--all"); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "", "-c", cfgPath, "grant", "released", "--module", "released", "net=api.example.com"); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if g, elsewhere := cfg.Grants("released", "released"); elsewhere != nil || len(g.Net) != 1 || len(g.Env) != 0 {
		t.Errorf("grant of the reviewed module: %+v %v", g, elsewhere)
	}
}
