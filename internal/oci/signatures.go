package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/warden-run/warden/internal/termsafe"
)

// Sigstore bundle media types: the artifactType of a bundle referrer and
// the media type of its layer, as `cosign sign --new-bundle-format` and
// sigstore's other clients attach them.
const (
	MediaTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"

	// Legacy cosign signature and attestation layers (the `.sig`/`.att`
	// tag scheme), which are not bundles.
	mediaTypeCosignSimpleSigning = "application/vnd.dev.cosign.simplesigning.v1+json"
	mediaTypeDSSEEnvelope        = "application/vnd.dsse.envelope.v1+json"
)

// Bounds on the signatures looked for.
const (
	// MaxBundleBytes bounds one bundle (real bundles are a few KiB); it is
	// sigverify's limit too.
	MaxBundleBytes = 1 << 20
	// maxBundleTotalBytes bounds the bundles read for one artifact.
	maxBundleTotalBytes = 8 << 20
	// maxReferrers bounds the referrer manifests (of a bundle type) fetched,
	// and, times 8, the referrer descriptors listed of any type.
	maxReferrers = 32
	// maxBundlesPerManifest bounds the bundle layers read from one manifest.
	maxBundlesPerManifest = 4
)

// Found is what Bundles found attached to an artifact.
type Found struct {
	// Bundles are Sigstore bundle documents (protobuf-JSON), unverified,
	// each read whole and checked against its layer digest, without
	// duplicates.
	Bundles [][]byte
	// Sources says where each bundle came from, parallel to Bundles, e.g.
	// "referrer sha256:…" or "tag sha256-….sig".
	Sources []string
	// Skipped describes signatures found in a format warden does not read
	// (legacy cosign simple-signing `.sig`, DSSE `.att`, …): when Bundles
	// is empty and Skipped is not, the artifact is signed, but not in a way
	// warden can verify.
	Skipped []string
}

// IsBundleMediaType reports whether mt names a Sigstore bundle
// (application/vnd.dev.sigstore.bundle+json;version=0.3, or the
// application/vnd.dev.sigstore.bundle.v0.N+json form).
func IsBundleMediaType(mt string) bool {
	base, params, err := mime.ParseMediaType(mt)
	if err != nil {
		return false
	}
	switch base {
	case "application/vnd.dev.sigstore.bundle+json":
		v, ok := params["version"]
		return !ok || v == "0.1" || v == "0.2" || v == "0.3"
	case "application/vnd.dev.sigstore.bundle.v0.1+json",
		"application/vnd.dev.sigstore.bundle.v0.2+json",
		"application/vnd.dev.sigstore.bundle.v0.3+json":
		return len(params) == 0
	}
	return false
}

// Bundles finds the Sigstore bundles attached to digest (a manifest or index
// digest, "sha256:<hex>") in ref's repository (ref is REGISTRY/REPO, with an
// optional tag or digest that is ignored, and an optional oci:// prefix):
// first through the OCI referrers API (or oras-go's fallback, the referrers
// tag schema `sha256-<hex>`), then, when that finds none, through cosign's
// tag scheme `sha256-<hex>.sig` and `.att`, whose manifests count only when
// they carry a bundle layer. No bundles and nothing skipped is not an error:
// the artifact is unsigned. Registry access is set up as for Fetch.
func Bundles(ctx context.Context, ref, dgst string, opts Options) (*Found, error) {
	f, err := bundles(ctx, ref, dgst, opts)
	if err != nil {
		return nil, fmt.Errorf("oci: signatures of %s@%s: %w", termsafe.Line(ref), termsafe.Line(dgst), err)
	}
	return f, nil
}

type bundleFinder struct {
	repo    *remote.Repository
	subject ocispec.Descriptor
	found   Found
	seen    map[digest.Digest]bool // bundle layer digests
	total   int64
}

func bundles(ctx context.Context, rawRef, dgst string, opts Options) (*Found, error) {
	s := strings.TrimPrefix(rawRef, "oci://")
	ref, err := registry.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("not a registry reference (want REGISTRY/REPO): %w", err)
	}
	d, err := digest.Parse(dgst)
	if err != nil {
		return nil, fmt.Errorf("%w: invalid digest %q: %v", ErrUnsupported, termsafe.Line(dgst), err)
	}
	repo, configPath, err := newRepository(ref, opts)
	if err != nil {
		return nil, err
	}
	b := &bundleFinder{
		repo:    repo,
		subject: ocispec.Descriptor{Digest: d, MediaType: ocispec.MediaTypeImageManifest},
		seen:    map[digest.Digest]bool{},
	}
	if err := b.fromReferrers(ctx); err != nil {
		return nil, authHint(err, ref.Registry, configPath)
	}
	if len(b.found.Bundles) == 0 {
		for _, suffix := range []string{".sig", ".att"} {
			if err := b.fromCosignTag(ctx, d.Algorithm().String()+"-"+d.Encoded()+suffix); err != nil {
				return nil, authHint(err, ref.Registry, configPath)
			}
		}
	}
	return &b.found, nil
}

var errEnough = errors.New("enough referrers")

// maybeMisreported reports whether a referrer's artifactType may hide a
// bundle: some registries (go-containerregistry's among them) list the
// config media type, the empty descriptor's for a bundle, instead of the
// manifest's artifactType, so such referrers are fetched and looked at.
func maybeMisreported(at string) bool {
	return at == "" || at == ocispec.MediaTypeEmptyJSON
}

