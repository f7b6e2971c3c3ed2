package oci

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
)

// paths records the request paths a registry served.
type paths struct {
	mu sync.Mutex
	p  []string
}

func (p *paths) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p = append(p.p, s)
}

func (p *paths) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p = nil
}

func (p *paths) any(substr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.p {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

// startSigRegistry serves go-containerregistry's registry with or without
// its referrers API, recording the GETs it serves.
func startSigRegistry(t *testing.T, referrersAPI bool, wrap func(http.Handler) http.Handler) (string, *paths) {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(nopLogger()), ggcrregistry.WithReferrersSupport(referrersAPI))
	if wrap != nil {
		h = wrap(h)
	}
	rec := &paths{}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			rec.add(r.URL.Path)
		}
		inner.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), rec
}

// cosignTag pushes a manifest under cosign's tag for subject (suffix .sig
// or .att) with one layer.
func (p *pusher) cosignTag(subject ocispec.Descriptor, suffix, layerMT string, data []byte) {
	p.t.Helper()
	tag := "sha256-" + subject.Digest.Encoded() + suffix
	p.Manifest(ocispec.MediaTypeImageManifest, "application/vnd.oci.image.config.v1+json", []byte(`{"architecture":"","os":""}`),
		[]ocispec.Descriptor{p.Blob(layerMT, data)}, tag)
}

func fakeBundle(name string) []byte {
	return []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","test":"` + name + `"}`)
}

// bundlesOK calls Bundles, recording in rec (when not nil) only its requests.
func bundlesOK(t *testing.T, rec *paths, host, repo string, subject ocispec.Descriptor) *Found {
	t.Helper()
	if rec != nil {
		rec.reset()
	}
	f, err := Bundles(context.Background(), host+"/"+repo+":v1", subject.Digest.String(), testOptions(t))
	if err != nil {
		t.Fatalf("Bundles: %v", err)
	}
	return f
}

func sameBundles(t *testing.T, got [][]byte, want ...[]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d bundles %q, want %d", len(got), got, len(want))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || bytes.Equal(g, w)
		}
		if !found {
			t.Errorf("bundle %s not found in %q", w, got)
		}
	}
}

// forBothReferrerPaths runs a test against a registry with the referrers
// API and one without, where oras-go falls back to the referrers tag
// schema (an index tagged sha256-<hex>, which oras-go maintains on push
// because go-containerregistry's registry does not answer OCI-Subject).
func forBothReferrerPaths(t *testing.T, test func(t *testing.T, host string, rec *paths)) {
	for _, api := range []bool{true, false} {
		name := "tag-schema"
		if api {
			name = "referrers-api"
		}
		t.Run(name, func(t *testing.T) {
			host, rec := startSigRegistry(t, api, nil)
			test(t, host, rec)
			// Which path served the listing.
			if got := rec.any("/referrers/"); !got {
				t.Errorf("the referrers API was not tried")
			}
			// The fallback index tag is sha256-<hex>, cosign's sha256-<hex>.sig.
			viaTag := false
			for _, s := range rec.p {
				viaTag = viaTag || strings.Contains(s, "/manifests/sha256-") && !strings.Contains(s, ".")
			}
			if api == viaTag {
				t.Errorf("referrers API available %v, but referrers tag schema read %v (requests %q)", api, viaTag, rec.p)
			}
		})
	}
}

func TestBundlesReferrer(t *testing.T) {
	forBothReferrerPaths(t, func(t *testing.T, host string, rec *paths) {
		p := newPusher(t, host, "acme/tool")
		man, _ := p.wasmArtifact(coreModule(100), "v1")
		b := fakeBundle("one")
		p.ReferrerAs(man, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, b)
		f := bundlesOK(t, rec, host, "acme/tool", man)
		sameBundles(t, f.Bundles, b)
		if len(f.Skipped) != 0 || len(f.Sources) != 1 || !strings.HasPrefix(f.Sources[0], "referrer sha256:") {
			t.Errorf("found %+v", f)
		}
		if rec.any(".sig") {
			t.Errorf("cosign tags looked at although a referrer was found")
		}
	})
}

