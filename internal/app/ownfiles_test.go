package app

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/fs"
	"github.com/warden-run/warden/tool"
)

// TestOwnFilesDenied: warden's own files, as config names them, are denied
// to a tool granted the whole project for writing, by the fs capability
// built as a reload builds it: a reload that moves the tools dir, the
// compile cache and the audit log keeps the ones in use since start denied
// (they are read only at start) and denies the new ones too.
func TestOwnFilesDenied(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bin/tools", "bin/tools2", "cache", "cache2", "logs", "src", "trust", ".warden/memories"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	body := func(tools, cache, audit string) string {
		return "project: {root: .}\ntools: {dir: " + tools + ", cache_dir: " + cache + "}\n" +
			"log: {audit: " + audit + "}\nsecurity: {trusted_root: trust/root.json}\n"
	}
	path := filepath.Join(dir, "config.yaml")
	load := func(b string) *config.Config {
		t.Helper()
		if err := os.WriteFile(path, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	// A module linked into the tools dir from the project.
	if err := os.MkdirAll(filepath.Join(dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "build", "x.wasm"), []byte("\x00asm"), 0o644)
	if err := os.Symlink("../../build/x.wasm", filepath.Join(dir, "bin", "tools2", "x.wasm")); err != nil {
		t.Fatal(err)
	}
	start := load(body("bin/tools", "cache", "logs/audit.log"))
	reloaded := load(body("bin/tools2", "cache2", "logs/audit2.log"))
	c := &capabilities{startOwn: ownFiles(start)}
	f, err := fs.New(c.fsConfig(reloaded))
	if err != nil {
		t.Fatal(err)
	}
	call := &hostfuncs.Call{Tool: "t", Module: "t", Observer: nopObserver{},
		Grants: tool.Capabilities{FS: tool.FSAccess{Read: []string{"."}, Write: []string{"."}}}}
	write := func(p string) error {
		req, _ := json.Marshal(map[string]string{"op": "write", "path": p, "content": "x"})
		_, err := f.Serve(context.Background(), call, req)
		return err
	}
	for p, what := range map[string]string{
		"config.yaml":             "config file",
		".warden-edit-1234.tmp":   "config file (an edit being saved)",
		"bin/tools/x.wasm":        "tools dir",
		"bin/tools2/y.wasm":       "tools dir",
		"cache/x":                 "compile cache dir",
		"cache2/x":                "compile cache dir",
		"logs/audit.log":          "audit log",
		"logs/audit.log.1":        "audit log (a rotated file)",
		"logs/audit2.log":         "audit log",
		"trust/root.json":         "signature trust root (security.trusted_root)",
		".warden/memories.lock":   "memory store lock file",
		".warden/tasks/x.json":    "task store",
		"src/../BIN/Tools/y.wasm": "tools dir",
		"build/x.wasm":            "module file (linked into the tools dir)",
	} {
		want := `write "` + p + `": warden's own ` + what + `; no grant can allow a tool to read or write it`
		err := write(p)
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindDenied || te.Message != want || te.Need != nil {
			t.Errorf("write %s:\n got %v\nwant %q", p, err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil && !strings.HasPrefix(p, "config") && p != "build/x.wasm" {
			t.Errorf("%s was written", p)
		}
	}
	for _, p := range []string{"logs/other.txt", "src/a.go", "bin/readme.txt", ".warden/memories/notes.md"} {
		if err := write(p); err != nil {
			t.Errorf("write %s: %v, want allowed", p, err)
		}
	}
	// Removing a directory that holds one is refused as a whole.
	_, err = f.Serve(context.Background(), call, []byte(`{"op":"remove","path":"bin","recursive":true}`))
	want := `remove "bin": contains an entry that is denied (warden's own tools dir; no grant can allow a tool to read or write it); deny rules always win over grants`
	if err == nil || err.Error() != "denied: "+want {
		t.Errorf("remove bin: %v, want %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "bin", "tools")); err != nil {
		t.Errorf("the tools dir is gone: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != body("bin/tools2", "cache2", "logs/audit2.log") {
		t.Fatalf("config.yaml changed: %s", b)
	}
}

// TestOwnFilesRefreshedOnToolsDirChange: a module linked into the tools dir
// while warden runs makes its target warden's own before the module loads
// (App.reload refreshes the fs capability's own files first).
func TestOwnFilesRefreshedOnToolsDirChange(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"bin/tools", "build"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(dir, "build", "late.wasm")
	if err := os.WriteFile(target, []byte("not yet a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := startApp(t, dir, "tools: {cache_dir: off}\n", nil)
	call := &hostfuncs.Call{Tool: "t", Module: "t", Observer: nopObserver{},
		Grants: tool.Capabilities{FS: tool.FSAccess{Write: []string{"build"}}}}
	write := func() error {
		_, err := a.caps.fs.Serve(context.Background(), call, []byte(`{"op":"write","path":"build/late.wasm","content":"x"}`))
		return err
	}
	if err := write(); err != nil {
		t.Fatalf("before the link: %v", err)
	}
	link := filepath.Join(dir, "bin", "tools", "late.wasm")
	if err := os.Symlink("../../build/late.wasm", link); err != nil {
		t.Fatal(err)
	}
	a.catalog.Reload(context.Background(), link) // what the watcher does on the link's event
	want := `write "build/late.wasm": warden's own module file (linked into the tools dir); no grant can allow a tool to read or write it`
	if err := write(); err == nil || err.Error() != "denied: "+want {
		t.Fatalf("after the link: %v, want %q", err, want)
	}
	if b, _ := os.ReadFile(target); string(b) != "x" {
		t.Fatalf("target = %q", b)
	}
}

// TestOwnFilesWithoutConfigFile: warden started without a config file reads
// ./config.yaml at its next start, so that path is warden's own too: a tool
// allowed once to write the project cannot plant a policy for later.
func TestOwnFilesWithoutConfigFile(t *testing.T) {
	dir := t.TempDir()
	c := &capabilities{}
	f, err := fs.New(c.fsConfig(&config.Config{Dir: dir, Project: config.Project{Root: dir}, Tools: config.Tools{Dir: filepath.Join(dir, "bin/tools"), CacheDir: "off"}}))
	if err != nil {
		t.Fatal(err)
	}
	call := &hostfuncs.Call{Tool: "t", Module: "t", Observer: nopObserver{},
		Grants: tool.Capabilities{FS: tool.FSAccess{Write: []string{"."}}}}
	_, err = f.Serve(context.Background(), call, []byte(`{"op":"write","path":"config.yaml","content":"tools: {}"}`))
	want := `denied: write "config.yaml": warden's own config file (read at the next start); no grant can allow a tool to read or write it`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err == nil {
		t.Fatal("config.yaml was written")
	}
}

// TestOwnFileGrantsRefused: `warden grant` refuses an fs grant naming one of
// warden's own files or a path within one (it would give nothing), and
// lets a grant of a directory holding one (".") through: deny wins there.
func TestOwnFileGrantsRefused(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "bin", "tools"), 0o755)
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("tools: {cache_dir: off}\n"), 0o644)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGrants(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.CheckChanges("Edit", []config.GrantChange{
		{Key: "fs.write", Values: []string{"src", "config.yaml", "bin/tools/x.wasm", path}},
		{Key: "fs.read", Values: []string{".", "bin"}},
		{Key: "env", Values: []string{"config.yaml"}},
	})
	const never = "; no grant can allow a tool to read or write it"
	want := `tools.grants.edit.fs.write: grant fs.write "config.yaml": warden's own config file` + never + "\n" +
		`tools.grants.edit.fs.write: grant fs.write "bin/tools/x.wasm": warden's own tools dir` + never + "\n" +
		`tools.grants.edit.fs.write: grant fs.write "` + path + `": warden's own config file` + never
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}
