package codecache

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
)

// compilerWith returns a compiler runtime whose disk cache in dir g
// observes, closed with the test.
func compilerWith(t *testing.T, g *Guard, dir string) wazero.Runtime {
	t.Helper()
	ctx := context.Background()
	cc, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Observe(cc); err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cc))
	t.Cleanup(func() { rt.Close(ctx); cc.Close(ctx) })
	return rt
}

func answerOf(t *testing.T, rt wazero.Runtime, c wazero.CompiledModule) uint64 {
	t.Helper()
	ctx := context.Background()
	mod, err := rt.InstantiateModule(ctx, c, wazero.NewModuleConfig().WithName(""))
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close(ctx)
	res, err := mod.ExportedFunction("answer").Call(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

// TestCompileVerifiedKnowsWazero: a module whose compiled entry the guard
// verified compiles without validation (CompileVerified says it did) and
// runs the cached code; one with no entry is left to the ordinary compile.
// It fails when a wazero upgrade changes what CompileVerified reaches
// into (the decoder, the cache key, the runtime's and compiled module's
// fields): warm loads would then validate again, correct but slow.
func TestCompileVerifiedKnowsWazero(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	if got := compileAndCall(t, g, dir, answer(t, 41)); got != 41 {
		t.Fatalf("answer = %d", got)
	}
	g2, _ := openGuard(t, dir)
	end := g2.Begin()
	defer end()
	rt := compilerWith(t, g2, dir)
	c, ok := g2.CompileVerified(ctx, rt, answer(t, 41))
	if !ok {
		t.Fatalf("the verified entry was not used: wazero's internals changed (see verified.go; shape: %v)", shape.err)
	}
	if got := answerOf(t, rt, c); got != 41 {
		t.Fatalf("verified compile answers %d, want 41", got)
	}
	if _, ok := g2.CompileVerified(ctx, rt, answer(t, 42)); ok {
		t.Fatal("a module with no entry in the cache was compiled without validation")
	}
}

// TestCompileVerifiedRefusesVanishedEntry: an entry removed between the
// guard's check and wazero's read (a prune by another process) is not
// compiled afresh from unvalidated bytes: CompileVerified declines, and
// wazero wrote nothing (it compiled nothing).
func TestCompileVerifiedRefusesVanishedEntry(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	compileAndCall(t, g, dir, answer(t, 7))
	list := entries(t, dir)
	if len(list) != 1 {
		t.Fatalf("entries %v", list)
	}
	g2, _ := openGuard(t, dir)
	end := g2.Begin()
	defer end()
	rt := compilerWith(t, g2, dir)
	g2.beforeVerified = func() {
		if err := os.Remove(list[0]); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := g2.CompileVerified(ctx, rt, answer(t, 7)); ok {
		t.Fatal("compiled although its entry vanished before wazero read it")
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("wazero compiled the unvalidated module and wrote %v", got)
	}
	// The ordinary compile then does the work, validating.
	g2.beforeVerified = nil
	c, err := rt.CompileModule(ctx, answer(t, 7))
	if err != nil {
		t.Fatal(err)
	}
	if got := answerOf(t, rt, c); got != 7 {
		t.Fatalf("answer = %d", got)
	}
}

// TestCompileVerifiedStillRefusesInvalid: the verified path never applies
// to bytes that are not the entry's: a module that would fail validation
// (an i32 function returning an i64) has no entry, so it is declined, and
// the ordinary compile refuses it.
func TestCompileVerifiedStillRefusesInvalid(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	compileAndCall(t, g, dir, answer(t, 7))
	end := g.Begin()
	defer end()
	rt := compilerWith(t, g, dir)
	bad := []byte("\x00asm\x01\x00\x00\x00" +
		"\x01\x05\x01\x60\x00\x01\x7f" + // type 0: () -> i32
		"\x03\x02\x01\x00" + // func 0: type 0
		"\x0a\x06\x01\x04\x00\x42\x01\x0b") // body: i64.const 1
	if _, ok := g.CompileVerified(ctx, rt, bad); ok {
		t.Fatal("an invalid module was compiled without validation")
	}
	if _, err := rt.CompileModule(ctx, bad); err == nil {
		t.Fatal("wazero accepted the invalid module")
	}
}