func TestBundlesTwoAndOtherTypes(t *testing.T) {
	forBothReferrerPaths(t, func(t *testing.T, host string, rec *paths) {
		p := newPusher(t, host, "acme/tool")
		man, _ := p.wasmArtifact(coreModule(100), "v1")
		b1, b2 := fakeBundle("one"), fakeBundle("two")
		p.ReferrerAs(man, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, b1)
		// An older bundle version, with the parameter form of the type.
		p.ReferrerAs(man, "application/vnd.dev.sigstore.bundle+json;version=0.2", "application/vnd.dev.sigstore.bundle+json;version=0.2", b2)
		// Other referrers: an SBOM, and one pretending with its layer type only.
		p.ReferrerAs(man, "application/spdx+json", "application/spdx+json", []byte(`{"spdxVersion":"SPDX-2.3"}`))
		p.ReferrerAs(man, "application/vnd.example.other", MediaTypeSigstoreBundle, fakeBundle("not-a-signature-referrer"))
		// A bundle attached to another artifact.
		other, _ := p.wasmArtifact(coreModule(200), "v2")
		p.ReferrerAs(other, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, fakeBundle("other"))

		f := bundlesOK(t, rec, host, "acme/tool", man)
		sameBundles(t, f.Bundles, b1, b2)
		if len(f.Skipped) != 0 {
			t.Errorf("skipped %q", f.Skipped)
		}
	})
}

func TestBundlesNone(t *testing.T) {
	forBothReferrerPaths(t, func(t *testing.T, host string, rec *paths) {
		p := newPusher(t, host, "acme/tool")
		man, _ := p.wasmArtifact(coreModule(100), "v1")
		f := bundlesOK(t, rec, host, "acme/tool", man)
		if len(f.Bundles) != 0 || len(f.Skipped) != 0 {
			t.Errorf("found %+v in an unsigned artifact", f)
		}
		if !rec.any(".sig") || !rec.any(".att") {
			t.Errorf("cosign tags not looked at")
		}
	})
}

func TestBundlesTooLarge(t *testing.T) {
	host, _ := startSigRegistry(t, true, nil)
	p := newPusher(t, host, "acme/tool")
	man, _ := p.wasmArtifact(coreModule(100), "v1")
	big := append(fakeBundle("big"), bytes.Repeat([]byte(" "), MaxBundleBytes)...)
	p.ReferrerAs(man, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, big)
	_, err := Bundles(context.Background(), host+"/acme/tool", man.Digest.String(), testOptions(t))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error %v, want ErrTooLarge", err)
	}
	for _, s := range []string{"1048576", "signature bundle", man.Digest.String()} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func TestBundlesTamperedBlob(t *testing.T) {
	b := fakeBundle("one")
	layer := content.NewDescriptorFromBytes(MediaTypeSigstoreBundle, b)
	host, _ := startSigRegistry(t, true, tamper(layer.Digest))
	p := newPusher(t, host, "acme/tool")
	man, _ := p.wasmArtifact(coreModule(100), "v1")
	p.ReferrerAs(man, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, b)
	_, err := Bundles(context.Background(), host+"/acme/tool", man.Digest.String(), testOptions(t))
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("error %v, want ErrDigestMismatch", err)
	}
}

func TestBundlesCosignTag(t *testing.T) {
	host, _ := startSigRegistry(t, false, nil)
	p := newPusher(t, host, "acme/tool")
	man, _ := p.wasmArtifact(coreModule(100), "v1")
	b := fakeBundle("tagged")
	p.cosignTag(man, ".sig", MediaTypeSigstoreBundle, b)
	f := bundlesOK(t, nil, host, "acme/tool", man)
	sameBundles(t, f.Bundles, b)
	if want := "tag sha256-" + man.Digest.Encoded() + ".sig"; len(f.Sources) != 1 || f.Sources[0] != want {
		t.Errorf("sources %q, want %q", f.Sources, want)
	}
}

