package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/warden-run/warden/internal/oci/ocitest"
	"oras.land/oras-go/v2/content"
)

// basicAuth refuses requests without the test credentials, as a private
// registry does.
func basicAuth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != testUser || pw != testPass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// withAuths writes a Docker config holding the test credentials for host.
func withAuths(t *testing.T, opts Options, host string) Options {
	t.Helper()
	cfg := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPass)) + `"}}}`
	if err := os.WriteFile(opts.DockerConfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return opts
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// catalog lists the registry's repositories.
func catalog(t *testing.T, host string) []string { return ocitest.Catalog(t, host) }

func TestPushFetchRoundTripWithCredentials(t *testing.T) {
	host := startRegistry(t, basicAuth)
	module := coreModule(5000)
	path := writeFile(t, "echo.wasm", module)
	ref := "oci://" + host + "/tools/echo:v1"

	t.Run("without credentials", func(t *testing.T) {
		opts := testOptions(t)
		_, err := Push(context.Background(), ref, path, opts)
		if err == nil {
			t.Fatal("Push without credentials succeeded")
		}
		for _, want := range []string{"requires credentials", "docker login " + host, opts.DockerConfig, "module layer"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if repos := catalog(t, host); len(repos) != 0 {
			t.Errorf("repositories after a refused push: %v", repos)
		}
	})

	opts := withAuths(t, testOptions(t), host)
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts.Created = created
	p, err := Push(context.Background(), ref, path, opts)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if p.Ref != host+"/tools/echo:v1" || p.Resolved != host+"/tools/echo@"+p.Digest.String() ||
		p.Size != int64(len(module)) || p.ModuleDigest != digest.FromBytes(module) ||
		p.Manifest.Digest != p.Digest || p.Manifest.MediaType != ocispec.MediaTypeImageManifest ||
		digest.FromBytes(p.ManifestBytes) != p.Digest || p.Manifest.Size != int64(len(p.ManifestBytes)) {
		t.Errorf("pushed %+v", p)
	}

	// Fetch by tag and by the digest Push reported.
	for _, r := range []string{ref, p.Resolved} {
		a := fetchOK(t, r, opts)
		checkFile(t, a.Path, module)
		if a.Layout != LayoutWasm || a.ManifestDigest != p.Digest || a.ConfigMediaType != MediaTypeWasmConfig ||
			a.LayerMediaType != MediaTypeWasmLayer || a.ModuleDigest != p.ModuleDigest || a.Resolved != p.Resolved {
			t.Errorf("fetched %+v", a)
		}
	}

	// The manifest and config follow the CNCF Wasm OCI artifact layout.
	var m ocispec.Manifest
	if err := json.Unmarshal(p.ManifestBytes, &m); err != nil {
		t.Fatal(err)
	}
	if m.SchemaVersion != 2 || m.MediaType != ocispec.MediaTypeImageManifest || m.Config.MediaType != MediaTypeWasmConfig ||
		len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeWasmLayer || m.Layers[0].Digest != p.ModuleDigest ||
		m.Annotations[ocispec.AnnotationCreated] != "2026-01-02T03:04:05Z" || m.Subject != nil {
		t.Errorf("manifest %s", p.ManifestBytes)
	}
	repo := newPusher(t, host, "tools/echo").Repository()
	cfgBytes, err := content.FetchAll(context.Background(), repo, m.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(cfgBytes, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["architecture"] != "wasm" || cfg["os"] != "wasip1" || cfg["created"] != "2026-01-02T03:04:05Z" {
		t.Errorf("config %s", cfgBytes)
	}
	if ld, _ := cfg["layerDigests"].([]any); len(ld) != 1 || ld[0] != p.ModuleDigest.String() {
		t.Errorf("config layerDigests %s", cfgBytes)
	}

	// The same module and created time give the same digest: a re-push is
	// reproducible, and its blobs are not uploaded again.
	again, err := Push(context.Background(), ref, path, opts)
	if err != nil || again.Digest != p.Digest {
		t.Errorf("re-push: %v, digest %s want %s", err, again.Digest, p.Digest)
	}
}

func TestPushSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if got := createdTime(time.Time{}); got != "2023-11-14T22:13:20Z" {
		t.Errorf("createdTime = %s", got)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if got, err := time.Parse(time.RFC3339, createdTime(time.Time{})); err != nil || time.Since(got) > time.Hour {
		t.Errorf("createdTime now = %v %v", got, err)
	}
}

// TestPushRefusals: what is not a core module, too large, or not a tag is
// refused before anything reaches the registry.
func TestPushRefusals(t *testing.T) {
	host := startRegistry(t, nil)
	tag := host + "/tools/x:v1"
	for _, c := range []struct {
		name, ref string
		data      []byte
		max       int64
		want      error
		mentions  []string
	}{
		{"not wasm", tag, []byte("#!/bin/sh\necho hi\n"), 0, ErrNotWasm, []string{"\\0asm"}},
		{"empty", tag, nil, 0, ErrNotWasm, nil},
		{"component", tag, componentBinary(), 0, ErrComponent, []string{"component", "core"}},
		{"too large", tag, coreModule(3000), 1000, ErrTooLarge, []string{"1000"}},
		{"digest ref", host + "/tools/x@" + digest.FromString("x").String(), coreModule(100), 0, ErrUnsupported, []string{"digest", "REGISTRY/REPO:TAG"}},
		{"no tag", host + "/tools/x", coreModule(100), 0, nil, []string{"no tag"}},
		{"bad ref", "not a ref", coreModule(100), 0, nil, []string{"REGISTRY/REPO:TAG"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.MaxBytes = c.max
			_, err := Push(context.Background(), c.ref, writeFile(t, "m.wasm", c.data), opts)
			if err == nil {
				t.Fatal("Push succeeded")
			}
			t.Logf("refusal: %v", err)
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			for _, m := range c.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
	if repos := catalog(t, host); len(repos) != 0 {
		t.Errorf("repositories after refused pushes: %v", repos)
	}
	if _, err := Push(context.Background(), tag, filepath.Join(t.TempDir(), "missing.wasm"), testOptions(t)); err == nil ||
		!strings.Contains(err.Error(), "missing.wasm") {
		t.Errorf("missing file: %v", err)
	}
}

// TestAttachBundleRoundTrip: a bundle attached to a pushed tool is found by
// Bundles, through the referrers API or, on a registry without one, the
// referrers tag schema oras-go maintains.
func TestAttachBundleRoundTrip(t *testing.T) {
	forBothReferrerPaths(t, func(t *testing.T, host string, rec *paths) {
		opts := testOptions(t)
		p, err := Push(context.Background(), host+"/acme/tool:v1", writeFile(t, "tool.wasm", coreModule(200)), opts)
		if err != nil {
			t.Fatal(err)
		}
		b1, b2 := fakeBundle("one"), fakeBundle("two")
		d, err := AttachBundle(context.Background(), "oci://"+host+"/acme/tool:v1", p.Manifest, b1, opts)
		if err != nil {
			t.Fatalf("AttachBundle: %v", err)
		}
		if d.MediaType != ocispec.MediaTypeImageManifest || d.ArtifactType != MediaTypeSigstoreBundle {
			t.Errorf("referrer descriptor %+v", d)
		}
		if _, err := AttachBundle(context.Background(), host+"/acme/tool", p.Manifest, b2, opts); err != nil {
			t.Fatalf("second AttachBundle: %v", err)
		}
		f := bundlesOK(t, rec, host, "acme/tool", p.Manifest)
		sameBundles(t, f.Bundles, b1, b2)
		if len(f.Skipped) != 0 {
			t.Errorf("skipped %q", f.Skipped)
		}
	})
}

func TestAttachBundleRefusals(t *testing.T) {
	host := startRegistry(t, nil)
	subject := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, []byte(`{}`))
	for name, c := range map[string]struct {
		subject ocispec.Descriptor
		bundle  []byte
		want    string
	}{
		"empty bundle": {subject, nil, "empty"},
		"huge bundle":  {subject, make([]byte, MaxBundleBytes+1), "more than"},
		"no subject":   {ocispec.Descriptor{}, fakeBundle("x"), "subject"},
		"blob subject": {content.NewDescriptorFromBytes(MediaTypeWasmLayer, []byte("x")), fakeBundle("x"), "subject"},
		"bad digest":   {ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: "sha256:zz", Size: 2}, fakeBundle("x"), "subject"},
	} {
		if _, err := AttachBundle(context.Background(), host+"/acme/tool", c.subject, c.bundle, testOptions(t)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want it to mention %q", name, err, c.want)
		}
	}
	if repos := catalog(t, host); len(repos) != 0 {
		t.Errorf("repositories after refused attaches: %v", repos)
	}
}
