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
		{"ok", "rust", `unknown language "rust": want one of go, c, assemblyscript, wat (or golang, as, ts)`},
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
	if !strings.Contains(string(cfg), "\n    wc: {}\n") || !strings.Contains(string(cfg), "\n  dir: build\n") {
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
		check func(t *testing.T, dir string, env []string)
	}{
		{"go", []string{"make", "go"}, vetGoProject},
		{"wat", []string{"make", "wat2wasm"}, nil},
		{"c", []string{"make", "clang", "wasm-ld"}, cSeesPOSIX},
		{"assemblyscript", []string{"make", "npm", "node"}, nil},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			needTools(t, c.tools...)
			warden := builtWarden(t)
			dir, err := New(t.TempDir(), "wc", c.lang)
			if err != nil {
				t.Fatal(err)
			}
			cache := t.TempDir()
			env := append(os.Environ(), "GOPROXY=off", "GOFLAGS=", "GOMODCACHE="+t.TempDir(), "GOTOOLCHAIN=local",
				"XDG_CACHE_HOME="+cache)
			cmd := exec.Command("make", "test", "WARDEN="+warden)
			cmd.Dir = dir
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("make test: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), `"words": 3`) || !strings.Contains(string(out), `"text": "3 words"`) {
				t.Fatalf("make test output lacks \"words\": 3 and \"3 words\":\n%s", out)
			}
			// The compile cache is on, in the user cache dir: the next
			// call of the same build loads it instead of compiling.
			if entries, err := os.ReadDir(filepath.Join(cache, "warden")); err != nil || len(entries) == 0 {
				t.Errorf("make test left no compile cache in $XDG_CACHE_HOME/warden (%v)", err)
			}
			ignore, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
			if err != nil || !strings.Contains(string(ignore), "\nbuild/\n") {
				t.Errorf(".gitignore does not ignore the build (%v):\n%s", err, ignore)
			}
			if c.check != nil {
				c.check(t, dir, env)
			}
		})
	}
}

// TestSDKBuildsAtItsGoVersion: the go directive a scaffolded go.mod gets
// (bundle.SDKGoVersion) is one the SDK's import closure builds at. go vet
// type-checks the closure as the module github.com/warden-run/warden at that
// version, so a newer language feature fails, and its stdversion check fails
// on a newer standard library symbol; the third-party modules stay vendored.
func TestSDKBuildsAtItsGoVersion(t *testing.T) {
	needTools(t, "go")
	files, err := sdk()
	if err != nil {
		t.Fatal(err)
	}
	const own = "go/vendor/" + bundle.WardenModule + "/"
	dir := t.TempDir()
	var requires []string
	var modulesTxt strings.Builder
	for _, f := range files {
		var dst string
		switch {
		case strings.HasPrefix(f.Path, own):
			dst = strings.TrimPrefix(f.Path, own)
		case f.Path == "go/vendor/modules.txt":
			// The third-party modules' entries, without warden's own.
			for _, block := range strings.SplitAfter(string(f.Data), "\n# ") {
				block = "# " + strings.TrimPrefix(block, "# ")
				block = strings.TrimSuffix(block, "# ")
				fields := strings.Fields(block)
				if len(fields) < 3 || fields[1] == bundle.WardenModule {
					continue
				}
				requires = append(requires, fields[1]+" "+fields[2])
				modulesTxt.WriteString(block)
			}
			continue
		case strings.HasPrefix(f.Path, "go/vendor/"):
			dst = strings.TrimPrefix(f.Path, "go/")
		default:
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(dst))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goMod := "module " + bundle.WardenModule + "\n\ngo " + bundle.SDKGoVersion + "\n\nrequire (\n\t" + strings.Join(requires, "\n\t") + "\n)\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vendor", "modules.txt"), []byte(modulesTxt.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOFLAGS=-mod=vendor", "GOPROXY=off",
		"GOMODCACHE="+t.TempDir(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the SDK at go %s: go vet: %v\n%s", bundle.SDKGoVersion, err, out)
	}
}

// vetGoProject: go vet passes on a new Go project, offline, at the go
// version its go.mod names (the SDK's printf-style error constructors are
// checked as printf wrappers, so the template must use them as such).
func vetGoProject(t *testing.T, dir string, env []string) {
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !strings.Contains(string(mod), "\ngo "+bundle.SDKGoVersion+"\n") {
		t.Errorf("go.mod does not say go %s (%v):\n%s", bundle.SDKGoVersion, err, mod)
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(env, "GOOS=wasip1", "GOARCH=wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go vet: %v\n%s", err, out)
	}
}

// cSeesPOSIX: the C template's flags declare wasi-libc's POSIX functions
// (strict -std=c11 hides strndup, fileno, M_PI and their kind).
func cSeesPOSIX(t *testing.T, dir string, env []string) {
	src := "#include <math.h>\n#include <stdio.h>\n#include <string.h>\n" +
		"char *dup(const char *s) { return strndup(s, (size_t)(M_PI + fileno(stdin))); }\n"
	if err := os.WriteFile(filepath.Join(dir, "posix.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "--eval", "posix-check: ; $(CC) $(WASM_FLAGS) -Werror=implicit-function-declaration -fsyntax-only posix.c", "posix-check")
	cmd.Dir = dir
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("POSIX declarations with the template's flags: %v\n%s", err, out)
	}
}

// TestNewProjectGrantsItsFiles: the tool of a new project can be granted the
// project's files, with the real binary: its config loads the module from
// build/, so warden's closed tools dir is not the whole project.
func TestNewProjectGrantsItsFiles(t *testing.T) {
	needTools(t, "make", "wat2wasm")
	warden := builtWarden(t)
	dir, err := New(t.TempDir(), "wc", "wat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "XDG_CACHE_HOME="+t.TempDir(), "WARDEN_CONFIG=")
	mk := exec.Command("make")
	mk.Dir, mk.Env = dir, env
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "build", "wc.wasm")); err != nil {
		t.Fatalf("make did not build build/wc.wasm: %v", err)
	}
	grant := exec.Command(warden, "grant", "wc", "fs.read=data")
	grant.Dir, grant.Env = dir, env
	var stdout, stderr bytes.Buffer
	grant.Stdout, grant.Stderr = &stdout, &stderr
	if err := grant.Run(); err != nil {
		t.Fatalf("warden grant wc fs.read=data: %v\nstderr:\n%s", err, stderr.String())
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if !strings.Contains(string(cfg), "read: [data]") {
		t.Fatalf("config.yaml after the grant:\n%s", cfg)
	}
}
