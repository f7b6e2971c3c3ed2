package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cacheProject writes a config whose tools.cache_dir is cacheDir.
func cacheProject(t *testing.T, cacheDir string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := "tools:\n  dir: tools\n  cache_dir: " + cacheDir + "\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCacheShowsItsParts: `warden cache` prints the dir, then the files
// and bytes of each part (the dir's own files as "(index, lock)"), sorted,
// and the total.
func TestCacheShowsItsParts(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	for path, size := range map[string]int{
		"manifests/a.manifest":       100,
		"manifests/b.manifest":       28,
		"instrumented/x.wasm":        3 << 20,
		"wazero-v1-amd64-linux/abcd": 2048,
		"warden-codecache.index":     10,
	} {
		path = filepath.Join(cache, path)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir := cacheProject(t, cache)
	stdout, stderr, code := runIn(t, dir, nil, "cache")
	want := cache + `
  (index, lock)                    1 file   10 B
  instrumented                     1 file   3.0 MiB
  manifests                        2 files  128 B
  wazero-v1-amd64-linux            1 file   2.0 KiB
  total                            5 files  3.0 MiB
  entries                          0 entries  0 B of 2.0 GiB (tools.cache_max; warden cache prune)
`
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("warden cache: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
}

// TestCacheOff: with tools.cache_dir off there is no cache to show or
// warm, and both say so.
func TestCacheOff(t *testing.T) {
	dir := cacheProject(t, "off")
	for _, args := range [][]string{{"cache"}, {"cache", "warm"}} {
		_, stderr, code := runIn(t, dir, nil, args...)
		if code != 1 || !strings.Contains(stderr, "the compile cache is off (tools.cache_dir: off)") {
			t.Errorf("warden %v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestCachePrune: `warden cache prune` removes whole entries, least
// recently used first (the usage journal's order; entries it does not
// name first), until they fit tools.cache_max, or --to; `warden cache`
// shows the entries against the bound. Sizes, not times: the entries are
// sparse files of 30 MiB.
func TestCachePrune(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "cache")
	hex := func(c string) string { return strings.Repeat(c, 64) }
	entries := map[string]string{ // name -> entry
		"unused": "manifests/" + hex("0") + ".manifest",
		"old":    "instrumented/" + hex("a") + ".wasm",
		"recent": "instrumented/" + hex("b") + ".wasm",
		"newest": "compiled/" + hex("c"),
	}
	for _, name := range entries {
		path := filepath.Join(cache, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(30 << 20); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	journal := "warden-cache-usage 1\n" +
		"3 " + entries["old"] + "\n" +
		"9 " + entries["recent"] + "\n" +
		"12 " + entries["newest"] + "\n"
	if err := os.WriteFile(filepath.Join(cache, "warden-cache.usage"), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := cacheProject(t, cache)
	config := filepath.Join(dir, "config.yaml")
	body, _ := os.ReadFile(config)
	if err := os.WriteFile(config, append(body, "  cache_max: 64MiB\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := func() (names []string) {
		for _, name := range []string{"unused", "old", "recent", "newest"} {
			if _, err := os.Stat(filepath.Join(cache, filepath.FromSlash(entries[name]))); err != nil {
				names = append(names, name)
			}
		}
		return names
	}

	stdout, stderr, code := runIn(t, dir, nil, "cache")
	if code != 0 || !strings.Contains(stdout, "  entries                          4 entries  120 MiB of 64 MiB (tools.cache_max; warden cache prune)\n") {
		t.Fatalf("warden cache: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, stderr, code = runIn(t, dir, nil, "cache", "prune")
	want := "removed 2 entries (60 MiB); " + cache + " now holds 2 entries, 60 MiB of 64 MiB\n"
	if code != 0 || stdout != want {
		t.Fatalf("warden cache prune: exit %d\n%s%s\nwant %s", code, stdout, stderr, want)
	}
	if got := strings.Join(gone(), ","); got != "unused,old" {
		t.Fatalf("pruned %s, want unused,old (the least recently used)", got)
	}
	stdout, _, code = runIn(t, dir, nil, "cache", "prune", "--to", "40MiB")
	if code != 0 || !strings.HasPrefix(stdout, "removed 1 entry (30 MiB);") || strings.Join(gone(), ",") != "unused,old,recent" {
		t.Fatalf("warden cache prune --to 40MiB: exit %d\n%s; gone %v", code, stdout, gone())
	}
	stdout, _, code = runIn(t, dir, nil, "cache", "prune", "--to", "0")
	if code != 0 || !strings.HasPrefix(stdout, "removed 1 entry (30 MiB);") || len(gone()) != 4 {
		t.Fatalf("warden cache prune --to 0: exit %d\n%s; gone %v", code, stdout, gone())
	}
	_, stderr, code = runIn(t, dir, nil, "cache", "prune", "--to", "lots")
	if code == 0 || !strings.Contains(stderr, `"lots" is not a size (write e.g. 128MiB)`) {
		t.Fatalf("--to lots: exit %d, stderr %q", code, stderr)
	}
}
