package codecache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
)

// plant writes an entry of part named after seed, of size bytes, and
// returns its path.
func plant(t *testing.T, dir, part, seed string, size int) string {
	t.Helper()
	sum := sha256.Sum256([]byte(seed))
	name := hex.EncodeToString(sum[:])
	switch part {
	case PartInstrumented:
		name += ".wasm"
	case PartManifests:
		name += ".manifest"
	}
	path := filepath.Join(dir, part, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestPruneRemovesLeastRecentlyUsedFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	a := plant(t, dir, PartInstrumented, "a", 1000)
	b := plant(t, dir, PartManifests, "b", 1000)
	c := plant(t, dir, PartCompiled, "c", 1000)
	d := plant(t, dir, PartInstrumented, "d", 1000)
	// Used in the order d, a, c, b, then d again: a is now the least
	// recently used, then c, b, d.
	for _, p := range []string{d, a, c, b, d} {
		g.Touch(p)
	}
	p, err := g.Prune(2500)
	if err != nil {
		t.Fatal(err)
	}
	if p.Removed != 2 || p.Freed != 2000 || p.Entries != 2 || p.Size != 2000 {
		t.Fatalf("pruned %+v, want 2 entries, 2000 bytes removed, 2 entries of 2000 bytes left", p)
	}
	if exists(a) || exists(c) || !exists(b) || !exists(d) {
		t.Fatalf("kept a=%v c=%v b=%v d=%v; want the two least recently used (a, c) removed", exists(a), exists(c), exists(b), exists(d))
	}
	// Under the bound: nothing more goes.
	if p, err := g.Prune(2000); err != nil || p.Removed != 0 {
		t.Fatalf("prune at the bound removed %+v (%v)", p, err)
	}
}

func TestPruneKeepsOrderAcrossProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	first, _ := openGuard(t, dir)
	a := plant(t, dir, PartInstrumented, "a", 100)
	b := plant(t, dir, PartInstrumented, "b", 100)
	c := plant(t, dir, PartInstrumented, "c", 100)
	for _, p := range []string{c, a, b} {
		first.Touch(p)
	}
	if err := first.Flush(); err != nil {
		t.Fatal(err)
	}
	// Another process uses c again: its use is numbered after the
	// journal's, whatever the clocks say.
	second, _ := openGuard(t, dir)
	second.Touch(c)
	if _, err := second.Prune(200); err != nil {
		t.Fatal(err)
	}
	if exists(a) || !exists(b) || !exists(c) {
		t.Fatalf("kept a=%v b=%v c=%v; want a (least recently used across both) removed", exists(a), exists(b), exists(c))
	}
	// An entry the journal never heard of goes before every used one.
	e := plant(t, dir, PartManifests, "e", 100)
	if _, err := second.Prune(200); err != nil {
		t.Fatal(err)
	}
	if exists(e) || !exists(b) || !exists(c) {
		t.Fatalf("kept e=%v b=%v c=%v; want the unused e removed first", exists(e), exists(b), exists(c))
	}
}

func TestPruneLeavesWhatIsNotAnEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	own := []string{
		filepath.Join(dir, "tuf", "root.json"),                             // another part's file
		filepath.Join(dir, PartInstrumented, "x.wasm.123.tmp"),             // being written
		filepath.Join(dir, PartManifests, "../escape.manifest"),            // not a name a store writes
		filepath.Join(dir, PartCompiled, strings.Repeat("A", 64)),          // not lowercase hex
		filepath.Join(dir, PartInstrumented, strings.Repeat("a", 64)+".x"), // wrong suffix
	}
	for _, p := range own {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, make([]byte, 500), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	entry := plant(t, dir, PartInstrumented, "a", 500)
	p, err := g.Prune(1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Removed != 1 || exists(entry) {
		t.Fatalf("pruned %+v; want the one entry removed", p)
	}
	for _, f := range own {
		if !exists(f) {
			t.Errorf("%s was removed: it is not a cache entry", f)
		}
	}
}

// TestObserveKnowsWazero fails when wazero's compilation cache no longer
// has the structure Observe wraps (a file cache field of Get, Add and
// Delete, in a version dir): pruning would then age compiled code by when
// it was written, not read.
func TestObserveKnowsWazero(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	compile := func(g *Guard, n int) {
		t.Helper()
		end := g.Begin()
		defer end()
		cc, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close(ctx)
		if err := g.Observe(cc); err != nil {
			t.Fatalf("Observe: %v (wazero's compilation cache changed: update observe.go)", err)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cc))
		defer rt.Close(ctx)
		if _, err := rt.CompileModule(ctx, answer(t, n)); err != nil {
			t.Fatal(err)
		}
	}
	g, _ := openGuard(t, dir)
	compile(g, 1)
	compile(g, 2)
	list := entries(t, dir)
	if len(list) != 2 {
		t.Fatalf("want two compiled entries, got %v", list)
	}
	var names []string
	for _, e := range list {
		rel, _ := filepath.Rel(dir, e)
		names = append(names, filepath.ToSlash(rel))
	}
	slices.Sort(names)
	written := slices.Sorted(slices.Values(g.used))
	if !slices.Equal(written, names) {
		t.Fatalf("writes observed %v, want the entries %v", g.used, names)
	}
	first := g.used[0] // answer(1)'s entry
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	// A restart reads answer(1)'s entry: a hit, now the most recent use,
	// so a prune to one entry keeps it and removes answer(2)'s.
	g2, _ := openGuard(t, dir)
	compile(g2, 1)
	if !slices.Equal(g2.used, []string{first}) {
		t.Fatalf("reads observed %v, want [%s]", g2.used, first)
	}
	size := func(name string) int64 {
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return info.Size()
	}
	if _, err := g2.Prune(size(first)); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); len(got) != 1 || !strings.HasSuffix(filepath.ToSlash(got[0]), first) {
		t.Fatalf("after the prune: %v, want only %s", got, first)
	}
	// The index no longer lists the removed entry: a restart removes
	// nothing and warns of nothing.
	g3, log := openGuard(t, dir)
	_ = g3
	if strings.Contains(log.String(), "removed") {
		t.Fatalf("the restart after a prune found entries to remove:\n%s", log)
	}
}

func TestLoadThatGrowsTheCachePrunesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	g, _ := openGuard(t, dir)
	old := plant(t, dir, PartInstrumented, "old", 4000)
	g.Touch(old)
	g.SetMax(5000)
	end := g.Begin()
	// The load writes an entry of its own: the cache is now 8000 bytes.
	g.Wrote(plant(t, dir, PartInstrumented, "new", 4000))
	end()
	if exists(old) {
		t.Fatal("the load grew the cache past its bound and the least recently used entry stayed")
	}
	// A load that writes nothing does not prune, even over the bound.
	over := plant(t, dir, PartManifests, "over", 4000)
	end = g.Begin()
	end()
	if !exists(over) {
		t.Fatal("a load that wrote nothing pruned")
	}
}

func TestUsageJournal(t *testing.T) {
	a := "instrumented/" + strings.Repeat("a", 64) + ".wasm"
	b := "wazero-v1.12.0-amd64-linux/" + strings.Repeat("b", 64)
	uses := map[string]uint64{a: 3, b: 7}
	got := decodeUsage(encodeUsage(uses))
	if len(got) != 2 || got[a] != 3 || got[b] != 7 {
		t.Fatalf("round trip: %v", got)
	}
	for _, bad := range []string{
		"",
		"warden-cache-usage 2\n1 " + a + "\n",
		usageHeader + "01 " + a + "\n",
		usageHeader + "-1 " + a + "\n",
		usageHeader + "1 ../" + a + "\n",
		usageHeader + "1 " + a + " x\n",
		usageHeader + "99999999999999999999 " + a + "\n",
	} {
		if got := decodeUsage([]byte(bad)); len(got) != 0 {
			t.Errorf("decodeUsage(%q) = %v, want nothing", bad, got)
		}
	}
	// A bad line costs only itself.
	if got := decodeUsage([]byte(usageHeader + "x\n5 " + b + "\n")); got[b] != 5 {
		t.Fatalf("a good line after a bad one: %v", got)
	}
}

func FuzzDecodeUsage(f *testing.F) {
	f.Add(encodeUsage(map[string]uint64{"compiled/" + strings.Repeat("c", 64): 1}))
	f.Add([]byte(usageHeader + "1 manifests/../../x.manifest\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		uses := decodeUsage(data)
		for name := range uses {
			if !Prunable(name) || strings.Contains(name, "..") || strings.HasPrefix(name, "/") {
				t.Fatalf("decoded entry %q is not a cache entry", name)
			}
		}
		if again := decodeUsage(encodeUsage(uses)); len(again) != len(uses) {
			t.Fatalf("re-encoding lost entries: %v vs %v", again, uses)
		}
	})
}
