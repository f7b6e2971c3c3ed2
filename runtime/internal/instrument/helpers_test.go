package instrument

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

const features = api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall

type engine struct {
	name string
	cfg  func() wazero.RuntimeConfig
}

// compileCache spares the tests compiling the same (large) module twice.
var compileCache = wazero.NewCompilationCache()

var engines = []engine{
	{"compiler", func() wazero.RuntimeConfig {
		return wazero.NewRuntimeConfigCompiler().WithCoreFeatures(features).WithCompilationCache(compileCache)
	}},
	{"interpreter", func() wazero.RuntimeConfig {
		return wazero.NewRuntimeConfigInterpreter().WithCoreFeatures(features).WithCompilationCache(compileCache)
	}},
}

// buildCache keeps one build of each fixture per test binary run.
var buildCache sync.Map

// watFixture assembles testdata/<name>.wat with wabt's wat2wasm.
func watFixture(t testing.TB, name string) []byte {
	t.Helper()
	if b, ok := buildCache.Load("wat:" + name); ok {
		return b.([]byte)
	}
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Fatalf("wat2wasm not found: install wabt (apt-get install wabt) to build the WAT fixtures")
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command(tool, "--enable-tail-call", filepath.Join("testdata", name+".wat"), "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm %s: %v\n%s", name, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	buildCache.Store("wat:"+name, b)
	return b
}

// goFixture builds testdata/<dir> as a wasip1 reactor with the go command.
func goFixture(t testing.TB, dir string) []byte {
	t.Helper()
	if b, ok := buildCache.Load("go:" + dir); ok {
		return b.([]byte)
	}
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("go command not found: install Go 1.26 to build the Go guest fixtures")
		}
	}
	out := filepath.Join(t.TempDir(), dir+".wasm")
	cmd := exec.Command(gobin, "build", "-buildmode=c-shared", "-o", out, "./testdata/"+dir)
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOTOOLCHAIN=local")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", dir, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	buildCache.Store("go:"+dir, b)
	return b
}

// cFixture builds testdata/<name>.c with clang for wasm32-wasi, no libc.
func cFixture(t testing.TB, name string) []byte {
	t.Helper()
	if b, ok := buildCache.Load("c:" + name); ok {
		return b.([]byte)
	}
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatalf("clang not found: install clang and lld (apt-get install clang lld) to build the C fixture")
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	cmd := exec.Command(clang, "--target=wasm32-wasi", "-nostdlib", "-Wl,--no-entry", "-Wl,--export-all",
		"-O2", "-mbulk-memory", "-msimd128",
		"-o", out, filepath.Join("testdata", name+".c"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang %s: %v\n%s\n(needs clang and wasm-ld: apt-get install clang lld)", name, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	buildCache.Store("c:"+name, b)
	return b
}

func mustInstrument(t testing.TB, wasm []byte, cfg Config) *Result {
	t.Helper()
	r, err := Instrument(wasm, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// instance is one instantiated module.
type instance struct {
	rt  wazero.Runtime
	mod api.Module
}

func instantiate(t testing.TB, e engine, wasm []byte) instance {
	t.Helper()
	return instantiateCtx(t, context.Background(), e, wasm)
}

func instantiateCtx(t testing.TB, ctx context.Context, e engine, wasm []byte) instance {
	t.Helper()
	rt := wazero.NewRuntimeWithConfig(ctx, e.cfg())
	t.Cleanup(func() { rt.Close(ctx) })
	wasiInstantiate(ctx, rt)
	mod, err := rt.InstantiateWithConfig(ctx, wasm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		t.Fatalf("%s: instantiate: %v", e.name, err)
	}
	return instance{rt, mod}
}

// outcome is what a call did: its results, or the first line of its error.
type outcome struct {
	results []uint64
	err     string
}

func (o outcome) equal(p outcome) bool {
	if o.err != p.err || len(o.results) != len(p.results) {
		return false
	}
	for i := range o.results {
		if o.results[i] != p.results[i] {
			return false
		}
	}
	return true
}

func callExport(ctx context.Context, mod api.Module, name string, args ...uint64) outcome {
	res, err := mod.ExportedFunction(name).Call(ctx, args...)
	if err != nil {
		return outcome{err: firstLine(err)}
	}
	return outcome{results: res}
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// noArgExports lists the module's exported functions that take no
// parameters and whose name starts with prefix.
func noArgExports(t testing.TB, wasm []byte, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, engines[1].cfg())
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name, f := range cm.ExportedFunctions() {
		if len(f.ParamTypes()) == 0 && strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("no exports starting with %q", prefix)
	}
	return names
}

func wasiInstantiate(ctx context.Context, rt wazero.Runtime) {
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
}
