package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigstore/sigstore-go/pkg/testing/ca"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/oci/ocitest"
	"github.com/warden-run/warden/internal/sigverify/sigtest"
	"github.com/warden-run/warden/internal/testwasm"
)

const (
	signer = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
	oidc   = "https://token.actions.githubusercontent.com"
)

// registryEnv is a registry that requires credentials, a virtual Sigstore
// trusted through security.trusted_root, and a config whose policy for the
// registry's acme/* repositories is keyless signer/oidc.
type registryEnv struct {
	reg     *ocitest.Registry
	vs      *ca.VirtualSigstore
	cfgPath string
	tools   string
	v1, v2  []byte // the released tool: 1.0.0, and 2.0.0 requesting net
}

func newRegistryEnv(t *testing.T, extraConfig string) *registryEnv {
	t.Helper()
	return newRegistryEnvWrapped(t, extraConfig, nil)
}

// newRegistryEnvWrapped is newRegistryEnv with the registry's handler
// wrapped (ocitest.Start).
func newRegistryEnvWrapped(t *testing.T, extraConfig string, wrap func(http.Handler) http.Handler) *registryEnv {
	t.Helper()
	e := &registryEnv{reg: ocitest.Start(t, wrap), vs: sigtest.NewSigstore(t)}
	e.v1 = readFile(t, testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"version": "1.0.0"}))
	e.v2 = readFile(t, testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"version": "2.0.0", "host": "api.example.com"}))
	t.Setenv("DOCKER_CONFIG", e.reg.DockerConfigDir)
	// Fetches go to a private temp dir: it must be empty after every command.
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	root := sigtest.TrustedRootFile(t, e.vs, dir)
	cache, _ := os.UserCacheDir()
	e.cfgPath = filepath.Join(dir, "config.yaml")
	e.tools = filepath.Join(dir, "tools")
	body := fmt.Sprintf(`tools:
  dir: tools
  cache_dir: %s
  pins: {}
security:
  trusted_root: %s
  signatures:
    "%s/acme/*": {identity: %q, issuer: %q}
%s`, filepath.Join(cache, "warden"), root, e.reg.Host, signer, oidc, extraConfig)
	if err := os.WriteFile(e.cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// pushSigned pushes module to repo:tag in the CNCF layout, signed by signer.
func (e *registryEnv) pushSigned(t *testing.T, repo, tag string, module []byte) string {
	t.Helper()
	p := e.reg.Pusher(t, repo)
	m := p.WasmArtifact(module, tag)
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, oidc, m.Digest.String(), time.Now().Add(5*time.Minute)))
	return m.Digest.String()
}

func (e *registryEnv) ref(repo, tagOrDigest string) string {
	sep := ":"
	if strings.HasPrefix(tagOrDigest, "sha256:") {
		sep = "@"
	}
	return "oci://" + e.reg.Host + "/" + repo + sep + tagOrDigest
}

// unchanged asserts that a refused command left config, tools dir and
// temp dir as they were.
func (e *registryEnv) unchanged(t *testing.T, cfgBefore []byte) {
	t.Helper()
	if now := readFile(t, e.cfgPath); !bytes.Equal(now, cfgBefore) {
		t.Errorf("config changed:\n%s", now)
	}
	if ents, _ := os.ReadDir(e.tools); len(ents) > 0 {
		t.Errorf("tools dir not empty: %v", ents)
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) > 0 {
		t.Errorf("temp files left: %v", ents)
	}
}

// refused runs warden with args, which must fail with an error naming
// each of want and change nothing.
func (e *registryEnv) refused(t *testing.T, want []string, args ...string) {
	t.Helper()
	before := readFile(t, e.cfgPath)
	out, err := run(t, "", append([]string{"-c", e.cfgPath}, args...)...)
	if err == nil {
		t.Fatalf("warden %s succeeded:\n%s", strings.Join(args, " "), out)
	}
	t.Logf("refused: %v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	e.unchanged(t, before)
}

// TestInstallFromRegistry installs by tag and by digest in both layouts,
// from a registry that requires the credentials of the Docker config, and
// checks the lockfile entries install writes.
func TestInstallFromRegistry(t *testing.T) {
	e := newRegistryEnv(t, "")
	p := e.reg.Pusher(t, "acme/released")
	wasmDigest := e.pushSigned(t, "acme/released", "1.0.0", e.v1)
	img := p.HyperImage(e.v1, "image")
	p.Referrer(img, sigtest.KeylessBundle(t, e.vs, signer, oidc, img.Digest.String(), time.Now().Add(5*time.Minute)))

	for _, c := range []struct{ name, ref, digest, layout string }{
		{"cncf by tag", e.ref("acme/released", "1.0.0"), wasmDigest, "wasm"},
		{"cncf by digest", e.ref("acme/released", wasmDigest), wasmDigest, "wasm"},
		{"hyper-mcp image by tag", e.ref("acme/released", "image"), img.Digest.String(), "image"},
		{"hyper-mcp image by digest", e.ref("acme/released", img.Digest.String()), img.Digest.String(), "image"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", c.ref)
			if err != nil {
				t.Fatalf("install: %v\n%s", err, out)
			}
			for _, want := range []string{"Tool released", "Digest   " + c.digest, "verified: signed by " + signer, "source locked as tools.sources.released"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			cfg, err := config.Load(e.cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Tools.Sources["released"]; got.Ref != c.ref || got.Digest != c.digest {
				t.Errorf("tools.sources.released = %+v", got)
			}
			if cfg.Tools.Pins["released"] != sum(e.v1) {
				t.Errorf("pin %s, want %s", cfg.Tools.Pins["released"], sum(e.v1))
			}
			if got := readFile(t, filepath.Join(e.tools, "released.wasm")); !bytes.Equal(got, e.v1) {
				t.Error("installed bytes differ from the pushed module")
			}
			if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) > 0 {
				t.Errorf("temp files left: %v", ents)
			}
		})
	}
}

// TestInstallNeedsCredentials: without the Docker config's credentials
// the registry refuses, and the message says how to log in.
func TestInstallNeedsCredentials(t *testing.T) {
	e := newRegistryEnv(t, "")
	e.pushSigned(t, "acme/released", "1.0.0", e.v1)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	before := readFile(t, e.cfgPath)
	_, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("acme/released", "1.0.0"))
	if err == nil || !strings.Contains(err.Error(), "docker login "+e.reg.Host) {
		t.Fatalf("install without credentials: %v", err)
	}
	e.unchanged(t, before)
}

