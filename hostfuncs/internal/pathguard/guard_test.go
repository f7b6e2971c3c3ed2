package pathguard

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// tree builds a project with secrets and symlinks of every kind under a
// temporary directory and returns a guard on it, with HOME a symlink to a
// fake home directory.
func tree(tb testing.TB) (*Guard, string) {
	tb.Helper()
	tmp, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	home := filepath.Join(tmp, "home")
	proj := filepath.Join(home, "proj")
	for _, f := range []string{
		"home/.ssh/id_ed25519", "home/.aws/credentials", "home/.netrc", "home/ok.txt",
		"home/proj/src/a.go", "home/proj/src/deep/c.go", "home/proj/src/.ENV", "home/proj/src/Id_Rsa.pub",
		"home/proj/src/x.KEY", "home/proj/docs/a.md", "home/proj/config/.env", "home/proj/config/.env.prod",
		"home/proj/secret/s.txt", "home/proj/out/o.txt", "notes/n.md", "notes/.env", "outside/o.txt",
	} {
		p := filepath.Join(tmp, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for name, target := range map[string]string{
		"homelink":              home,
		"home/proj/src/up":      "..",
		"home/proj/src/upup":    "../..",
		"home/proj/src/loop":    "loop",
		"home/proj/src/toenv":   "../config/.env",
		"home/proj/src/todocs":  "../docs",
		"home/proj/src/tocfg":   "../config",
		"home/proj/src/out":     "../../../outside",
		"home/proj/src/dang":    "../docs/new/deeper",
		"home/proj/docs/abs":    filepath.Join(home, ".ssh"),
		"home/proj/docs/absok":  filepath.Join(proj, "src"),
		"home/proj/docs/tosrc":  "../src/deep",
		"home/proj/docs/secret": "../secret",
	} {
		if err := os.Symlink(target, filepath.Join(tmp, name)); err != nil {
			tb.Fatal(err)
		}
	}
	g, err := New(Config{
		ProjectDir: proj,
		Roots:      map[string]string{"notes": filepath.Join(tmp, "notes")},
		Deny:       []string{"secret", "~/ok.txt"},
		Home:       filepath.Join(tmp, "homelink"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	return g, tmp
}

var fuzzGrants = []string{"src", "docs", "notes:", "bogus:x", "/etc"}

// independentlyDenied is a second, naive statement of the deny-list for the
// fuzzer to check the guard against.
func independentlyDenied(tmp, real string) bool {
	l := strings.ToLower(real)
	home := strings.ToLower(filepath.Join(tmp, "home"))
	for _, d := range []string{"/.ssh", "/.aws", "/.netrc", "/ok.txt"} {
		if l == home+d || strings.HasPrefix(l, home+d+"/") {
			return true
		}
	}
	for _, c := range strings.Split(l, "/") {
		if c == ".env" || strings.HasPrefix(c, ".env.") || strings.HasSuffix(c, ".pem") || strings.HasSuffix(c, ".key") ||
			strings.HasPrefix(c, "id_rsa") || strings.HasPrefix(c, "id_ed25519") || c == "secret" {
			return true
		}
	}
	return false
}

// independentlyGranted checks a real path against fuzzGrants by hand.
func independentlyGranted(tmp, real string) bool {
	proj := filepath.Join(tmp, "home", "proj")
	for _, d := range []string{proj + "/src", proj + "/docs", filepath.Join(tmp, "notes")} {
		if real == d || strings.HasPrefix(real, d+"/") {
			return true
		}
	}
	return false
}

// FuzzGate: whatever the path, an allowed answer resolves inside a granted
// part of a root and matches no deny rule, judged independently of the
// guard's own code; and what os.Root actually opens is what was checked.
func FuzzGate(f *testing.F) {
	for _, s := range []string{
		"src/a.go", "src/../docs/a.md", "../x", "src/up/config/.env", "src/upup/.ssh/id_ed25519",
		"src/loop", "src/toenv", "src/todocs/a.md", "src/tocfg/.env.prod", "src/out/o.txt", "src/dang",
		"docs/abs/id_ed25519", "docs/absok/a.go", "docs/tosrc/c.go", "docs/secret/s.txt", "src/.env",
		"SRC/a.go", "src/.ENV", "src/ID_RSA.PUB", "src/x.key", "notes:.env", "notes:n.md", "notes:/../x",
		"project:src/a.go", "/etc/passwd", "/proc/self/environ", "src/a\x00b", "src//deep/./c.go",
		"src/up/src/up/docs/a.md", "./src", ".", "", "notes:", "x:y", strings.Repeat("a/", 300),
	} {
		f.Add(s)
	}
	g, tmp := tree(f)
	f.Fuzz(func(t *testing.T, p string) {
		tg, err := g.Check("read", Read, "fuzz", fuzzGrants, p)
		if err != nil {
			if k := tool.KindOf(err); k != tool.KindDenied && k != tool.KindInvalidArguments {
				t.Fatalf("Check(%q): kind %s: %v", p, k, err)
			}
			return
		}
		real, err := g.Resolve("read", Read, "fuzz", fuzzGrants, tg, true)
		if err != nil {
			if k := tool.KindOf(err); k != tool.KindDenied && k != tool.KindFailed {
				t.Fatalf("Resolve(%q): kind %s: %v", p, k, err)
			}
			return
		}
		if !independentlyGranted(tmp, real) {
			t.Fatalf("%q allowed but resolves to %s, outside the grants", p, real)
		}
		if independentlyDenied(tmp, real) || independentlyDenied(tmp, tg.abs(tg.Root.Real)) {
			t.Fatalf("%q allowed but %s is deny-listed", p, real)
		}
		// What os.Root opens must be what the gate resolved.
		root, err := os.OpenRoot(tg.Root.Real)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		file, err := root.Open(tg.Rel)
		if err != nil {
			return // missing, a loop, or refused by os.Root: nothing was read
		}
		defer file.Close()
		opened, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(file.Fd())))
		if err == nil && opened != real {
			t.Fatalf("%q: gate resolved %s but os.Root opened %s", p, real, opened)
		}
	})
}

func TestDenyRules(t *testing.T) {
	home := "/home/u"
	for _, tc := range []struct {
		pattern string
		rel     string // checked as a root-relative path
		abs     string // checked as a host path
		want    bool
	}{
		{".env", "a/.env", "", true},
		{".env", "a/.ENV/x", "", true},
		{".env", "a/x.env", "", false},
		{".env.*", "config/.env.local", "", true},
		{".env.*", "config/.env", "", false},
		{"*.pem", "certs/Server.PEM", "", true},
		{"id_rsa*", "keys/ID_RSA.pub", "", true},
		{"config/**/*.json", "config/a/b.json", "", true},
		{"config/**/*.json", "src/config/a.json", "", false},
		{"private/**", "private", "", true},
		{"private", "a/private/b", "", true},
		{"~/.ssh", "", "/home/u/.ssh", true},
		{"~/.ssh", "", "/home/u/.SSH/id_rsa", true},
		{"~/.ssh", "", "/home/u/.sshx", false},
		{"~/.ssh", "", "/home/u", false},
		{"~/.cargo/credentials*", "", "/home/u/.cargo/credentials.toml", true},
		{"/proc/*/environ", "", "/proc/self/environ", true},
		{"/proc/*/environ", "", "/proc/123/environ", true},
		{"/proc/*/environ", "", "/proc/self/status", false},
		{"/etc/sudoers.d", "", "/etc/sudoers.d/admins", true},
		{"/proc/*/task/*/mem", "", "/proc/1/task/2/mem", true},
	} {
		r, err := compileRule(Host, home, tc.pattern, SourceConfig)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		var got bool
		if tc.abs != "" {
			got = r.matchAbs(fold(tc.abs))
		} else {
			got = r.matchRel(fold(tc.rel))
		}
		if got != tc.want {
			t.Errorf("rule %q on %q%q: got %v, want %v", tc.pattern, tc.rel, tc.abs, got, tc.want)
		}
	}
	for _, bad := range []string{"", "[x", "../up/**", "~/x"} {
		h := home
		if bad == "~/x" {
			h = ""
		}
		if _, err := compileRule(Host, h, bad, SourceConfig); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

func TestParse(t *testing.T) {
	g, tmp := tree(t)
	proj := filepath.Join(tmp, "home", "proj")
	for p, want := range map[string]string{
		"src/a.go":                       "src/a.go",
		"./src//deep/../a.go":            "src/a.go",
		"":                               ".",
		"project:docs":                   "docs",
		"notes:":                         "notes:.",
		"notes:/n.md":                    "notes:n.md",
		filepath.Join(proj, "src/a.go"):  "src/a.go",
		filepath.Join(tmp, "notes/n.md"): "notes:n.md",
		"./notes:x":                      "notes:x",
	} {
		tg, err := g.Parse("read", p)
		if err != nil || tg.Path() != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", p, tg.Path(), err, want)
		}
	}
	for p, kind := range map[string]tool.Kind{
		"..":                       tool.KindDenied,
		"src/../../x":              tool.KindDenied,
		"notes:../x":               tool.KindDenied,
		"/etc/passwd":              tool.KindDenied,
		"nope:x":                   tool.KindInvalidArguments,
		"a\x00":                    tool.KindInvalidArguments,
		strings.Repeat("x", 256):   tool.KindInvalidArguments,
		strings.Repeat("x/", 2049): tool.KindInvalidArguments,
	} {
		if _, err := g.Parse("read", p); tool.KindOf(err) != kind {
			t.Errorf("Parse(%.30q): %v; want %s", p, err, kind)
		}
	}
	// Exactly at the limits is fine.
	if _, err := g.Parse("read", strings.Repeat("x", 255)); err != nil {
		t.Error(err)
	}
}

func TestResolveFollowsDanglingSymlinks(t *testing.T) {
	g, tmp := tree(t)
	proj := filepath.Join(tmp, "home", "proj")
	tg, err := g.Check("write", Write, "w", []string{"src"}, "src/dang")
	if err != nil {
		t.Fatal(err)
	}
	// Creating src/dang would create docs/new/deeper: not granted.
	if _, err := g.Resolve("write", Write, "w", []string{"src"}, tg, true); tool.KindOf(err) != tool.KindDenied {
		t.Fatalf("dangling symlink: %v", err)
	}
	// Without following the last link (remove), it is the link itself.
	real, err := g.Resolve("write", Write, "w", []string{"src"}, tg, false)
	if err != nil || real != filepath.Join(proj, "src/dang") {
		t.Fatalf("no-follow: %q, %v", real, err)
	}
	tg, _ = g.Check("read", Read, "r", []string{"src"}, "src/loop")
	var te *tool.Error
	if _, err := g.Resolve("read", Read, "r", []string{"src"}, tg, true); !errors.As(err, &te) || te.Kind != tool.KindFailed {
		t.Fatalf("loop: %v", err)
	}
}

func BenchmarkCheck(b *testing.B) {
	g, _ := tree(b)
	grants := []string{"src", "docs"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Check("read", Read, "bench", grants, "src/deep/c.go"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckResolve(b *testing.B) {
	g, _ := tree(b)
	grants := []string{"src", "docs"}
	b.ReportAllocs()
	for b.Loop() {
		t, err := g.Check("read", Read, "bench", grants, "src/deep/c.go")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := g.Resolve("read", Read, "bench", grants, t, true); err != nil {
			b.Fatal(err)
		}
	}
}