func TestBundlesLegacyCosignSkipped(t *testing.T) {
	host, _ := startSigRegistry(t, true, nil)
	p := newPusher(t, host, "acme/tool")
	man, _ := p.wasmArtifact(coreModule(100), "v1")
	p.cosignTag(man, ".sig", mediaTypeCosignSimpleSigning,
		[]byte(`{"critical":{"identity":{"docker-reference":"x"},"image":{"docker-manifest-digest":"`+man.Digest.String()+`"},"type":"cosign container image signature"},"optional":null}`))
	p.cosignTag(man, ".att", mediaTypeDSSEEnvelope, []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"","signatures":[]}`))
	f := bundlesOK(t, nil, host, "acme/tool", man)
	if len(f.Bundles) != 0 {
		t.Fatalf("bundles %q from legacy signatures", f.Bundles)
	}
	if len(f.Skipped) != 2 || !strings.Contains(f.Skipped[0], "legacy cosign signature") || !strings.Contains(f.Skipped[0], ".sig") ||
		!strings.Contains(f.Skipped[1], "legacy cosign attestation") {
		t.Errorf("skipped %q", f.Skipped)
	}
}

func TestBundlesBadInput(t *testing.T) {
	for _, c := range []struct{ ref, digest string }{
		{"not a ref", "sha256:" + strings.Repeat("a", 64)},
		{"127.0.0.1:1/acme/tool", "sha256:short"},
		{"127.0.0.1:1/acme/tool", ""},
	} {
		if _, err := Bundles(context.Background(), c.ref, c.digest, testOptions(t)); err == nil {
			t.Errorf("Bundles(%q, %q) succeeded", c.ref, c.digest)
		}
	}
}

func TestIsBundleMediaType(t *testing.T) {
	for mt, want := range map[string]bool{
		"application/vnd.dev.sigstore.bundle.v0.3+json":              true,
		"application/vnd.dev.sigstore.bundle.v0.2+json":              true,
		"application/vnd.dev.sigstore.bundle.v0.1+json":              true,
		"application/vnd.dev.sigstore.bundle+json;version=0.3":       true,
		"application/vnd.dev.sigstore.bundle+json; version=0.1":      true,
		"application/vnd.dev.sigstore.bundle+json":                   true,
		"application/vnd.dev.sigstore.bundle+json;version=9":         false,
		"application/vnd.dev.sigstore.bundle.v0.4+json":              false,
		"application/vnd.dev.sigstore.bundle.v0.3+json;charset=utf8": false,
		"application/vnd.dev.cosign.simplesigning.v1+json":           false,
		"":                         false,
		ocispec.MediaTypeEmptyJSON: false,
	} {
		if got := IsBundleMediaType(mt); got != want {
			t.Errorf("IsBundleMediaType(%q) = %v, want %v", mt, got, want)
		}
	}
}

func TestBundlesReferrerBound(t *testing.T) {
	host, _ := startSigRegistry(t, true, nil)
	p := newPusher(t, host, "acme/tool")
	man, _ := p.wasmArtifact(coreModule(100), "v1")
	for i := range maxReferrers + 1 {
		p.ReferrerAs(man, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, fakeBundle(strings.Repeat("x", i)))
	}
	f := bundlesOK(t, nil, host, "acme/tool", man)
	if len(f.Bundles) != maxReferrers {
		t.Errorf("%d bundles, want the first %d", len(f.Bundles), maxReferrers)
	}
	if len(f.Skipped) != 1 || !strings.Contains(f.Skipped[0], "not considered") {
		t.Errorf("skipped %q", f.Skipped)
	}
}