// TestInstallRefusals: every way a fetched module can be wrong is refused
// with a message naming what failed, and nothing is written: not the
// tools dir, not config.yaml, not a temp file.
func TestInstallRefusals(t *testing.T) {
	// tamper, when on, swaps the bytes of every application/wasm blob the
	// registry serves for a same-size forgery.
	tamper := false
	garbage := false
	e := &registryEnv{}
	e = newRegistryEnvWrapped(t, "", func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case garbage && strings.Contains(r.URL.Path, "/manifests/"):
				w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
				w.Write([]byte("\x00\x01<html>not a manifest"))
			case tamper && strings.Contains(r.URL.Path, "/blobs/"):
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				b := rec.Body.Bytes()
				if bytes.HasPrefix(b, []byte("\x00asm")) {
					b = append([]byte(nil), b...)
					b[len(b)-1] ^= 0xff
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(b)
			default:
				h.ServeHTTP(w, r)
			}
		})
	})
	later := time.Now().Add(5 * time.Minute)
	p := e.reg.Pusher(t, "acme/released")
	signed := p.WasmArtifact(e.v1, "signed")
	p.Referrer(signed, sigtest.KeylessBundle(t, e.vs, signer, oidc, signed.Digest.String(), later))

	unsigned := p.WasmArtifact(e.v1, "unsigned")
	_ = unsigned
	m := p.WasmArtifact(e.v1, "wrong-identity")
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, "https://github.com/mallory/tools/.github/workflows/x.yml@refs/heads/main", oidc, m.Digest.String(), later))
	m = p.WasmArtifact(e.v1, "wrong-issuer")
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, "https://accounts.example.com", m.Digest.String(), later))
	m = p.WasmArtifact(e.v1, "other-digest")
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, oidc, signed.Digest.String(), later))
	m = p.WasmArtifact(e.v1, "expired")
	// The virtual Fulcio's certificates are valid for 10 minutes; a log
	// entry 30 minutes from now is outside that.
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, oidc, m.Digest.String(), time.Now().Add(30*time.Minute)))
	m = p.WasmArtifact([]byte{0x00, 'a', 's', 'm', 0x0d, 0x00, 0x01, 0x00, 0x01}, "component")
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, oidc, m.Digest.String(), later))
	m = p.WasmArtifactAs(e.v1, "application/octet-stream", "wrong-media-type")
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, oidc, m.Digest.String(), later))
	other := e.reg.Pusher(t, "elsewhere/released")
	m = other.WasmArtifact(e.v1, "1.0.0")
	other.Referrer(m, sigtest.KeylessBundle(t, e.vs, signer, oidc, m.Digest.String(), later))

	for _, c := range []struct {
		name, ref string
		setup     func()
		want      []string
	}{
		{"unsigned under require", e.ref("acme/released", "unsigned"), nil,
			[]string{"unsigned", "no Sigstore bundle found", signer}},
		{"signer identity mismatch", e.ref("acme/released", "wrong-identity"), nil,
			[]string{"signer identity mismatch", "mallory", signer}},
		{"issuer mismatch", e.ref("acme/released", "wrong-issuer"), nil,
			[]string{"OIDC issuer mismatch", "accounts.example.com", oidc}},
		{"signature over another digest", e.ref("acme/released", "other-digest"), nil,
			[]string{"signature is over another digest", signed.Digest.String()}},
		{"expired certificate", e.ref("acme/released", "expired"), nil,
			[]string{"certificate not valid at signing time"}},
		{"component", e.ref("acme/released", "component"), nil,
			[]string{"WebAssembly component", "core"}},
		{"wrong media type", e.ref("acme/released", "wrong-media-type"), nil,
			[]string{"application/octet-stream", "application/wasm"}},
		{"no policy names the source", e.ref("elsewhere/released", "1.0.0"), nil,
			[]string{"no security.signatures pattern names " + e.reg.Host + "/elsewhere/released", "security.signature_mode is require", "mode: warn"}},
		{"past tools.fetch.max_size", e.ref("acme/released", "signed"), func() { t.Setenv("WARDEN_TOOLS_FETCH_MAX_SIZE", "1MiB") },
			[]string{"size limit exceeded", "1048576"}},
		{"tampered layer", e.ref("acme/released", "signed"), func() { os.Unsetenv("WARDEN_TOOLS_FETCH_MAX_SIZE"); tamper = true },
			[]string{"digest"}},
		{"registry answering garbage", e.ref("acme/released", "signed"), func() { tamper, garbage = false, true },
			[]string{"manifest"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup()
			}
			e.refused(t, c.want, "install", "--yes", c.ref)
		})
	}
}

