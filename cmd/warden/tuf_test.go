package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/tuf"

	"github.com/warden-run/warden/internal/sigverify/sigtest"
)

// trustedRootLine is the security.trusted_root line newRegistryEnv writes.
var trustedRootLine = regexp.MustCompile(`(?m)^  trusted_root: .*$`)

// useTUF rewrites e's config to take the trusted root through TUF: its
// security.trusted_root line becomes lines (each indented under security:),
// and the user cache dir (where the TUF client caches metadata) and home
// become private temp dirs, so no test reads or writes the real cache.
func (e *registryEnv) useTUF(t *testing.T, lines ...string) (cacheDir string) {
	t.Helper()
	body := readFile(t, e.cfgPath)
	if !trustedRootLine.Match(body) {
		t.Fatalf("no trusted_root line in\n%s", body)
	}
	body = trustedRootLine.ReplaceAll(body, []byte("  "+strings.Join(lines, "\n  ")))
	if err := os.WriteFile(e.cfgPath, body, 0o644); err != nil {
		t.Fatal(err)
	}
	cacheDir = t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cacheDir)
	t.Setenv("HOME", t.TempDir())
	return cacheDir
}

// TestInstallTrustedRootThroughTUF: with no security.trusted_root, a
// keyless-signed tool verifies against the trusted_root.json fetched
// through TUF from security.tuf_url, trusting security.tuf_root (relative
// to config.yaml): a real TUF repository on loopback whose target is the
// virtual Sigstore's trusted root. The target is fetched under its
// consistent-snapshot name, and the metadata is cached under the user cache
// dir in a directory of that repository's own.
func TestInstallTrustedRootThroughTUF(t *testing.T) {
	e := newRegistryEnv(t, "")
	digest := e.pushSigned(t, "acme/released", "1.0.0", e.v1)
	repo := sigtest.TrustedRootTUF(t, e.vs, filepath.Dir(e.cfgPath))
	cache := e.useTUF(t, "tuf_url: "+repo.URL, "tuf_root: "+filepath.Base(repo.RootPath))

	out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("acme/released", "1.0.0"))
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	for _, want := range []string{"Digest   " + digest, "verified: signed by " + signer, "source locked as tools.sources.released"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	reqs := repo.Requests()
	t.Logf("TUF requests: %v", reqs)
	trustedRoot := regexp.MustCompile(`^/targets/[0-9a-f]{64}\.trusted_root\.json$`)
	for _, want := range []string{"/timestamp.json", "/1.snapshot.json", "/1.targets.json"} {
		if !slices.Contains(reqs, want) {
			t.Errorf("TUF client never asked for %s: %v", want, reqs)
		}
	}
	if !slices.ContainsFunc(reqs, trustedRoot.MatchString) {
		t.Errorf("trusted_root.json not fetched by its consistent-snapshot name: %v", reqs)
	}
	// sigstore-go keeps a repository's metadata in <cache>/<URLToPath>;
	// warden's cache path adds <URLToPath>-<hash of the URL> above it.
	name := tuf.URLToPath(repo.URL)
	cached, _ := filepath.Glob(filepath.Join(cache, "warden", "sigstore-tuf", name+"-*", name, "targets", "trusted_root.json"))
	if len(cached) != 1 {
		ents, _ := filepath.Glob(filepath.Join(cache, "warden", "sigstore-tuf", "*", "*"))
		t.Errorf("trusted_root.json not cached in a directory of %s's own: %v", repo.URL, ents)
	}

	// A second command, with the metadata cached, refreshes through the
	// same repository: sync after the tools dir is lost verifies again.
	if err := os.RemoveAll(e.tools); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "", "-c", e.cfgPath, "sync"); err != nil || !strings.Contains(out, "verified: signed by "+signer) {
		t.Fatalf("sync: %v\n%s", err, out)
	}
	if n := strings.Count(strings.Join(repo.Requests(), " "), "/timestamp.json"); n != 2 {
		t.Errorf("timestamp.json asked for %d times in two commands, want 2: %v", n, repo.Requests())
	}
}

// TestInstallTUFRefusals: when the trusted root cannot be had through TUF,
// a keyless install fails naming the repository URL and the offline way
// out (security.trusted_root), and nothing is written.
func TestInstallTUFRefusals(t *testing.T) {
	var asked atomic.Int32
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer notFound.Close()

	t.Run("repository answers 404", func(t *testing.T) {
		e := newRegistryEnv(t, "")
		e.pushSigned(t, "acme/released", "1.0.0", e.v1)
		repo := sigtest.TrustedRootTUF(t, e.vs, t.TempDir())
		e.useTUF(t, "tuf_url: "+notFound.URL, "tuf_root: "+repo.RootPath)
		before := readFile(t, e.cfgPath)
		_, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("acme/released", "1.0.0"))
		if err == nil {
			t.Fatal("install succeeded without a trusted root")
		}
		for _, want := range []string{"through TUF from " + notFound.URL, "security.tuf_url", "set security.trusted_root in " + e.cfgPath} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
		e.unchanged(t, before)
	})

	// The repository serves well-formed metadata, but signed by keys the
	// configured root.json does not trust: TUF refuses it.
	t.Run("root of another repository", func(t *testing.T) {
		e := newRegistryEnv(t, "")
		e.pushSigned(t, "acme/released", "1.0.0", e.v1)
		repo := sigtest.TrustedRootTUF(t, e.vs, t.TempDir())
		other := sigtest.TrustedRootTUF(t, e.vs, t.TempDir())
		e.useTUF(t, "tuf_url: "+repo.URL, "tuf_root: "+other.RootPath)
		before := readFile(t, e.cfgPath)
		_, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("acme/released", "1.0.0"))
		if err == nil || !strings.Contains(err.Error(), "through TUF from "+repo.URL) || !strings.Contains(err.Error(), "security.trusted_root") {
			t.Fatalf("install with a foreign TUF root: %v", err)
		}
		if slices.ContainsFunc(repo.Requests(), func(p string) bool { return strings.HasPrefix(p, "/targets/") }) {
			t.Errorf("target fetched although the metadata did not verify: %v", repo.Requests())
		}
		e.unchanged(t, before)
	})

	// security.trusted_root wins: nothing is fetched, the install verifies.
	t.Run("trusted_root set", func(t *testing.T) {
		e := newRegistryEnv(t, "")
		e.pushSigned(t, "acme/released", "1.0.0", e.v1)
		body := strings.Replace(string(readFile(t, e.cfgPath)), "security:\n", "security:\n  tuf_url: "+notFound.URL+"\n", 1)
		if err := os.WriteFile(e.cfgPath, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		asked.Store(0)
		out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("acme/released", "1.0.0"))
		if err != nil || !strings.Contains(out, "verified: signed by "+signer) {
			t.Fatalf("install: %v\n%s", err, out)
		}
		if n := asked.Load(); n != 0 {
			t.Errorf("the TUF repository was asked %d times although security.trusted_root is set", n)
		}
	})
}
