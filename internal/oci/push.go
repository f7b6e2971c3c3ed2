package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/internal/wasmfile"
)

// The CNCF Wasm OCI artifact config's fixed fields for a core module:
// architecture is always "wasm", and os "wasip1" marks a core module
// (wasip2 is a component, which warden does not run).
const (
	wasmArchitecture = "wasm"
	wasmOSModule     = "wasip1"
)

// WasmConfig is the config blob of the CNCF Wasm OCI artifact layout
// (media type application/vnd.wasm.config.v0+json), as wkg and the
// oci-wasm crate write it for a core module.
type WasmConfig struct {
	// Created is when the artifact was made (RFC 3339).
	Created string `json:"created"`
	// Architecture is always "wasm".
	Architecture string `json:"architecture"`
	// OS is "wasip1" for a core module.
	OS string `json:"os"`
	// LayerDigests lists the manifest's layer digests, in order.
	LayerDigests []string `json:"layerDigests"`
}

// Pushed is what Push pushed.
type Pushed struct {
	// Ref is the reference pushed to, REGISTRY/REPO:TAG, without oci://.
	Ref string
	// Digest is the manifest's digest: what `warden install REF@DIGEST`
	// pins and what a signature covers.
	Digest digest.Digest
	// Size is the module's size in bytes; ModuleDigest its sha256 (the
	// layer digest).
	Size         int64
	ModuleDigest digest.Digest
	// Resolved pins the push: REGISTRY/REPO@DIGEST.
	Resolved string
	// Manifest describes the image manifest; ManifestBytes is its exact
	// content (what a signature over Digest signs).
	Manifest      ocispec.Descriptor
	ManifestBytes []byte
}

// Push publishes the core WebAssembly module at wasmPath to ref
// (REGISTRY/REPO:TAG, with or without oci://) in the CNCF Wasm OCI artifact
// layout: a config blob of media type application/vnd.wasm.config.v0+json
// (WasmConfig), one application/wasm layer and an OCI image manifest, tagged
// as ref's tag. The file is read once, bounded by opts.MaxBytes (0 is
// DefaultMaxBytes), and refused unless it is a core module, before anything
// is sent. A digest reference is refused: a push names a tag. Registry
// access is set up as for Fetch (Docker credentials, plain HTTP on loopback).
func Push(ctx context.Context, ref, wasmPath string, opts Options) (*Pushed, error) {
	max := opts.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	wasm, err := boundedfile.Read(wasmPath, max)
	if errors.Is(err, boundedfile.ErrTooLarge) {
		err = fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	if err != nil {
		return nil, fmt.Errorf("oci: push %s to %s: %w", termsafe.Line(wasmPath), ShowRef(ref), err)
	}
	return PushBytes(ctx, ref, wasm, opts)
}

// PushBytes is Push for a module already read: the bytes pushed are exactly
// wasm (what a caller inspected).
func PushBytes(ctx context.Context, ref string, wasm []byte, opts Options) (*Pushed, error) {
	p, err := push(ctx, ref, wasm, opts)
	if err != nil {
		return nil, fmt.Errorf("oci: push to %s: %w", ShowRef(ref), err)
	}
	return p, nil
}

// CheckPushRef reports whether ref (REGISTRY/REPO:TAG, with or without
// oci://) can be pushed to, as Push would, without contacting the registry:
// a digest reference or one without a tag is refused.
func CheckPushRef(ref string) error {
	if _, err := parsePushRef(ref); err != nil {
		return fmt.Errorf("oci: push to %s: %w", ShowRef(ref), err)
	}
	return nil
}

// parsePushRef parses a reference that names a tag.
func parsePushRef(raw string) (registry.Reference, error) {
	s := strings.TrimPrefix(raw, "oci://")
	if err := checkNoCredentials(s); err != nil {
		return registry.Reference{}, err
	}
	ref, err := registry.ParseReference(s)
	if err != nil {
		return ref, fmt.Errorf("not a registry reference (want REGISTRY/REPO:TAG): %w", err)
	}
	if ref.Reference == "" {
		return ref, errors.New("the reference names no tag (want REGISTRY/REPO:TAG)")
	}
	if ref.ValidateReferenceAsDigest() == nil {
		return ref, fmt.Errorf("%w: %s names a digest, and a push cannot target a digest (the registry computes it from what is pushed); name a tag instead, REGISTRY/REPO:TAG",
			ErrUnsupported, termsafe.Line(s))
	}
	return ref, nil
}

func push(ctx context.Context, rawRef string, wasm []byte, opts Options) (*Pushed, error) {
	ref, err := parsePushRef(rawRef)
	if err != nil {
		return nil, err
	}
	max := opts.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	if int64(len(wasm)) > max {
		return nil, fmt.Errorf("%w: the module is %d bytes, more than the limit of %d", ErrTooLarge, len(wasm), max)
	}
	if err := wasmfile.Check(wasm[:min(len(wasm), 8)], "the file"); err != nil {
		return nil, err
	}

	// Build the artifact in memory first: nothing reaches the registry
	// until every piece is ready.
	layer := content.NewDescriptorFromBytes(MediaTypeWasmLayer, wasm)
	created := createdTime(opts.Created)
	cfgBytes, err := json.Marshal(WasmConfig{
		Created:      created,
		Architecture: wasmArchitecture,
		OS:           wasmOSModule,
		LayerDigests: []string{layer.Digest.String()},
	})
	if err != nil {
		return nil, err
	}
	cfg := content.NewDescriptorFromBytes(MediaTypeWasmConfig, cfgBytes)
	mem := memory.New()
	man, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, "", oras.PackManifestOptions{
		Layers:              []ocispec.Descriptor{layer},
		ConfigDescriptor:    &cfg,
		ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: created},
	})
	if err != nil {
		return nil, fmt.Errorf("packing the manifest: %w", err)
	}
	manBytes, err := content.FetchAll(ctx, mem, man)
	if err != nil {
		return nil, fmt.Errorf("packing the manifest: %w", err)
	}

	repo, configPath, err := newRepository(ref, opts)
	if err != nil {
		return nil, err
	}
	for _, b := range []struct {
		desc ocispec.Descriptor
		data []byte
		what string
	}{{layer, wasm, "the module layer"}, {cfg, cfgBytes, "the config blob"}} {
		if err := pushBlob(ctx, repo, b.desc, b.data); err != nil {
			return nil, fmt.Errorf("pushing %s %s: %w", b.what, b.desc.Digest, authHint(err, ref.Registry, configPath))
		}
	}
	if err := repo.Manifests().PushReference(ctx, man, bytes.NewReader(manBytes), ref.Reference); err != nil {
		return nil, fmt.Errorf("pushing the manifest %s as tag %s: %w", man.Digest, ref.Reference, authHint(err, ref.Registry, configPath))
	}
	return &Pushed{
		Ref:           ref.String(),
		Digest:        man.Digest,
		Size:          int64(len(wasm)),
		ModuleDigest:  layer.Digest,
		Resolved:      ref.Registry + "/" + ref.Repository + "@" + man.Digest.String(),
		Manifest:      man,
		ManifestBytes: manBytes,
	}, nil
}

