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
		"bin/tools2/x.wasm":       "tools dir",
		"cache/x":                 "compile cache dir",
		"cache2/x":                "compile cache dir",
		"logs/audit.log":          "audit log",
		"logs/audit.log.1":        "audit log (a rotated file)",
		"logs/audit2.log":         "audit log",
		"trust/root.json":         "signature trust root (security.trusted_root)",
		".warden/memories.lock":   "memory store lock file",
		"src/../BIN/Tools/y.wasm": "tools dir",
	} {
		want := `write "` + p + `": warden's own ` + what + `; no grant can allow a tool to read or write it`
		err := write(p)
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindDenied || te.Message != want || te.Need != nil {
			t.Errorf("write %s:\n got %v\nwant %q", p, err, want)
		}
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil && !strings.HasPrefix(p, "config") {
			t.Errorf("%s was written", p)
		}
	}
	for _, p := range []string{"logs/other.txt", "src/a.go", "bin/readme.txt", ".warden/memories/notes.md"} {
		if err := write(p); err != nil {
			t.Errorf("write %s: %v, want allowed", p, err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != body("bin/tools2", "cache2", "logs/audit2.log") {
		t.Fatalf("config.yaml changed: %s", b)
	}
}
