package sigverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/warden-run/warden/internal/oci"
)

// e2ePush pushes a blob or a manifest to repo.
func e2ePush(t *testing.T, repo *remote.Repository, mt string, data []byte, manifest bool, tag string) ocispec.Descriptor {
	t.Helper()
	d := content.NewDescriptorFromBytes(mt, data)
	ctx := context.Background()
	var err error
	switch {
	case !manifest:
		err = repo.Push(ctx, d, bytes.NewReader(data))
	case tag != "":
		err = repo.Manifests().PushReference(ctx, d, bytes.NewReader(data), tag)
	default:
		err = repo.Manifests().Push(ctx, d, bytes.NewReader(data))
	}
	if err != nil {
		t.Fatalf("push %s: %v", mt, err)
	}
	return d
}

func e2eManifest(t *testing.T, m ocispec.Manifest) []byte {
	t.Helper()
	m.Versioned = specs.Versioned{SchemaVersion: 2}
	m.MediaType = ocispec.MediaTypeImageManifest
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEndToEndKeySigned pushes a wasm artifact to an in-process registry,
// attaches a key-signed bundle over its digest as a referrer, and checks
// that Fetch, Bundles and Verify agree; a tampered bundle fails.
func TestEndToEndKeySigned(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	repo, err := remote.NewRepository(host + "/acme/tool")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true

	module := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	layer := e2ePush(t, repo, oci.MediaTypeWasmLayer, module, false, "")
	cfg := e2ePush(t, repo, oci.MediaTypeWasmConfig, []byte(`{"architecture":"wasm","os":"wasip1"}`), false, "")
	man := e2ePush(t, repo, ocispec.MediaTypeImageManifest, e2eManifest(t, ocispec.Manifest{Config: cfg, Layers: []ocispec.Descriptor{layer}}), true, "v1")

	sign, pub := ecdsaKey(t)
	attach := func(b []byte) {
		t.Helper()
		bl := e2ePush(t, repo, oci.MediaTypeSigstoreBundle, b, false, "")
		empty := e2ePush(t, repo, ocispec.MediaTypeEmptyJSON, []byte("{}"), false, "")
		subject := ocispec.Descriptor{MediaType: man.MediaType, Digest: man.Digest, Size: man.Size}
		e2ePush(t, repo, ocispec.MediaTypeImageManifest, e2eManifest(t, ocispec.Manifest{
			ArtifactType: oci.MediaTypeSigstoreBundle, Config: empty, Layers: []ocispec.Descriptor{bl}, Subject: &subject,
		}), true, "")
	}

	opts := oci.Options{Dir: t.TempDir(), DockerConfig: filepath.Join(t.TempDir(), "config.json")}
	ref := host + "/acme/tool:v1"
	ctx := context.Background()
	a, err := oci.Fetch(ctx, ref, opts)
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	defer os.Remove(a.Path)
	d := SignedDigest(a)
	if d != man.Digest.String() {
		t.Fatalf("signed digest %s, want %s", d, man.Digest)
	}

	// Unsigned so far.
	f, err := oci.Bundles(ctx, ref, d, opts)
	if err != nil || len(f.Bundles) != 0 {
		t.Fatalf("Bundles before signing: %+v, %v", f, err)
	}

	attach(keyBundle(t, sign, d))
	f, err = oci.Bundles(ctx, ref, d, opts)
	if err != nil || len(f.Bundles) != 1 {
		t.Fatalf("Bundles: %+v, %v", f, err)
	}
	res, err := Verify(ctx, f.Bundles[0], d, Policy{PublicKey: pub}, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if res.Digest != d || res.Keyless {
		t.Fatalf("result %+v", res)
	}

	// A tampered bundle (a signature over another digest, attached to this
	// artifact) is found but fails verification.
	tampered := keyBundle(t, sign, digestOf([]byte("another manifest")))
	var pb map[string]any
	if err := json.Unmarshal(tampered, &pb); err != nil {
		t.Fatal(err)
	}
	good := map[string]any{}
	if err := json.Unmarshal(f.Bundles[0], &good); err != nil {
		t.Fatal(err)
	}
	// Keep the signature over the other digest but claim this digest.
	ms := pb["messageSignature"].(map[string]any)
	ms["messageDigest"] = good["messageSignature"].(map[string]any)["messageDigest"]
	tampered, err = json.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	attach(tampered)
	f, err = oci.Bundles(ctx, ref, d, opts)
	if err != nil || len(f.Bundles) != 2 {
		t.Fatalf("Bundles: %+v, %v", f, err)
	}
	var ok, bad int
	for _, b := range f.Bundles {
		_, err := Verify(ctx, b, d, Policy{PublicKey: pub}, nil)
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrBadSignature):
			bad++
		default:
			t.Errorf("Verify: %v, want nil or ErrBadSignature", err)
		}
	}
	if ok != 1 || bad != 1 {
		t.Errorf("%d verified and %d refused, want 1 and 1", ok, bad)
	}
}
