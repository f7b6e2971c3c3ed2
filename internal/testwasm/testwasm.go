// Package testwasm builds the WebAssembly modules that tests load: Go guests
// (with the wasip1 c-shared toolchain) and WAT sources (with wabt).
//
// Go builds are cached by the content of the package and everything it
// imports outside the standard library, under os.UserCacheDir()/warden-test,
// so a test run whose guests have not changed links nothing. The helpers are
// safe for concurrent use by parallel tests, in one process or several.
package testwasm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// BuildGo builds the Go package in pkgDir (relative to the test's working
// directory, or absolute) as a wasip1 reactor module and returns its bytes.
// The test fails, showing the compiler's output, if the build fails.
func BuildGo(t testing.TB, pkgDir string) []byte {
	t.Helper()
	wasm, err := buildGo(pkgDir)
	if err != nil {
		t.Fatalf("testwasm.BuildGo(%s): %v", pkgDir, err)
	}
	return wasm
}

// BuildGoFile is BuildGo returning the path of the cached module instead of
// its bytes, for tests that load modules from disk. The file must not be
// modified.
func BuildGoFile(t testing.TB, pkgDir string) string {
	t.Helper()
	path, err := buildGoFile(pkgDir)
	if err != nil {
		t.Fatalf("testwasm.BuildGoFile(%s): %v", pkgDir, err)
	}
	return path
}

// BuildGoFileVars is BuildGoFile with string variables of package main set
// at link time (-ldflags "-X main.<name>=<value>"), so that one source yields
// several distinct modules, each cached under its own key. Names and values
// must not contain spaces, quotes or '='.
func BuildGoFileVars(t testing.TB, pkgDir string, vars map[string]string) string {
	t.Helper()
	path, err := buildGoVariant(pkgDir, vars)
	if err != nil {
		t.Fatalf("testwasm.BuildGoFileVars(%s, %v): %v", pkgDir, vars, err)
	}
	return path
}

// WAT assembles the WebAssembly text file watFile with wat2wasm.
func WAT(t testing.TB, watFile string) []byte {
	t.Helper()
	wasm, err := assemble(watFile)
	if err != nil {
		t.Fatalf("testwasm.WAT(%s): %v", watFile, err)
	}
	return wasm
}

// WATNamed is WAT keeping the text's names ($func) in a name section
// (wat2wasm --debug-names), as a toolchain's debug build does.
func WATNamed(t testing.TB, watFile string) []byte {
	t.Helper()
	wasm, err := assemble(watFile, "--debug-names")
	if err != nil {
		t.Fatalf("testwasm.WATNamed(%s): %v", watFile, err)
	}
	return wasm
}

// Assemble is WAT for code without a testing.TB, such as a runnable
// example: the error is the caller's to report.
func Assemble(watFile string) ([]byte, error) { return assemble(watFile) }

// WATString assembles WebAssembly text given inline.
func WATString(t testing.TB, src string) []byte {
	t.Helper()
	file := filepath.Join(t.TempDir(), "module.wat")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return WAT(t, file)
}

func assemble(watFile string, flags ...string) ([]byte, error) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		if _, statErr := os.Stat("/usr/bin/wat2wasm"); statErr != nil {
			return nil, errors.New("wat2wasm not found: install wabt (apt-get install wabt)")
		}
		wat2wasm = "/usr/bin/wat2wasm"
	}
	out, err := os.CreateTemp("", "testwasm-*.wasm")
	if err != nil {
		return nil, err
	}
	out.Close()
	defer os.Remove(out.Name())
	cmd := exec.Command(wat2wasm, append([]string{"--enable-all", watFile, "-o", out.Name()}, flags...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("wat2wasm: %v\n%s", err, msg)
	}
	return os.ReadFile(out.Name())
}

// inflight deduplicates concurrent builds of the same package in one process;
// across processes, the atomic rename into the cache does.
var inflight sync.Map // cache path -> *build

type build struct {
	once sync.Once
	err  error
}

