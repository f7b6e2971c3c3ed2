package scaffold

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/internal/scaffold/bundle"
)

// TestBundleIsFresh: sdk.bundle is what the generator makes from this
// checkout, so a change to the Go SDK (or the C and AssemblyScript SDKs)
// reaches warden new.
func TestBundleIsFresh(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := bundle.Collect(root)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bundle.Format(files), sdkBundle) {
		t.Fatal("internal/scaffold/sdk.bundle is stale: run go generate ./internal/scaffold")
	}
}

func TestNewRefuses(t *testing.T) {
	parent := t.TempDir()
	if err := os.MkdirAll(filepath.Join(parent, "taken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "taken", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, lang, want string }{
		{"bad name", "go", `"bad name" is not a valid tool name: 1-128 of A-Z a-z 0-9 _ - . starting with a letter or digit`},
		{".hidden", "go", `".hidden" is not a valid tool name: 1-128 of A-Z a-z 0-9 _ - . starting with a letter or digit`},
		{"ok", "rust", `unknown language "rust": want one of go, c, assemblyscript, wat`},
		{"taken", "wat", filepath.Join(parent, "taken") + " already exists and is not empty: choose another name or --dir"},
	}
	for _, c := range cases {
		_, err := New(parent, c.name, c.lang)
		if err == nil || err.Error() != c.want {
			t.Errorf("New(%q, %q) = %v\nwant %s", c.name, c.lang, err, c.want)
		}
	}
}

func TestNewWritesTheProject(t *testing.T) {
	parent := t.TempDir()
	// An existing empty folder is fine.
	if err := os.Mkdir(filepath.Join(parent, "wc"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := New(parent, "wc", "go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"main.go", "Makefile", "README.md", "config.yaml", "go.mod", "vendor/modules.txt",
		"vendor/github.com/warden-run/warden/guest-sdk/go/warden/warden.go", "vendor/github.com/yosida95/uritemplate/v3/LICENSE"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	if !strings.Contains(string(mod), "\tgithub.com/warden-run/warden "+bundle.WardenVersion+"\n") {
		t.Errorf("go.mod does not require warden at %s:\n%s", bundle.WardenVersion, mod)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if !strings.Contains(string(cfg), "\n    wc: {}\n") || !strings.Contains(string(cfg), "\n  dir: .\n") {
		t.Errorf("config.yaml:\n%s", cfg)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "main.go"))
	if strings.Contains(string(src), Placeholder) || !strings.Contains(string(src), `Name:         "wc",`) {
		t.Errorf("main.go names the tool wrongly:\n%s", src)
	}
}

func TestQuoteKey(t *testing.T) {
	for in, want := range map[string]string{"wc": "wc", "word-count": "word-count", "1": `"1"`, "no": `"no"`, "a.b": `"a.b"`} {
		if got := quoteKey(in); got != want {
			t.Errorf("quoteKey(%q) = %s, want %s", in, got, want)
		}
	}
}

var wardenBin struct {
	once sync.Once
	path string
	err  error
}

// builtWarden builds ./cmd/warden once for the tests that run it.
func builtWarden(t *testing.T) string {
	t.Helper()
	wardenBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "warden-scaffold-test")
		if err != nil {
			wardenBin.err = err
			return
		}
		wardenBin.path = filepath.Join(dir, "warden")
		cmd := exec.Command("go", "build", "-o", wardenBin.path, "./cmd/warden")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			wardenBin.err = &buildError{err, out}
		}
	})
	if wardenBin.err != nil {
		t.Fatal(wardenBin.err)
	}
	return wardenBin.path
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "go build ./cmd/warden: " + e.err.Error() + "\n" + string(e.out)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if wardenBin.path != "" {
		os.RemoveAll(filepath.Dir(wardenBin.path))
	}
	os.Exit(code)
}

// needTools skips (or, under CI, which installs them, fails) when a
// toolchain a template builds with is missing.
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is not installed (CI must install it)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

// TestEveryTemplateBuildsAndAnswers: for each language, warden new, then
// make test against this warden, offline: no module proxy and an empty
// module cache, so the Go project can only build from its vendor/.
func TestEveryTemplateBuildsAndAnswers(t *testing.T) {
	cases := []struct {
		lang  string
		tools []string
	}{
		{"go", []string{"make", "go"}},
		{"wat", []string{"make", "wat2wasm"}},
		{"c", []string{"make", "clang", "wasm-ld"}},
		{"assemblyscript", []string{"make", "npm", "node"}},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			needTools(t, c.tools...)
			warden := builtWarden(t)
			dir, err := New(t.TempDir(), "wc", c.lang)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("make", "test", "WARDEN="+warden)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=", "GOMODCACHE="+t.TempDir(), "GOTOOLCHAIN=local")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make test: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), `"words": 3`) || !strings.Contains(string(out), `"text": "3 words"`) {
				t.Fatalf("make test output lacks \"words\": 3 and \"3 words\":\n%s", out)
			}
		})
	}
}