// serveRelease serves files at paths on loopback over HTTP (the download
// rules allow plain HTTP to loopback only) and returns the base URL.
func serveRelease(t *testing.T, files map[string][]byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to, ok := strings.CutPrefix(r.URL.Path, "/moved/"); ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestInstallFromURL: a release download with a key-signed bundle beside
// it installs and is locked by its sha256; a redirect to another host, a
// file past tools.fetch.max_size, a bundle by another key and a file with
// no bundle are refused, leaving nothing behind.
func TestInstallFromURL(t *testing.T) {
	sign, pub := sigtest.ECDSAKey(t)
	_, otherPub := sigtest.ECDSAKey(t)
	e := newRegistryEnv(t, "")
	keyFile := filepath.Join(filepath.Dir(e.cfgPath), "acme.pub")
	otherKey := filepath.Join(filepath.Dir(e.cfgPath), "other.pub")
	os.WriteFile(keyFile, pub, 0o644)
	os.WriteFile(otherKey, otherPub, 0o644)
	digest := "sha256:" + sum(e.v1)
	bundle := sigtest.KeyBundle(t, sign, digest)
	base := serveRelease(t, map[string][]byte{
		"/v1/released.wasm": e.v1, "/v1/released.wasm.sigstore.json": bundle,
		"/unsigned/released.wasm": e.v1,
	})
	host := strings.TrimPrefix(base, "http://")
	// The same server under another name: a different host.
	otherHost := "localhost:" + host[strings.LastIndexByte(host, ':')+1:]
	cfg := readFile(t, e.cfgPath)
	// withPolicy trusts acme.pub for host and other.pub for otherHost;
	// fetch, if set, is a tools.fetch value.
	withPolicy := func(t *testing.T, fetch string) {
		t.Helper()
		b := append(append([]byte(nil), cfg...), []byte(fmt.Sprintf("    %q: {key: %s}\n    %q: {key: %s}\n", host+"/*", keyFile, otherHost+"/*", otherKey))...)
		if fetch != "" {
			b = bytes.Replace(b, []byte("tools:\n"), []byte("tools:\n  fetch: "+fetch+"\n"), 1)
		}
		if err := os.WriteFile(e.cfgPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("refused", func(t *testing.T) {
		for _, c := range []struct {
			name, url, extra string
			want             []string
		}{
			{"redirect to another host", base + "/moved/http://" + otherHost + "/v1/released.wasm", "",
				[]string{"redirect", host, otherHost, "tools.fetch.redirect_hosts"}},
			{"past the size limit", base + "/v1/released.wasm", "{max_size: 1MiB}",
				[]string{"tools.fetch.max_size"}},
			{"no bundle beside it", base + "/unsigned/released.wasm", "",
				[]string{"no Sigstore bundle", "public key"}},
			{"signed by another key", "http://" + otherHost + "/v1/released.wasm", "",
				[]string{"bad signature"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				withPolicy(t, c.extra)
				e.refused(t, c.want, "install", "--yes", c.url)
			})
		}
	})

	t.Run("valid", func(t *testing.T) {
		withPolicy(t, "")
		out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", base+"/v1/released.wasm")
		if err != nil {
			t.Fatalf("install: %v\n%s", err, out)
		}
		if !strings.Contains(out, "verified: signed with the public key") {
			t.Errorf("output:\n%s", out)
		}
		c, err := config.Load(e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Tools.Sources["released"]; got.Ref != base+"/v1/released.wasm" || got.Digest != digest {
			t.Errorf("tools.sources.released = %+v", got)
		}
	})

	t.Run("redirect allowed by config", func(t *testing.T) {
		withPolicy(t, fmt.Sprintf("{redirect_hosts: [%q]}", otherHost))
		out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", base+"/moved/http://"+otherHost+"/v1/released.wasm")
		// The bytes come from the other host, but the bundle is fetched
		// beside the URL installed from and the policy is the first host's.
		if err != nil {
			t.Fatalf("install: %v\n%s", err, out)
		}
	})
}

// TestSync: on a new machine (an empty tools dir) sync fetches exactly the
// locked digests, even after the tag moved; a second sync changes
// nothing; a lockfile naming a digest the registry lacks, or a pin that
// does not match what the digest holds, fails without writing.
func TestSync(t *testing.T) {
	e := newRegistryEnv(t, "")
	e.pushSigned(t, "acme/released", "latest", e.v1)
	ref := e.ref("acme/released", "latest")
	if out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", ref); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	locked := readFile(t, e.cfgPath)
	e.pushSigned(t, "acme/released", "latest", e.v2) // the tag moves on
	if err := os.RemoveAll(e.tools); err != nil {
		t.Fatal(err)
	}

	out, err := run(t, "", "-c", e.cfgPath, "sync")
	if err != nil || !strings.Contains(out, "released: fetched "+ref) || !strings.Contains(out, "verified: signed by") {
		t.Fatalf("sync: %v\n%s", err, out)
	}
	if got := readFile(t, filepath.Join(e.tools, "released.wasm")); !bytes.Equal(got, e.v1) {
		t.Fatal("sync fetched other bytes than the locked digest's")
	}
	if !bytes.Equal(readFile(t, e.cfgPath), locked) {
		t.Error("sync changed config.yaml")
	}
	out, err = run(t, "", "-c", e.cfgPath, "sync")
	if err != nil || strings.TrimSpace(out) != "released: up to date" {
		t.Fatalf("second sync: %v\n%s", err, out)
	}

	t.Run("refused", func(t *testing.T) {
		cfg, err := config.Load(e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		lockedDigest := cfg.Tools.Sources["released"].Digest
		for _, c := range []struct {
			name, from, to string
			want           []string
		}{
			{"digest the registry lacks", lockedDigest, "sha256:" + strings.Repeat("0", 64), []string{"sha256:" + strings.Repeat("0", 64)}},
			{"pin differs from the digest's module", sum(e.v1), sum(e.v2), []string{"tools.pins.released is " + sum(e.v2), "refused, nothing written"}},
			{"pinned module without a source", "  sources:", "  other_sources:", nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				if err := os.WriteFile(e.cfgPath, bytes.Replace(locked, []byte(c.from), []byte(c.to), 1), 0o644); err != nil {
					t.Fatal(err)
				}
				os.RemoveAll(e.tools)
				before := readFile(t, e.cfgPath)
				out, err := run(t, "", "-c", e.cfgPath, "sync")
				if c.want == nil { // an invalid key: the config names it
					if err == nil || !strings.Contains(err.Error(), "other_sources") {
						t.Fatalf("sync with an unknown key: %v\n%s", err, out)
					}
					return
				}
				if err == nil || !strings.Contains(out, "released: FAILED") {
					t.Fatalf("sync succeeded:\n%s", out)
				}
				for _, w := range c.want {
					if !strings.Contains(out, w) {
						t.Errorf("output lacks %q:\n%s", w, out)
					}
				}
				e.unchanged(t, before)
			})
		}
	})
}

// TestSyncLocalModuleMissing: a module pinned but installed from a local
// file cannot be fetched: sync says so and fails.
func TestSyncLocalModuleMissing(t *testing.T) {
	cfgPath, echo := setup(t)
	if out, err := run(t, "", "-c", cfgPath, "install", "--yes", "--name", "echo", echo); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	os.RemoveAll(filepath.Join(filepath.Dir(cfgPath), "tools"))
	out, err := run(t, "", "-c", cfgPath, "sync")
	if err == nil || !strings.Contains(out, "echo: FAILED") || !strings.Contains(out, "installed from a local file") {
		t.Fatalf("sync: %v\n%s", err, out)
	}
}

// TestUpdate: an update that requests more capabilities is shown as such
// and not applied with --yes alone; with --accept-capabilities it is, and
// the lockfile follows; then the module is up to date. A local module has
// nothing to update from.
func TestUpdate(t *testing.T) {
	e := newRegistryEnv(t, "")
	first := e.pushSigned(t, "acme/released", "latest", e.v1)
	ref := e.ref("acme/released", "latest")
	if out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", ref); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	out, err := run(t, "", "-c", e.cfgPath, "update", "--yes")
	if err != nil || !strings.Contains(out, "released: up to date ("+ref+" at "+first+")") {
		t.Fatalf("update with nothing new: %v\n%s", err, out)
	}

	second := e.pushSigned(t, "acme/released", "latest", e.v2)
	before := readFile(t, e.cfgPath)
	installed := readFile(t, filepath.Join(e.tools, "released.wasm"))
	out, err = run(t, "", "-c", e.cfgPath, "update")
	if err == nil || !strings.Contains(out, "pass --yes") {
		t.Fatalf("update without --yes off a terminal: %v\n%s", err, out)
	}
	out, err = run(t, "", "-c", e.cfgPath, "update", "--yes")
	t.Logf("update --yes:\n%s", out)
	for _, want := range []string{"moved from " + first + " to " + second, "changed released (version, capabilities)", "+ requests net=api.example.com",
		"tool released requests net=api.example.com;", "--accept-capabilities", "NOT UPDATED"} {
		if !strings.Contains(out, want) {
			t.Errorf("update --yes output lacks %q:\n%s", want, out)
		}
	}
	if err == nil {
		t.Fatal("update --yes applied an update that requests more")
	}
	if !bytes.Equal(readFile(t, e.cfgPath), before) || !bytes.Equal(readFile(t, filepath.Join(e.tools, "released.wasm")), installed) {
		t.Fatal("a refused update changed config or the module")
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) > 0 {
		t.Errorf("temp files left: %v", ents)
	}

	out, err = run(t, "", "-c", e.cfgPath, "update", "--yes", "--accept-capabilities", "released")
	if err != nil || !strings.Contains(out, "released: updated to "+second) {
		t.Fatalf("update --accept-capabilities: %v\n%s", err, out)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if src := cfg.Tools.Sources["released"]; src.Digest != second || src.Ref != ref || cfg.Tools.Pins["released"] != sum(e.v2) {
		t.Errorf("lockfile after update: %+v pin %s", src, cfg.Tools.Pins["released"])
	}
	if !bytes.Equal(readFile(t, filepath.Join(e.tools, "released.wasm")), e.v2) {
		t.Error("the module was not replaced")
	}
	out, err = run(t, "", "-c", e.cfgPath, "update", "--yes")
	if err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("update after update: %v\n%s", err, out)
	}
	out, err = run(t, "", "-c", e.cfgPath, "update", "nosuch")
	if err == nil || !strings.Contains(out, "tools.sources has no entry") {
		t.Fatalf("update of an unknown module: %v\n%s", err, out)
	}
}

// TestUpdateRefusesInternalHostsAndDroppedTopics: an update whose tool
// newly names loopback and private hosts beside "*", and drops its memory
// topic limit, requests more; --yes alone refuses it, naming each new
// request, and writes nothing.
func TestUpdateRefusesInternalHostsAndDroppedTopics(t *testing.T) {
	e := newRegistryEnv(t, "")
	v1 := readFile(t, testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"version": "1.0.0", "host": "*", "memory": "read", "topics": "notes"}))
	v2 := readFile(t, testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"version": "2.0.0",
		"host": "*,https://127.0.0.1,10.0.0.7,localhost", "memory": "read"}))
	e.pushSigned(t, "acme/released", "latest", v1)
	ref := e.ref("acme/released", "latest")
	if out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", ref); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	e.pushSigned(t, "acme/released", "latest", v2)
	cfgBefore := readFile(t, e.cfgPath)
	toolsBefore := dirContents(t, e.tools)
	out, err := run(t, "", "-c", e.cfgPath, "update", "--yes")
	t.Logf("update --yes:\n%s", out)
	if err == nil {
		t.Fatal("update --yes applied an update that newly requests internal hosts and the whole memory store")
	}
	internal := ` (an internal host, which "*" never covers)`
	for _, want := range []string{
		"+ requests net=https://127.0.0.1" + internal,
		"+ requests net=10.0.0.7" + internal,
		"+ requests net=localhost" + internal,
		"+ requests memory=read over every topic (the whole store)",
		"NOT UPDATED: its tools request more capabilities than the installed version (or a tool it adds is granted some already), which --yes alone does not approve: " +
			"tool released requests memory=read over every topic (the whole store), net=https://127.0.0.1" + internal +
			", net=10.0.0.7" + internal + ", net=localhost" + internal + "; run it on a terminal to decide, or pass --accept-capabilities too; nothing changed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("update --yes output lacks %q", want)
		}
	}
	if !bytes.Equal(readFile(t, e.cfgPath), cfgBefore) {
		t.Errorf("a refused update changed config.yaml:\n%s", readFile(t, e.cfgPath))
	}
	if got := dirContents(t, e.tools); !maps.EqualFunc(got, toolsBefore, bytes.Equal) {
		t.Errorf("a refused update changed the tools dir: %d files, was %d", len(got), len(toolsBefore))
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) > 0 {
		t.Errorf("temp files left: %v", ents)
	}
	// With --accept-capabilities the person has approved it.
	if out, err := run(t, "", "-c", e.cfgPath, "update", "--yes", "--accept-capabilities"); err != nil || !strings.Contains(out, "released: updated to") {
		t.Fatalf("update --accept-capabilities: %v\n%s", err, out)
	}
}

