package serve

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// coldEnv is an env whose compile cache is a dir of its own, empty.
func coldEnv(t *testing.T, names ...string) (e *env, cache string) {
	t.Helper()
	e = newEnv(t, "", names...)
	cache = filepath.Join(e.dir, "cache")
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = bytes.Replace(cfg, []byte("cache_dir: "+built.cacheDir), []byte("cache_dir: "+cache), 1)
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return e, cache
}

// verbose runs the real binary (wardenCLI) with -v, info level: the
// "module compiled" line of every module load; it fails the test when
// warden exits non-zero.
func verbose(t *testing.T, e *env, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := wardenCLI(t, e, append(args, "-v")...)
	if code != 0 {
		t.Fatalf("warden %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

// compiledModules lists the modules of the "module compiled" lines of a
// warden's stderr (one per module load), sorted.
func compiledModules(stderr string) []string {
	var out []string
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, "module compiled") {
			continue
		}
		for field := range strings.FieldsSeq(line) {
			if m, ok := strings.CutPrefix(field, "module="); ok {
				out = append(out, m)
			}
		}
	}
	slices.Sort(out)
	return out
}

// cacheFiles lists every file under the cache dir (relative) with its size
// and modification time: a compile, an instrumentation or a manifest that
// misses the cache writes a file there.
func cacheFiles(t *testing.T, cache string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(cache, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(cache, path)
		if rel == "warden-codecache.lock" || rel == "warden-cache.usage" {
			return nil // taken at every start; the order of the entries' uses
		}
		files[rel] = fmt.Sprintf("%d bytes, %v", info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func manifestFiles(t *testing.T, cache string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "manifests", "*.manifest"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCallColdLoadsOnlyItsModule: `warden call echo` on an empty compile
// cache, beside two other modules, compiles echo's module alone (its one
// "module compiled" line, its one manifest stored) and answers.
func TestCallColdLoadsOnlyItsModule(t *testing.T) {
	t.Parallel()
	e, cache := coldEnv(t, "echo", "hostcalls", "state")
	stdout, stderr := verbose(t, e, "call", "echo", `{"text":"cold"}`)
	if !strings.Contains(stdout, `"text": "cold"`) {
		t.Fatalf("warden call echo printed:\n%s", stdout)
	}
	if got := compiledModules(stderr); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("modules compiled: %v, want [echo]\n%s", got, stderr)
	}
	if m := manifestFiles(t, cache); len(m) != 1 {
		t.Fatalf("manifests stored: %v, want echo's alone", m)
	}
}

// TestCacheWarmThenNothingCompiles: `warden cache warm` compiles every
// module into an empty cache; after it, `warden tools` and `warden call`
// load nothing the cache does not hold: no module loads to list, and the
// cache dir is left exactly as warm left it (a miss writes a file).
// `warden cache` then shows the dir and what it holds.
func TestCacheWarmThenNothingCompiles(t *testing.T) {
	t.Parallel()
	e, cache := coldEnv(t, "echo", "hostcalls", "state")
	stdout, stderr := verbose(t, e, "cache", "warm")
	if !strings.HasPrefix(stdout, "3 modules cached in "+cache+" (") {
		t.Fatalf("warden cache warm printed:\n%s", stdout)
	}
	if got := compiledModules(stderr); !slices.Equal(got, []string{"echo", "hostcalls", "state"}) {
		t.Fatalf("warm loaded %v, want every module once\n%s", got, stderr)
	}
	warm := cacheFiles(t, cache)
	if len(manifestFiles(t, cache)) != 3 {
		t.Fatalf("cache after warm: %v", warm)
	}

	stdout, stderr = verbose(t, e, "tools")
	if got := compiledModules(stderr); len(got) != 0 {
		t.Fatalf("warden tools after warm loaded %v, want none\n%s", got, stderr)
	}
	for _, name := range []string{"echo", "hostcalls", "state"} {
		if !strings.Contains(stdout, name) {
			t.Fatalf("warden tools after warm does not list %s:\n%s", name, stdout)
		}
	}
	stdout, _ = verbose(t, e, "call", "echo", `{"text":"warm"}`)
	if !strings.Contains(stdout, `"text": "warm"`) {
		t.Fatalf("warden call echo printed:\n%s", stdout)
	}
	if after := cacheFiles(t, cache); !maps.Equal(after, warm) {
		t.Fatalf("the cache changed after warm (something compiled):\nwarm:  %v\nafter: %v", warm, after)
	}

	stdout, _ = verbose(t, e, "cache")
	for _, want := range []string{cache + "\n", "manifests ", "instrumented ", "total "} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("warden cache does not show %q:\n%s", want, stdout)
		}
	}
}

// TestTamperedManifestRebuilt: a manifest altered in the cache (a byte of
// its body changed, so its checksum fails) or swapped for another module's
// (valid, but made for other bytes) is never used: the modules it names
// load again, each lists its own tools, and the manifest written in its
// place is the one a clean load writes.
func TestTamperedManifestRebuilt(t *testing.T) {
	t.Parallel()
	e, cache := coldEnv(t, "echo", "hostcalls", "state")
	verbose(t, e, "cache", "warm")
	files := manifestFiles(t, cache)
	if len(files) != 3 {
		t.Fatalf("manifests after warm: %v", files)
	}
	clean := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		clean[f] = b
	}
	// files[0]: one byte of its JSON body flipped (the checksum fails);
	// files[1] gets files[2]'s bytes (a valid manifest of another module).
	flipped := bytes.Clone(clean[files[0]])
	flipped[20] ^= 0x01
	if err := os.WriteFile(files[0], flipped, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[1], clean[files[2]], 0o600); err != nil {
		t.Fatal(err)
	}

	stdout, stderr := verbose(t, e, "tools")
	if got := compiledModules(stderr); len(got) != 2 {
		t.Fatalf("warden tools with two bad manifests loaded %v, want those two modules\n%s", got, stderr)
	}
	for _, name := range []string{"echo", "hostcalls", "state"} {
		if !strings.Contains(stdout, name) {
			t.Fatalf("warden tools does not list %s:\n%s", name, stdout)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Equal(b, clean[f]) {
			t.Errorf("%s after the reload: %v, %d bytes; want the clean manifest back", filepath.Base(f), err, len(b))
		}
	}
	// Rebuilt, the cache serves the next start whole again.
	_, stderr = verbose(t, e, "tools")
	if got := compiledModules(stderr); len(got) != 0 {
		t.Fatalf("warden tools after the rebuild loaded %v, want none\n%s", got, stderr)
	}
}

// TestCacheWarmRefusesForgedManifest: a manifest forged with a valid frame
// and checksum (anyone who can write the cache can compute one) that lists
// other tools than its module describes is caught by `warden cache warm`,
// which loads every module listed from a manifest: it exits 1 naming the
// manifest, and the next start lists the module's own tools.
func TestCacheWarmRefusesForgedManifest(t *testing.T) {
	t.Parallel()
	e, cache := coldEnv(t, "echo", "hostcalls")
	verbose(t, e, "cache", "warm")
	wasm, err := os.ReadFile(filepath.Join(e.tools, "echo.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	echoSum := sha256.Sum256(wasm)
	forged := ""
	for _, f := range manifestFiles(t, cache) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// magic (8), version (4), body length (4), JSON body, sha256.
		body := data[16 : len(data)-sha256.Size]
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m["module_sha256"] != hex.EncodeToString(echoSum[:]) {
			continue
		}
		m["descriptor"] = base64.StdEncoding.EncodeToString([]byte(
			`{"tools":[{"name":"impostor","description":"not echo","inputSchema":{"type":"object"}}]}`))
		body, err = json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out := append(bytes.Clone(data[:12]), binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
		out = append(out, body...)
		sum := sha256.Sum256(out)
		if err := os.WriteFile(f, append(out, sum[:]...), 0o600); err != nil {
			t.Fatal(err)
		}
		forged = f
	}
	if forged == "" {
		t.Fatal("no manifest of echo after warm")
	}
	// The forgery is well formed: a start lists what it says.
	stdout, _ := verbose(t, e, "tools")
	if !strings.Contains(stdout, "impostor") {
		t.Fatalf("the forged manifest was not read (the test forges badly):\n%s", stdout)
	}
	stdout, stderr, code := wardenCLI(t, e, "cache", "warm")
	if code != 1 || !strings.Contains(stderr, "describes itself differently than its cached descriptor manifest "+forged) {
		t.Fatalf("warden cache warm over a forged manifest: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, _ = verbose(t, e, "tools")
	if strings.Contains(stdout, "impostor") || !strings.Contains(stdout, "echo") {
		t.Fatalf("warden tools after the forgery was caught:\n%s", stdout)
	}
}
