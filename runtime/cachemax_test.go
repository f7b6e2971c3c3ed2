package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/warden-run/warden/runtime"
)

// cacheNames lists the entries of the cache in dir and their bytes.
func cacheNames(t *testing.T, dir string) (names []string, size int64) {
	t.Helper()
	for _, part := range []string{"instrumented", "manifests", "compiled", "wazero-*"} {
		files, _ := filepath.Glob(filepath.Join(dir, part, "*"))
		for _, f := range files {
			info, err := os.Stat(f)
			if err != nil || filepath.Ext(f) == ".tmp" {
				continue
			}
			rel, _ := filepath.Rel(dir, f)
			names = append(names, filepath.ToSlash(rel))
			size += info.Size()
		}
	}
	slices.Sort(names)
	return names, size
}

// TestCacheMaxPrunesLeastRecentlyUsed: a load that writes to a cache at
// its bound (Options.CacheMax) removes the entries of the module used
// least recently, not its own, and leaves the cache within the bound;
// CacheSizeOf counts what is left.
func TestCacheMaxPrunesLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := watFixture{name: "ping"}.build(t), watFixture{name: "pong"}.build(t)
	load := func(max uint64, name string, wasm []byte) {
		t.Helper()
		rt, err := runtime.New(ctx, runtime.Options{CacheDir: dir, CacheMax: max})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		wantPong(t, loadTool(t, rt, name, wasm, runtime.Limits{}))
	}
	load(0, "ping", a)
	aNames, aSize := cacheNames(t, dir)
	if len(aNames) < 2 {
		t.Fatalf("ping left %v in the cache, want its instrumented module and compiled code", aNames)
	}
	// Room for one module and a half: pong's load must evict ping's
	// entries, the least recently used, and keep all of its own.
	max := aSize + aSize/2
	load(uint64(max), "pong", b)
	names, size := cacheNames(t, dir)
	if size > max {
		t.Fatalf("the cache holds %d bytes after the load, over its bound of %d: %v", size, max, names)
	}
	var kept, evicted []string
	for _, n := range names {
		if slices.Contains(aNames, n) {
			kept = append(kept, n)
		}
	}
	for _, n := range aNames {
		if !slices.Contains(names, n) {
			evicted = append(evicted, n)
		}
	}
	if len(evicted) == 0 {
		t.Fatalf("no entry of ping's was pruned: %v", names)
	}
	if len(names)-len(kept) != len(aNames) {
		t.Fatalf("pong's entries %v are not all there (ping's were %v)", names, aNames)
	}
	got, err := runtime.CacheSizeOf(dir)
	if err != nil || got.Bytes != size || got.Entries != len(names) {
		t.Fatalf("CacheSizeOf = %+v, %v; want %d entries of %d bytes", got, err, len(names), size)
	}
	// Pruning to 0 empties it.
	p, err := runtime.PruneCache(dir, 0, nil)
	if err != nil || p.After.Entries != 0 || p.Removed != len(names) {
		t.Fatalf("PruneCache(0) = %+v, %v", p, err)
	}
}

// TestWarmLoadSkipsValidation: a module loaded again from a warm disk
// cache (a restart) is compiled from the entry the code guard verified,
// without wazero validating it again, and serves; a tampered entry is
// removed by the guard first, so that load validates and compiles afresh.
func TestWarmLoadSkipsValidation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wasm := watFixture{name: "ping"}.build(t)
	start := func() (*runtime.Runtime, func()) {
		rt, err := runtime.New(ctx, runtime.Options{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return rt, func() { rt.Close(ctx) }
	}
	cold, done := start()
	wantPong(t, loadTool(t, cold, "ping", wasm, runtime.Limits{}))
	if n := runtime.VerifiedCompiles(cold); n != 0 {
		t.Fatalf("a cold load used %d verified compiles", n)
	}
	done()
	warm, done := start()
	wantPong(t, loadTool(t, warm, "ping", wasm, runtime.Limits{}))
	if n := runtime.VerifiedCompiles(warm); n != 1 {
		t.Fatalf("the warm load made %d verified compiles, want 1", n)
	}
	done()
	compiled, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	for _, f := range compiled {
		b, _ := os.ReadFile(f)
		b[len(b)/2] ^= 0xff
		os.WriteFile(f, b, 0o600)
	}
	again, done := start()
	defer done()
	wantPong(t, loadTool(t, again, "ping", wasm, runtime.Limits{}))
	if n := runtime.VerifiedCompiles(again); n != 0 {
		t.Fatalf("a load after the entry was tampered with made %d verified compiles", n)
	}
}