// dirContents is every file under dir by relative path.
func dirContents(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = readFile(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestUpdateRefusesBadSignature: an update whose signature does not verify
// is never installed, whatever the flags.
func TestUpdateRefusesBadSignature(t *testing.T) {
	e := newRegistryEnv(t, "")
	e.pushSigned(t, "acme/released", "latest", e.v1)
	if out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("acme/released", "latest")); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	p := e.reg.Pusher(t, "acme/released")
	m := p.WasmArtifact(e.v2, "latest")
	p.Referrer(m, sigtest.KeylessBundle(t, e.vs, "https://github.com/mallory/x/.github/workflows/r.yml@refs/heads/main", oidc, m.Digest.String(), time.Now().Add(5*time.Minute)))
	before := readFile(t, e.cfgPath)
	out, err := run(t, "", "-c", e.cfgPath, "update", "--yes", "--accept-capabilities")
	if err == nil || !strings.Contains(out, "signer identity mismatch") {
		t.Fatalf("update signed by another: %v\n%s", err, out)
	}
	if !bytes.Equal(readFile(t, e.cfgPath), before) || !bytes.Equal(readFile(t, filepath.Join(e.tools, "released.wasm")), e.v1) {
		t.Fatal("a refused update changed config or the module")
	}
}

// TestInstallWarnMode: under mode warn a module nobody is trusted to sign
// installs, and the review and the lock say it is not verified.
func TestInstallWarnMode(t *testing.T) {
	e := newRegistryEnv(t, "  signature_mode: warn\n")
	p := e.reg.Pusher(t, "elsewhere/released")
	p.WasmArtifact(e.v1, "1.0.0")
	out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", e.ref("elsewhere/released", "1.0.0"))
	if err != nil {
		t.Fatalf("install under warn: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Signed   NOT VERIFIED: no security.signatures pattern names "+e.reg.Host+"/elsewhere/released") {
		t.Errorf("review does not say it is unverified:\n%s", out)
	}
	if !strings.Contains(out, "\nSigner   unsigned\n") || !strings.Contains(out, ", signer unsigned\n") {
		t.Errorf("review and lock line do not say unsigned:\n%s", out)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Tools.Sources["released"].Signer; got != "unsigned" {
		t.Errorf("tools.sources.released.signer = %q, want unsigned", got)
	}
}

// releaseServer serves files on loopback over HTTP and records every path
// requested, as the server received it; a path under /redirect/ answers
// 302 with the Location the test set for it.
type releaseServer struct {
	host      string // 127.0.0.1:PORT
	mu        sync.Mutex
	requested []string
	files     map[string][]byte
	locations map[string]string
}

func startReleaseServer(t *testing.T, files map[string][]byte, locations map[string]string) *releaseServer {
	t.Helper()
	s := &releaseServer{files: files, locations: locations}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requested = append(s.requested, r.URL.RawPath+"|"+r.RequestURI)
		s.mu.Unlock()
		if loc, ok := s.locations[r.URL.Path]; ok {
			w.Header()["Location"] = []string{loc}
			w.WriteHeader(http.StatusFound)
			return
		}
		b, ok := s.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	s.host = strings.TrimPrefix(srv.URL, "http://")
	return s
}

// paths returns the request targets received since the last call.
func (s *releaseServer) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, r := range s.requested {
		_, uri, _ := strings.Cut(r, "|")
		out = append(out, uri)
	}
	s.requested = nil
	return out
}

// appendConfig adds lines to the end of the config (its security.signatures
// map is last).
func (e *registryEnv) appendConfig(t *testing.T, lines string) {
	t.Helper()
	f, err := os.OpenFile(e.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
}

// real runs the real binary with e's config, from its directory.
func (e *registryEnv) real(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runIn(t, filepath.Dir(e.cfgPath), nil, append([]string{"-c", e.cfgPath, "--log-level", "debug"}, args...)...)
}

// refusedReal runs the real binary, which must fail saying each of want
// on stderr and change nothing: config, tools dir, temp dir.
func (e *registryEnv) refusedReal(t *testing.T, want []string, args ...string) (stdout, stderr string) {
	t.Helper()
	before := readFile(t, e.cfgPath)
	stdout, stderr, code := e.real(t, args...)
	if code == 0 {
		t.Fatalf("warden %s succeeded:\n%s%s", strings.Join(args, " "), stdout, stderr)
	}
	t.Logf("refused (exit %d): %s", code, stderr)
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	e.unchanged(t, before)
	return stdout, stderr
}

// TestInstallURLIsCanonical: the signature policy is matched on the path
// the server is asked for. https://HOST/trusted/../evil/tool.wasm is
// /evil/tool.wasm to the policy, to the server and to the lockfile: under a
// policy that turns signatures off for HOST/trusted/* only, it is refused
// as the unsigned /evil/tool.wasm it is, and the server saw only that
// path. A form no single path can stand for (an encoded slash) is refused
// before any request. Under a policy for HOST/evil/*, the same URL
// installs, verified, and the lockfile records the canonical URL.
func TestInstallURLIsCanonical(t *testing.T) {
	wardenBinary(t) // built before newRegistryEnv points TMPDIR at a dir that must stay empty
	sign, pub := sigtest.ECDSAKey(t)
	e := newRegistryEnv(t, "")
	keyFile := filepath.Join(filepath.Dir(e.cfgPath), "evil.pub")
	if err := os.WriteFile(keyFile, pub, 0o644); err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + sum(e.v1)
	srv := startReleaseServer(t, map[string][]byte{
		"/evil/released.wasm":                e.v1,
		"/evil/released.wasm.sigstore.json":  sigtest.KeyBundle(t, sign, digest),
		"/trusted/released.wasm":             e.v1,
		"/TRUSTED/released.wasm":             e.v1,
		"/trusted/..%2Fevil/released.wasm":   e.v1,
		"/trusted/../evil/released.wasm":     e.v1,
		"/trusted/..;/evil/released.wasm":    e.v1,
		"/trusted/%2E%2E/evil/released.wasm": e.v1,
	}, nil)
	srv.locations = map[string]string{
		"/trusted/go":                     "/evil/released.wasm",
		"/evil/latest.wasm":               "/evil/released.wasm",
		"/evil/latest.wasm.sigstore.json": "/evil/released.wasm.sigstore.json",
	}
	e.appendConfig(t, fmt.Sprintf("    %q: {mode: \"off\"}\n", srv.host+"/trusted/*"))

	t.Run("dot segments escape no policy", func(t *testing.T) {
		for _, u := range []string{
			"http://" + srv.host + "/trusted/../evil/released.wasm",
			"http://" + srv.host + "/trusted/%2E%2E/evil/released.wasm",
			"http://" + srv.host + "/trusted/%2e./evil/released.wasm",
			"http://" + srv.host + "/trusted/./x/../../evil/released.wasm",
		} {
			e.refusedReal(t, []string{
				"signature policy refused the module: no security.signatures pattern names " + srv.host + "/evil/released.wasm, so nobody is trusted to sign it",
			}, "install", "--yes", u)
			if got := srv.paths(); !slices.Equal(got, []string{"/evil/released.wasm"}) {
				t.Errorf("%s: the server was asked for %q, want only the path matched, /evil/released.wasm", u, got)
			}
		}
	})

	t.Run("a path in other case is another path", func(t *testing.T) {
		e.refusedReal(t, []string{
			"no security.signatures pattern names " + srv.host + "/TRUSTED/released.wasm, so nobody is trusted to sign it",
		}, "install", "--yes", "http://"+srv.host+"/TRUSTED/released.wasm")
		srv.paths()
	})

	t.Run("forms with no single path are refused before any request", func(t *testing.T) {
		for u, why := range map[string]string{
			"http://" + srv.host + "/trusted/..%2Fevil/released.wasm":  "an encoded / (%2F) in the path",
			"http://" + srv.host + "/trusted/..%5Cevil/released.wasm":  `an encoded \ (%5C) in the path`,
			"http://" + srv.host + "/trusted/..;/evil/released.wasm":   "path segment ..; is a dot segment with a parameter, which some servers resolve as ..",
			"http://" + srv.host + "/trusted/%252E%252E/released.wasm": "an encoded % (%25) in the path",
			"http://" + srv.host + "/trusted/released.wasm#x":          "it carries a #fragment, which is never sent to the server",
		} {
			e.refusedReal(t, []string{"URL refused: " + why}, "install", "--yes", u)
			if got := srv.paths(); len(got) > 0 {
				t.Errorf("%s: requests were made: %q", u, got)
			}
		}
	})

	t.Run("a redirect within the host does not borrow the policy", func(t *testing.T) {
		e.refusedReal(t, []string{
			"redirect refused: http://" + srv.host + "/trusted/go redirected to http://" + srv.host + "/evil/released.wasm: " +
				"security.signatures matches the target with no pattern (security.signature_mode), not \"" + srv.host + "/trusted/*\" as the URL",
		}, "install", "--yes", "http://"+srv.host+"/trusted/go")
		if got := srv.paths(); !slices.Equal(got, []string{"/trusted/go"}) {
			t.Errorf("requests: %q", got)
		}
	})

	t.Run("the canonical URL is matched, fetched and recorded", func(t *testing.T) {
		e.appendConfig(t, fmt.Sprintf("    %q: {key: %s}\n", srv.host+"/evil/*", keyFile))
		stdout, stderr, code := e.real(t, "install", "--yes", "HTTP://"+srv.host+"/trusted/./../evil/%72eleased.wasm")
		if code != 0 {
			t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
		}
		canonical := "http://" + srv.host + "/evil/released.wasm"
		for _, want := range []string{
			"From     " + canonical + "\n",
			"verified: signed with the public key sha256:", "of policy security.signatures.\"" + srv.host + "/evil/*\"",
			"source locked as tools.sources.released: " + canonical + " at " + digest,
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
		if got := srv.paths(); !slices.Equal(got, []string{"/evil/released.wasm", "/evil/released.wasm.sigstore.json"}) {
			t.Errorf("requests: %q", got)
		}
		cfg, err := config.Load(e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Tools.Sources["released"]; got.Ref != canonical || got.Digest != digest {
			t.Errorf("tools.sources.released = %+v, want ref %s", got, canonical)
		}
		// The signer recorded is the configured key that verified, by its
		// fingerprint (sha256 of its DER), not the bundle's own key hint.
		block, _ := pem.Decode(pub)
		fp := sha256.Sum256(block.Bytes)
		if got, want := cfg.Tools.Sources["released"].Signer, "key sha256:"+hex.EncodeToString(fp[:]); got != want {
			t.Errorf("tools.sources.released.signer = %q, want %q (the bundle's hint is \"acme-release\")", got, want)
		}
		// A redirect that stays under the pattern the URL matched is followed.
		stdout, stderr, code = e.real(t, "install", "--yes", "--name", "released", "http://"+srv.host+"/evil/latest.wasm")
		if code != 0 || !strings.Contains(stdout, "verified: signed with the public key") {
			t.Fatalf("install through a redirect under the same pattern: exit %d\n%s%s", code, stdout, stderr)
		}
	})
}

// TestCredentialsNeverShown: a URL with user:password@ is refused, and the
// password appears in no byte warden writes: stdout, stderr (debug logs
// included), config.yaml, the tools dir, the temp dir. That holds for the
// URL typed, for one whose password holds a / (which the URL parser reads
// as a host and a port), for a redirect to a URL with credentials, for a
// Location header with credentials that does not parse, and for a
// lockfile holding one (sync, update, tools).
func TestCredentialsNeverShown(t *testing.T) {
	wardenBinary(t) // built before newRegistryEnv points TMPDIR at a dir that must stay empty
	const pw = "s3cretPW42"
	e := newRegistryEnv(t, "")
	srv := startReleaseServer(t, map[string][]byte{"/v1/released.wasm": e.v1}, nil)
	srv.locations = map[string]string{
		"/redirect/creds":  "http://user:" + pw + "@" + srv.host + "/v1/released.wasm",
		"/redirect/badloc": "http://user:" + pw + "/x@" + srv.host + "/%zz",
	}
	e.appendConfig(t, fmt.Sprintf("    %q: {mode: \"off\"}\n", srv.host+"/*"))
	dir := filepath.Dir(e.cfgPath)
	noSecret := func(t *testing.T, outputs ...string) {
		t.Helper()
		for _, o := range outputs {
			if strings.Contains(o, pw) || strings.Contains(o, "s3cret") {
				t.Errorf("output shows the password:\n%s", o)
			}
		}
		for _, root := range []string{dir, os.Getenv("TMPDIR")} {
			filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && bytes.Contains(readFile(t, p), []byte(pw)) && p != e.cfgPath {
					t.Errorf("%s holds the password", p)
				}
				return nil
			})
		}
	}
	for _, c := range []struct {
		name, url string
		want      []string
	}{
		{"userinfo", "http://user:" + pw + "@" + srv.host + "/v1/released.wasm",
			[]string{"warden: http://" + srv.host + "/v1/released.wasm: insecure URL refused: the URL carries credentials (user@ or user:password@)"}},
		{"token alone", "http://" + pw + "@" + srv.host + "/v1/released.wasm",
			[]string{"warden: http://" + srv.host + "/v1/released.wasm: insecure URL refused: the URL carries credentials"}},
		{"password with a slash", "http://user:" + pw + "/x@" + srv.host + "/v1/released.wasm",
			[]string{"warden: (an unparsable URL, not shown as it may carry credentials): insecure URL refused: not a URL, and it has an @"}},
		{"password after a slash", "https://user/" + pw + "@" + srv.host + "/v1/released.wasm",
			[]string{"warden: https://… (not shown: it has an @ after the host, so it may carry credentials): URL refused: an @ outside the host part"}},
		{"token with a ?", "https://ghp" + pw + "?x@" + srv.host + "/v1/released.wasm",
			[]string{"warden: https://… (not shown: it has an @ after the host, so it may carry credentials): URL refused: the query: an @ outside the host part"}},
		{"password with a #", "https://user:1234" + pw + "#x@" + srv.host + "/v1/released.wasm",
			[]string{"warden: (an unparsable URL, not shown as it may carry credentials)"}},
		{"numeric password with a #", "https://user:98765#" + pw + "@" + srv.host + "/v1/released.wasm",
			[]string{"warden: https://… (not shown: it has an @ after the host, so it may carry credentials): URL refused"}},
		{"redirect to credentials", "http://" + srv.host + "/redirect/creds",
			[]string{"redirect refused: to http://" + srv.host + "/v1/released.wasm: insecure URL refused: the URL carries credentials"}},
		{"unparsable Location with credentials", "http://" + srv.host + "/redirect/badloc",
			[]string{"the server redirected to a Location that is not a URL and has an @ (not shown: it may carry credentials)"}},
		{"registry reference", "oci://user:" + pw + "@" + e.reg.Host + "/acme/released:1.0.0",
			[]string{"warden: oci://[redacted]@" + e.reg.Host + "…: the reference carries credentials (user:password@); log in with docker login instead"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr := e.refusedReal(t, c.want, "install", "--yes", c.url)
			noSecret(t, stdout, stderr)
		})
	}
	t.Run("publish", func(t *testing.T) {
		module := filepath.Join(dir, "released.wasm")
		if err := os.WriteFile(module, e.v1, 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr := e.refusedReal(t, []string{"oci://[redacted]@" + e.reg.Host + "…: the reference carries credentials"},
			"publish", module, "oci://user:"+pw+"@"+e.reg.Host+"/acme/released:1.0.0")
		noSecret(t, stdout, stderr)
	})

	t.Run("a lockfile holding credentials", func(t *testing.T) {
		srv.paths() // the install attempts' requests
		locked := readFile(t, e.cfgPath)
		lock := fmt.Sprintf("  sources:\n    released: {ref: %q, digest: %q}\n  pins: {released: %s}\n",
			"http://user:"+pw+"@"+srv.host+"/v1/released.wasm", "sha256:"+sum(e.v1), sum(e.v1))
		if err := os.WriteFile(e.cfgPath, bytes.Replace(locked, []byte("  pins: {}\n"), []byte(lock), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"sync"}, {"update", "--yes"}, {"tools"}} {
			stdout, stderr := e.refusedReal(t, []string{
				"tools.sources.released.ref: http://" + srv.host + "/v1/released.wasm: insecure URL refused: the URL carries credentials",
			}, args...)
			noSecret(t, stdout, stderr)
		}
		if got := srv.paths(); len(got) > 0 {
			t.Errorf("requests were made: %q", got)
		}
	})
}

// TestSyncKeepsModuleNameCase: config keys reach warden in lower case, a
// module's file keeps its case. After install --name Released, sync finds
// Released.wasm (no second released.wasm, no collision), on a new machine
// writes Released.wasm again (the lockfile records the name), and refuses
// to choose between two files differing only in case; a local MyTool.wasm
// is not reported missing.
func TestSyncKeepsModuleNameCase(t *testing.T) {
	wardenBinary(t) // built before newRegistryEnv points TMPDIR at a dir that must stay empty
	e := newRegistryEnv(t, "")
	e.pushSigned(t, "acme/released", "1.0.0", e.v1)
	ref := e.ref("acme/released", "1.0.0")
	if stdout, stderr, code := e.real(t, "install", "--yes", "--name", "Released", ref); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
	}
	files := func() []string {
		ents, _ := os.ReadDir(e.tools)
		var names []string
		for _, d := range ents {
			names = append(names, d.Name())
		}
		return names
	}
	synced := func(t *testing.T, want string) {
		t.Helper()
		stdout, stderr, code := e.real(t, "sync")
		if code != 0 || !strings.HasPrefix(stdout, want) {
			t.Fatalf("sync: exit %d, want %q\n%s%s", code, want, stdout, stderr)
		}
		if got := files(); !slices.Equal(got, []string{"Released.wasm"}) || !bytes.Equal(readFile(t, filepath.Join(e.tools, "Released.wasm")), e.v1) {
			t.Fatalf("tools dir after sync: %q", got)
		}
		stdout, stderr, code = e.real(t, "tools")
		if code != 0 || !strings.Contains(stdout, "released  Released") || strings.Contains(stdout+stderr, "REFUSED") {
			t.Fatalf("tools after sync: exit %d\n%s%s", code, stdout, stderr)
		}
	}
	synced(t, "Released: up to date\n")
	if err := os.RemoveAll(e.tools); err != nil {
		t.Fatal(err)
	}
	synced(t, "Released: fetched "+ref)
	synced(t, "Released: up to date\n")

	t.Run("two files differing only in case", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(e.tools, "released.wasm"), e.v2, 0o644); err != nil {
			t.Fatal(err)
		}
		before := readFile(t, e.cfgPath)
		stdout, stderr, code := e.real(t, "sync")
		want := "Released: FAILED: " + e.tools + " holds Released.wasm and released.wasm, which differ only in case: config keys ignore case (tools.pins.released)"
		if code == 0 || !strings.Contains(stdout, want) {
			t.Fatalf("sync: exit %d, want %q\n%s%s", code, want, stdout, stderr)
		}
		if !bytes.Equal(readFile(t, e.cfgPath), before) || !bytes.Equal(readFile(t, filepath.Join(e.tools, "Released.wasm")), e.v1) ||
			!bytes.Equal(readFile(t, filepath.Join(e.tools, "released.wasm")), e.v2) {
			t.Fatal("a refused sync changed a file")
		}
	})

	t.Run("local module", func(t *testing.T) {
		cfgPath, echo := setup(t)
		dir := filepath.Dir(cfgPath)
		if stdout, stderr, code := runIn(t, dir, nil, "-c", cfgPath, "install", "--yes", "--name", "MyTool", echo); code != 0 {
			t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
		}
		stdout, stderr, code := runIn(t, dir, nil, "-c", cfgPath, "sync")
		if code != 0 || strings.Contains(stdout, "FAILED") {
			t.Fatalf("sync: exit %d\n%s%s", code, stdout, stderr)
		}
		stdout, stderr, code = runIn(t, dir, nil, "-c", cfgPath, "sync", "MyTool")
		if code != 0 || stdout != "MyTool: up to date\n" {
			t.Fatalf("sync MyTool: exit %d\n%s%s", code, stdout, stderr)
		}
	})
}

// TestUpdateCountsTheGrantAnAddedToolGets: a tool the module drops keeps
// its grant entry, bound to the module; a later version that adds the tool
// again (requesting nothing) would run it with that grant. That is growth
// the person has not seen for this version: --yes alone refuses it, naming
// the grant and the entry, and writes nothing; --accept-capabilities
// applies it.
func TestUpdateCountsTheGrantAnAddedToolGets(t *testing.T) {
	e := newRegistryEnv(t, "")
	build := func(version, extra string) []byte {
		return readFile(t, testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"version": version, "extra": extra}))
	}
	v1, v2, v3 := build("1.0.0", "helper"), build("2.0.0", ""), build("3.0.0", "helper")
	e.pushSigned(t, "acme/released", "latest", v1)
	ref := e.ref("acme/released", "latest")
	if out, err := run(t, "", "-c", e.cfgPath, "install", "--yes", ref); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if out, err := run(t, "", "-c", e.cfgPath, "grant", "helper", "fs.write=.", "net=api.example.com"); err != nil || !strings.Contains(out, "(module released)") {
		t.Fatalf("grant helper: %v\n%s", err, out)
	}
	// v2 drops helper: nothing requested grows, --yes applies it; the
	// entry stays (a grant is the person's, not the module's).
	e.pushSigned(t, "acme/released", "latest", v2)
	if out, err := run(t, "", "-c", e.cfgPath, "update", "--yes"); err != nil || !strings.Contains(out, "removed helper") {
		t.Fatalf("update to v2: %v\n%s", err, out)
	}
	// The entry also holds helper's own config, a secret.
	if _, err := config.EditFile(e.cfgPath, func(d *config.Document) error {
		return d.Set(config.Str("s3cr3t-value"), "tools", "grants", "helper", "config", "api-key", "value")
	}); err != nil {
		t.Fatal(err)
	}
	// v3 adds helper again, requesting nothing.
	e.pushSigned(t, "acme/released", "latest", v3)
	cfgBefore := readFile(t, e.cfgPath)
	toolsBefore := dirContents(t, e.tools)
	out, err := run(t, "", "-c", e.cfgPath, "update", "--yes")
	t.Logf("update --yes:\n%s", out)
	if err == nil {
		t.Fatal("update --yes applied a version whose new tool runs with a grant nobody approved for it")
	}
	for _, want := range []string{
		"added helper",
		"+ is granted fs.write=. by tools.grants.helper (module released)",
		"+ is granted net=api.example.com by tools.grants.helper (module released)",
		"+ reads config api-key of tools.grants.helper (module released)",
		"  config: api-key (tools.grants.helper.config; values not shown)",
		"NOT UPDATED: its tools request more capabilities than the installed version (or a tool it adds is granted some already), which --yes alone does not approve: " +
			"tool helper is granted fs.write=., net=api.example.com by tools.grants.helper (module released); tool helper reads config api-key of tools.grants.helper (module released)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("update --yes output lacks %q", want)
		}
	}
	if strings.Contains(out, "s3cr3t-value") {
		t.Error("the update printed a config value")
	}
	if !bytes.Equal(readFile(t, e.cfgPath), cfgBefore) {
		t.Errorf("a refused update changed config.yaml:\n%s", readFile(t, e.cfgPath))
	}
	if got := dirContents(t, e.tools); !maps.EqualFunc(got, toolsBefore, bytes.Equal) {
		t.Error("a refused update changed the tools dir")
	}
	if out, err := run(t, "", "-c", e.cfgPath, "update", "--yes", "--accept-capabilities"); err != nil || !strings.Contains(out, "released: updated to") {
		t.Fatalf("update --accept-capabilities: %v\n%s", err, out)
	}
}

