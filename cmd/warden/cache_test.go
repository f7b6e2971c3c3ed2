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