func buildGo(pkgDir string) ([]byte, error) {
	path, err := buildGoFile(pkgDir)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

func buildGoFile(pkgDir string) (string, error) { return buildGoVariant(pkgDir, nil) }

// ldflags turns vars into -X flags, in a stable order (they are part of the
// cache key).
func ldflags(vars map[string]string) (string, error) {
	var xs []string
	for name, value := range vars {
		if name == "" || strings.ContainsAny(name+value, " \t\n\"'=`") {
			return "", fmt.Errorf("variable %q=%q: names and values must not contain spaces, quotes or '='", name, value)
		}
		xs = append(xs, "-X main."+name+"="+value)
	}
	sort.Strings(xs)
	return strings.Join(xs, " "), nil
}

func buildGoVariant(pkgDir string, vars map[string]string) (string, error) {
	dir, err := filepath.Abs(pkgDir)
	if err != nil {
		return "", err
	}
	flags, err := ldflags(vars)
	if err != nil {
		return "", err
	}
	key, err := contentKey(dir, flags)
	if err != nil {
		return "", err
	}
	cacheDir, err := cacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cacheDir, filepath.Base(dir)+"-"+key+".wasm")
	v, _ := inflight.LoadOrStore(path, &build{})
	b := v.(*build)
	b.once.Do(func() {
		if _, err := os.Stat(path); err == nil {
			return
		}
		b.err = goBuild(dir, path, flags)
	})
	if b.err != nil {
		// Let a later test retry: the failure may be fixed by then (it is
		// not, within one run, but a cached error would hide the output).
		inflight.CompareAndDelete(path, b)
		return "", b.err
	}
	return path, nil
}

func cacheDir() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "warden-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create build cache: %w", err)
	}
	return dir, nil
}

// goEnv is the environment of every guest build: the local toolchain and
// nothing from the caller's GOFLAGS (such as -race or -cover, which a wasm
// build cannot take).
func goEnv() []string {
	env := []string{"GOOS=wasip1", "GOARCH=wasm", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GOOS", "GOARCH", "GOTOOLCHAIN", "CGO_ENABLED", "GOFLAGS", "GOWASM", "GOEXPERIMENT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); fileExists(p) {
		return p
	}
	return "go"
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func goBuild(dir, dest, ldflags string) error {
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".build-*.wasm")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"build", "-buildmode=c-shared", "-o", tmp.Name()}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	cmd := exec.Command(goTool(), append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = goEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	return os.Rename(tmp.Name(), dest)
}

// contentKey hashes what the build of dir depends on outside the standard
// library and the module cache: the toolchain, go.mod/go.sum, and every file
// of every package in the import graph. Module-cache packages are named by
// their directory, which includes the version and is immutable. ldflags
// (the link-time variables) are part of the key.
func contentKey(dir, ldflags string) (string, error) {
	cmd := exec.Command(goTool(), "list", "-deps",
		"-f", "{{if not .Standard}}{{.Dir}}{{end}}", ".")
	cmd.Dir = dir
	cmd.Env = goEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %v\n%s", dir, err, stderr.Bytes())
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", runtime.Version(), strings.Join(goEnv()[:5], " "))
	if ldflags != "" {
		fmt.Fprintf(h, "ldflags %s\n", ldflags)
	}
	modCache := goModCache()
	dirs := strings.Fields(string(out))
	sort.Strings(dirs)
	for _, d := range dirs {
		fmt.Fprintf(h, "dir %s\n", d)
		if modCache != "" && strings.HasPrefix(d, modCache+string(filepath.Separator)) {
			continue
		}
		if err := hashDir(h, d); err != nil {
			return "", err
		}
	}
	if root := moduleRoot(dir); root != "" {
		for _, f := range []string{"go.mod", "go.sum"} {
			if err := hashFile(h, filepath.Join(root, f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

var modCacheOnce = sync.OnceValue(func() string {
	out, err := exec.Command(goTool(), "env", "GOMODCACHE").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

func goModCache() string { return modCacheOnce() }

func moduleRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// hashDir hashes the regular files directly in d (a package's files; its
// subdirectories are other packages).
func hashDir(h interface{ Write([]byte) (int, error) }, d string) error {
	entries, err := os.ReadDir(d)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), ".wasm") {
			if err := hashFile(h, filepath.Join(d, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func hashFile(h interface{ Write([]byte) (int, error) }, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "file %s %d\n", filepath.Base(path), len(b))
	_, err = h.Write(b)
	return err
}