// pushBlob pushes a blob unless the registry has it already.
func pushBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, data []byte) error {
	ok, err := repo.Blobs().Exists(ctx, desc)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	err = repo.Blobs().Push(ctx, desc, bytes.NewReader(data))
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

// createdTime is the config's created time: t, else $SOURCE_DATE_EPOCH (for
// reproducible publishing: the same module and time give the same manifest
// digest), else now; RFC 3339 in UTC, to the second.
func createdTime(t time.Time) string {
	if t.IsZero() {
		if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
			if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
				t = time.Unix(sec, 0)
			}
		}
	}
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// AttachBundle attaches a Sigstore bundle (protobuf-JSON) to subject, the
// manifest of a tool in ref's repository (REGISTRY/REPO, any tag or digest
// in ref is ignored), as `cosign sign --new-bundle-format` does: a referrer
// manifest of artifactType application/vnd.dev.sigstore.bundle.v0.3+json
// whose one layer is the bundle, with subject set. oras-go pushes it to the
// referrers API, or, on a registry without one, also updates the referrers
// tag schema index (sha256-<hex>), so that Bundles finds it either way. It
// returns the referrer manifest's descriptor.
func AttachBundle(ctx context.Context, ref string, subject ocispec.Descriptor, bundleJSON []byte, opts Options) (ocispec.Descriptor, error) {
	d, err := attachBundle(ctx, ref, subject, bundleJSON, opts)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("oci: attaching a signature bundle to %s@%s: %w", termsafe.Line(ref), subject.Digest, err)
	}
	return d, nil
}

func attachBundle(ctx context.Context, rawRef string, subject ocispec.Descriptor, bundleJSON []byte, opts Options) (ocispec.Descriptor, error) {
	s := strings.TrimPrefix(rawRef, "oci://")
	ref, err := registry.ParseReference(s)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("not a registry reference (want REGISTRY/REPO): %w", err)
	}
	if err := checkDescriptor(subject); err != nil || subject.Digest == "" || subject.Size <= 0 || !isManifestType(subject.MediaType) {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the subject must describe an image manifest (media type %s, digest %s, size %d)",
			ErrUnsupported, orNone(subject.MediaType), orNone(string(subject.Digest)), subject.Size)
	}
	if len(bundleJSON) == 0 {
		return ocispec.Descriptor{}, errors.New("the bundle is empty")
	}
	if len(bundleJSON) > MaxBundleBytes {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the bundle is %d bytes, more than the %d allowed", ErrTooLarge, len(bundleJSON), MaxBundleBytes)
	}
	repo, configPath, err := newRepository(ref, opts)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	layer := content.NewDescriptorFromBytes(MediaTypeSigstoreBundle, bundleJSON)
	if err := pushBlob(ctx, repo, layer, bundleJSON); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing the bundle blob %s: %w", layer.Digest, authHint(err, ref.Registry, configPath))
	}
	subj := ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	d, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, MediaTypeSigstoreBundle, oras.PackManifestOptions{
		Subject: &subj,
		Layers:  []ocispec.Descriptor{layer},
	})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("pushing the referrer manifest: %w", authHint(err, ref.Registry, configPath))
	}
	return d, nil
}