// fromReferrers lists the subject's referrers and reads the bundle ones.
func (b *bundleFinder) fromReferrers(ctx context.Context) error {
	var candidates []ocispec.Descriptor
	listed := 0
	err := b.repo.Referrers(ctx, b.subject, "", func(page []ocispec.Descriptor) error {
		for _, r := range page {
			listed++
			if listed > 8*maxReferrers {
				return errEnough
			}
			if !IsBundleMediaType(r.ArtifactType) && !maybeMisreported(r.ArtifactType) {
				continue
			}
			if len(candidates) == maxReferrers {
				return errEnough
			}
			candidates = append(candidates, r)
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		b.found.Skipped = append(b.found.Skipped, fmt.Sprintf("more than %d referrers (or %d of a bundle type): the rest were not considered", 8*maxReferrers, maxReferrers))
	} else if err != nil {
		return fmt.Errorf("listing referrers: %w", err)
	}
	for _, r := range candidates {
		if err := checkDescriptor(r); err != nil {
			return fmt.Errorf("referrer: %w", err)
		}
		if !isManifestType(r.MediaType) {
			b.found.Skipped = append(b.found.Skipped, fmt.Sprintf("referrer %s of type %s is not an image manifest", r.Digest, orNone(r.MediaType)))
			continue
		}
		rc, err := b.repo.Manifests().Fetch(ctx, r)
		if err != nil {
			return fmt.Errorf("fetching referrer %s: %w", r.Digest, err)
		}
		if err := b.fromManifest(ctx, rc, r, "referrer "+r.Digest.String(), true); err != nil {
			return err
		}
	}
	return nil
}

// fromCosignTag reads cosign's signature or attestation tag, if present.
func (b *bundleFinder) fromCosignTag(ctx context.Context, tag string) error {
	desc, rc, err := b.repo.Manifests().FetchReference(ctx, tag)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resolving tag %s: %w", tag, err)
	}
	if !isManifestType(desc.MediaType) {
		rc.Close()
		b.found.Skipped = append(b.found.Skipped, fmt.Sprintf("tag %s is a %s, not an image manifest", tag, orNone(desc.MediaType)))
		return nil
	}
	return b.fromManifest(ctx, rc, desc, "tag "+tag, false)
}

// fromManifest reads the bundle layers of a signature manifest. A referrer
// must name the subject; cosign's tags name it by their tag.
func (b *bundleFinder) fromManifest(ctx context.Context, rc io.ReadCloser, desc ocispec.Descriptor, source string, referrer bool) error {
	raw, err := readManifest(rc, desc)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	m, err := parseManifest(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	if referrer {
		at := m.ArtifactType
		if at == "" {
			at = m.Config.MediaType
		}
		if !IsBundleMediaType(at) {
			return nil // another kind of referrer, listed under a misleading type
		}
		if m.Subject == nil || m.Subject.Digest != b.subject.Digest {
			b.found.Skipped = append(b.found.Skipped, fmt.Sprintf("%s does not name %s as its subject", source, b.subject.Digest))
			return nil
		}
	}
	var layers, other []ocispec.Descriptor
	for _, l := range m.Layers {
		if err := checkDescriptor(l); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		if IsBundleMediaType(l.MediaType) {
			layers = append(layers, l)
		} else {
			other = append(other, l)
		}
	}
	if len(layers) == 0 {
		b.found.Skipped = append(b.found.Skipped, skipNote(source, other))
		return nil
	}
	if len(layers) > maxBundlesPerManifest {
		return fmt.Errorf("%w: %s has %d bundle layers, more than the %d considered", ErrUnsupported, source, len(layers), maxBundlesPerManifest)
	}
	for _, l := range layers {
		if b.seen[l.Digest] {
			continue
		}
		data, err := b.readBundle(ctx, l, source)
		if err != nil {
			return err
		}
		b.seen[l.Digest] = true
		b.found.Bundles = append(b.found.Bundles, data)
		b.found.Sources = append(b.found.Sources, source)
	}
	return nil
}

// skipNote says why a signature manifest without a bundle layer was skipped.
func skipNote(source string, layers []ocispec.Descriptor) string {
	for _, l := range layers {
		switch l.MediaType {
		case mediaTypeCosignSimpleSigning:
			return fmt.Sprintf("%s holds a legacy cosign signature (simple signing, %s), not a Sigstore bundle; warden reads bundles "+
				"(re-sign with cosign --new-bundle-format)", source, mediaTypeCosignSimpleSigning)
		case mediaTypeDSSEEnvelope:
			return fmt.Sprintf("%s holds a legacy cosign attestation (%s), not a Sigstore bundle", source, mediaTypeDSSEEnvelope)
		}
	}
	return fmt.Sprintf("%s has no Sigstore bundle layer (layers %s)", source, mediaTypes(layers))
}

// readBundle reads one bundle blob, bounded and verified against its digest.
func (b *bundleFinder) readBundle(ctx context.Context, l ocispec.Descriptor, source string) ([]byte, error) {
	what := fmt.Sprintf("bundle %s in %s", l.Digest, source)
	if l.Size > MaxBundleBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, more than the %d allowed for a signature bundle", ErrTooLarge, what, l.Size, MaxBundleBytes)
	}
	if b.total+l.Size > maxBundleTotalBytes {
		return nil, fmt.Errorf("%w: %s would bring the signature bundles read past %d bytes", ErrTooLarge, what, maxBundleTotalBytes)
	}
	if !l.Digest.Algorithm().Available() {
		return nil, fmt.Errorf("%w: %s uses digest algorithm %q, which warden cannot verify", ErrUnsupported, what, l.Digest.Algorithm())
	}
	rc, err := b.repo.Blobs().Fetch(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", what, err)
	}
	defer rc.Close()
	data, err := content.ReadAll(io.LimitReader(rc, l.Size+1), l)
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("%w: %v", ErrDigestMismatch, err)
		}
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	b.total += int64(len(data))
	return data, nil
}