// TestSyncRefusesALockfileThatGetsMore: a pull request that moves
// tools.pins and tools.sources' digest to a version requesting more (only
// hex to a reviewer) is, on a machine with the module installed, an update
// nobody approved: the real binary's sync shows the diff as update does,
// refuses it without --accept-capabilities, and leaves config and the
// tools dir byte-identical. With the flag it syncs, and a lockfile that
// moves to a version requesting less syncs without it.
func TestSyncRefusesALockfileThatGetsMore(t *testing.T) {
	wardenBinary(t) // built before newRegistryEnv points TMPDIR at a dir that must stay empty
	e := newRegistryEnv(t, "")
	first := e.pushSigned(t, "acme/released", "1.0.0", e.v1)
	second := e.pushSigned(t, "acme/released", "2.0.0", e.v2)
	if stdout, stderr, code := e.real(t, "install", "--yes", e.ref("acme/released", "1.0.0")); code != 0 {
		t.Fatalf("install: exit %d\n%s%s", code, stdout, stderr)
	}
	locked := readFile(t, e.cfgPath)
	// The stranger's edit: the digest and the pin of 2.0.0 (the ref's tag
	// stays; sync fetches by digest).
	moved := bytes.Replace(bytes.Replace(locked, []byte(first), []byte(second), 1), []byte(sum(e.v1)), []byte(sum(e.v2)), 1)
	if bytes.Equal(moved, locked) {
		t.Fatal("bad test: the lockfile did not change")
	}
	if err := os.WriteFile(e.cfgPath, moved, 0o644); err != nil {
		t.Fatal(err)
	}
	toolsBefore := dirContents(t, e.tools)
	stdout, stderr, code := e.real(t, "sync")
	t.Logf("sync:\n%s", stdout)
	if code == 0 {
		t.Fatalf("sync replaced the installed module by a version requesting more:\n%s%s", stdout, stderr)
	}
	for _, want := range []string{
		"released: NOT SYNCED: " + e.ref("acme/released", "1.0.0") + " at " + second + " would replace the installed file with a version that gets more",
		"changed released (version, capabilities)",
		"+ requests net=api.example.com",
		"tool released requests net=api.example.com; nothing written: pass --accept-capabilities to sync it",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("sync output lacks %q", want)
		}
	}
	if !bytes.Equal(readFile(t, e.cfgPath), moved) {
		t.Error("sync changed config.yaml")
	}
	if got := dirContents(t, e.tools); !maps.EqualFunc(got, toolsBefore, bytes.Equal) {
		t.Error("a refused sync changed the tools dir")
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) > 0 {
		t.Errorf("temp files left: %v", ents)
	}

	stdout, stderr, code = e.real(t, "sync", "--accept-capabilities")
	if code != 0 || !strings.Contains(stdout, "released: fetched") || !strings.Contains(stdout, "+ requests net=api.example.com") {
		t.Fatalf("sync --accept-capabilities: exit %d\n%s%s", code, stdout, stderr)
	}
	if !bytes.Equal(readFile(t, filepath.Join(e.tools, "released.wasm")), e.v2) {
		t.Fatal("sync --accept-capabilities did not write the locked version")
	}
	// Back to 1.0.0, which requests less: no flag needed.
	if err := os.WriteFile(e.cfgPath, locked, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = e.real(t, "sync")
	if code != 0 || !strings.Contains(stdout, "released: fetched") || !strings.Contains(stdout, "- no longer requests net=api.example.com") {
		t.Fatalf("sync to a version requesting less: exit %d\n%s%s", code, stdout, stderr)
	}
	if !bytes.Equal(readFile(t, filepath.Join(e.tools, "released.wasm")), e.v1) {
		t.Fatal("sync did not write the locked version")
	}
}

