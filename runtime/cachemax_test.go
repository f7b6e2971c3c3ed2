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
