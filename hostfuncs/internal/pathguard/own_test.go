package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestOwnFiles: warden's own files (Config.Own) are denied for read and
// write whatever the grants, by their configured path, through a symlinked
// project root, through a symlink in the project and when the config file
// is itself a symlink; the denial names the guest's path and the file's
// role, carries no Need (so no prompt offers it), and a literal path with
// glob metacharacters matches only itself.
func TestOwnFiles(t *testing.T) {
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(tmp, "real")
	for _, f := range []string{"real/bin/tools/a.wasm", "real/src/a.go", "real/odd[1]*/x", "real/odd[1]x/x", "etc/warden.yaml", "real/bin/other", "real/conf/w.yaml"} {
		mustWrite(t, filepath.Join(tmp, f))
	}
	mustLink(t, "real", filepath.Join(tmp, "proj"))                         // the project root, configured through a link
	mustLink(t, "../etc/warden.yaml", filepath.Join(real, "config.yaml"))   // the config file is a link
	mustLink(t, "../config.yaml", filepath.Join(real, "src", "cfg"))        // a link to it
	mustLink(t, "../bin/tools", filepath.Join(real, "src", "tools"))        // a link to the tools dir
	mustLink(t, "../bin/tools/new.wasm", filepath.Join(real, "src", "new")) // dangling, into it
	mustLink(t, "conf/w.yaml", filepath.Join(real, "second.yaml"))          // a config file linked to one in the project
	proj := filepath.Join(tmp, "proj")
	g, err := New(Config{ProjectDir: proj, Home: filepath.Join(tmp, "home"), Own: []OwnFile{
		{Pattern: Literal(filepath.Join(proj, "config.yaml")), What: "config file"},
		{Pattern: Literal(filepath.Join(proj, "bin", "tools")), What: "tools dir"},
		{Pattern: Literal(filepath.Join(proj, "odd[1]*")), What: "odd dir"},
		{Pattern: Literal(filepath.Join(proj, "second.yaml")), What: "config file"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"."}
	const never = "; no grant can allow a tool to read or write it"
	for _, tc := range []struct {
		access Access
		path   string
		want   string // "" = allowed
	}{
		{Write, "config.yaml", `write "config.yaml": warden's own config file` + never},
		{Read, "config.yaml", `read "config.yaml": warden's own config file` + never},
		{Read, "CONFIG.yaml", `read "CONFIG.yaml": warden's own config file` + never},
		{Write, "./src/../config.yaml", `write "./src/../config.yaml": warden's own config file` + never},
		{Write, filepath.Join(proj, "config.yaml"), `write "` + filepath.Join(proj, "config.yaml") + `": warden's own config file` + never},
		{Write, filepath.Join(real, "config.yaml"), `write "` + filepath.Join(real, "config.yaml") + `": warden's own config file` + never},
		{Write, "bin/tools", `write "bin/tools": warden's own tools dir` + never},
		{Write, "bin/tools/evil.wasm", `write "bin/tools/evil.wasm": warden's own tools dir` + never},
		{Read, "bin/tools/a.wasm", `read "bin/tools/a.wasm": warden's own tools dir` + never},
		// The config file's target is outside the root: that is the denial.
		{Read, "src/cfg", `read "src/cfg": resolves outside root "project"; symlinks may not leave their root`},
		{Write, "src/tools/x.wasm", `write "src/tools/x.wasm": warden's own tools dir` + never},
		{Write, "src/new", `write "src/new": warden's own tools dir` + never},
		{Write, "odd[1]*/x", `write "odd[1]*/x": warden's own odd dir` + never},
		{Write, "odd[1]x/x", ""},
		// The file behind a linked config file, by its own name.
		{Write, "conf/w.yaml", `write "conf/w.yaml": warden's own config file` + never},
		{Write, "second.yaml", `write "second.yaml": warden's own config file` + never},
		{Write, "bin/other", ""},
		{Write, "bin", ""},
		{Read, "src/a.go", ""},
	} {
		op := tc.access.key()
		tgt, err := g.Check(op, tc.access, "t", all, tc.path)
		if err == nil {
			_, err = g.Resolve(op, tc.access, "t", all, tgt, true)
		}
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s %q: %v, want allowed", op, tc.path, err)
			}
			continue
		}
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindDenied || te.Message != tc.want || te.Need != nil {
			t.Errorf("%s %q:\n got %v\nwant denied %q without a need", op, tc.path, err, tc.want)
		}
	}
	// Listings omit them.
	if g.Denied(Target{Root: g.roots[0], Rel: "config.yaml"}) == nil || g.Denied(Target{Root: g.roots[0], Rel: "bin/tools"}) == nil {
		t.Error("Denied does not report an own file")
	}
	// A relative own path is a programming error, reported.
	if _, err := New(Config{ProjectDir: proj, Home: tmp, Own: []OwnFile{{Pattern: "config.yaml", What: "config file"}}}); err == nil {
		t.Error("a relative own path was accepted")
	}
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestProcCmdlineDenied: with a root that holds /proc, a tool cannot read
// warden's command line, where `warden serve --token` puts the bearer
// token, by /proc/self or by its pid, nor any thread's.
func TestProcCmdlineDenied(t *testing.T) {
	g, err := New(Config{ProjectDir: t.TempDir(), Roots: map[string]string{"sys": "/"}, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sys:proc/self/cmdline", "sys:proc/1/cmdline", "sys:proc/self/task/1/cmdline", "/proc/self/cmdline"} {
		tgt, err := g.Check("read", Read, "t", []string{"sys:proc"}, p)
		if err == nil {
			_, err = g.Resolve("read", Read, "t", []string{"sys:proc"}, tgt, true)
		}
		if err == nil || tool.KindOf(err) != tool.KindDenied {
			t.Errorf("read %s: %v, want denied", p, err)
		}
	}
}
