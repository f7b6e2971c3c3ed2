package install

import (
	"bytes"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/tuf"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/sigverify/sigtest"
)

// TestTUFOptions: empty settings mean Sigstore's public-good repository and
// embedded root; the cache is the user cache dir's, one directory per
// repository URL, even for URLs tuf.URLToPath maps to the same name.
func TestTUFOptions(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", t.TempDir())

	opts := func(repoURL string, root []byte) *tuf.Options {
		t.Helper()
		o, err := tufOptions(repoURL, root)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	def := opts("", nil)
	if def.RepositoryBaseURL != tuf.DefaultMirror || !bytes.Equal(def.Root, tuf.DefaultRoot()) {
		t.Errorf("default options: %s, root of %d bytes", def.RepositoryBaseURL, len(def.Root))
	}
	if want := filepath.Join(cache, "warden", "sigstore-tuf", tuf.URLToPath(tuf.DefaultMirror)+"-"); !strings.HasPrefix(def.CachePath, want) {
		t.Errorf("default cache %s, want under %s*", def.CachePath, want)
	}

	own := opts("https://tuf.example.com/prod", []byte(`{"signed":{}}`))
	if own.RepositoryBaseURL != "https://tuf.example.com/prod" || string(own.Root) != `{"signed":{}}` {
		t.Errorf("options: %s, root %q", own.RepositoryBaseURL, own.Root)
	}
	if !strings.HasPrefix(filepath.Base(own.CachePath), "tuf.example.com-prod-") {
		t.Errorf("cache dir %s does not name the repository", own.CachePath)
	}

	for _, pair := range [][2]string{
		{"http://127.0.0.1:8080", "https://127.0.0.1:8080"},
		{"https://tuf.example.com/a/b-c", "https://tuf.example.com/a-b/c"},
		{"https://tuf.example.com/A", "https://tuf.example.com/a"},
	} {
		if tuf.URLToPath(pair[0]) != tuf.URLToPath(pair[1]) {
			t.Fatalf("URLToPath no longer maps %s and %s to one name: drop the case", pair[0], pair[1])
		}
		if a, b := opts(pair[0], nil).CachePath, opts(pair[1], nil).CachePath; a == b {
			t.Errorf("%s and %s share the cache %s", pair[0], pair[1], a)
		}
	}
}

// TestTUFOptionsWithoutCacheDir: a home that is the file system root gives
// no cache dir, and the TUF cache is refused rather than put in "/" or in
// the shared temporary directory sigstore-go falls back to.
func TestTUFOptionsWithoutCacheDir(t *testing.T) {
	if goruntime.GOOS == "windows" || goruntime.GOOS == "darwin" {
		t.Skip("the XDG cache rules are the ones under test")
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/")
	o, err := tufOptions("", nil)
	want := `TUF metadata cache for Sigstore: cache directory: the home directory is the file system root ("/") (and $XDG_CACHE_HOME is not set to an absolute path)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, %v; want %s", o, err, want)
	}
}

// TestTrustedRootCacheKey: the per-process trusted root is reused only
// while trusted_root, tuf_url and tuf_root's content are what fetched it.
func TestTrustedRootCacheKey(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	vs := sigtest.NewSigstore(t)
	dir := t.TempDir()
	repo := sigtest.TrustedRootTUF(t, vs, dir)
	other := sigtest.TrustedRootTUF(t, vs, t.TempDir())
	inst := &Installer{}
	tufCfg := func(url, root string) *config.Config {
		return &config.Config{Security: config.Security{TUFURL: url, TUFRoot: root}}
	}
	timestamps := func() int { return strings.Count(strings.Join(repo.Requests(), " "), "/timestamp.json") }

	first, err := inst.trustedRoot(tufCfg(repo.URL, repo.RootPath))
	if err != nil {
		t.Fatal(err)
	}
	again, err := inst.trustedRoot(tufCfg(repo.URL, repo.RootPath))
	if err != nil || again != first || timestamps() != 1 {
		t.Fatalf("second call: %v, same %v, %d refreshes", err, again == first, timestamps())
	}
	// Another initial root for the same URL is not served from the
	// process cache: the repository's metadata does not verify against it.
	if _, err := inst.trustedRoot(tufCfg(repo.URL, other.RootPath)); err == nil || !strings.Contains(err.Error(), repo.URL) {
		t.Fatalf("foreign tuf_root: %v", err)
	}
	// security.trusted_root wins over tuf_url: nothing is fetched.
	file := sigtest.TrustedRootFile(t, vs, t.TempDir())
	cfg := tufCfg("http://127.0.0.1:1", "")
	cfg.Security.TrustedRoot = file
	if _, err := inst.trustedRoot(cfg); err != nil {
		t.Fatal(err)
	}
	if n := timestamps(); n != 2 {
		t.Errorf("%d refreshes, want 2 (first fetch, foreign root)", n)
	}
}
