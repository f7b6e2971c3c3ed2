package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	e := &registryEnv{reg: ocitest.Start(t, nil), vs: sigtest.NewSigstore(t)}
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