// TestInstallYesRefusesGrowthOverAnInstalledModule: installing a file over
// an installed module is an update by hand, and its growth is approved as an
// update's is: --yes alone refuses a version whose tool comes back to a grant
// nobody approved for it, writing nothing; --accept-capabilities applies it.
func TestInstallYesRefusesGrowthOverAnInstalledModule(t *testing.T) {
	e := newRegistryEnv(t, "")
	dir := t.TempDir()
	build := func(version, extra string) string {
		path := filepath.Join(dir, "v"+version+".wasm")
		if err := os.WriteFile(path, readFile(t, testwasm.BuildGoFileVars(t, "testdata/released", map[string]string{"version": version, "extra": extra})), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	v1, v2, v3 := build("1.0.0", "helper"), build("2.0.0", ""), build("3.0.0", "helper")
	install := func(args ...string) (string, error) {
		return run(t, "", append([]string{"-c", e.cfgPath, "install", "--name", "released"}, args...)...)
	}
	if out, err := install("--yes", v1); err != nil {
		t.Fatalf("install v1: %v\n%s", err, out)
	}
	if out, err := run(t, "", "-c", e.cfgPath, "grant", "helper", "fs.write=."); err != nil {
		t.Fatalf("grant helper: %v\n%s", err, out)
	}
	// v2 drops helper: nothing grows, --yes replaces it.
	if out, err := install("--yes", v2); err != nil || !strings.Contains(out, "removed helper") {
		t.Fatalf("install v2: %v\n%s", err, out)
	}
	cfgBefore := readFile(t, e.cfgPath)
	toolsBefore := dirContents(t, e.tools)
	out, err := install("--yes", v3)
	if err == nil {
		t.Fatalf("install --yes replaced a module whose added tool runs with a grant nobody approved for it:\n%s", out)
	}
	out += err.Error()
	for _, want := range []string{
		"added helper",
		"+ is granted fs.write=. by tools.grants.helper (module released)",
		"not installed: its tools request more capabilities than the installed version (or a tool it adds is granted some already), which --yes alone does not approve: " +
			"tool helper is granted fs.write=. by tools.grants.helper (module released); confirm on a terminal, or pass --accept-capabilities too; nothing changed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("install --yes output lacks %q:\n%s", want, out)
		}
	}
	if !bytes.Equal(readFile(t, e.cfgPath), cfgBefore) {
		t.Errorf("a refused install changed config.yaml:\n%s", readFile(t, e.cfgPath))
	}
	if got := dirContents(t, e.tools); !maps.EqualFunc(got, toolsBefore, bytes.Equal) {
		t.Error("a refused install changed the tools dir")
	}
	if out, err := install("--yes", "--accept-capabilities", v3); err != nil || !strings.Contains(out, "installed ") {
		t.Fatalf("install --accept-capabilities: %v\n%s", err, out)
	}
}
