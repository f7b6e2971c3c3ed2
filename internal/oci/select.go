package oci

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/internal/wasmfile"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Media types this package knows.
const (
	MediaTypeWasmConfig = "application/vnd.wasm.config.v0+json"
	MediaTypeWasmLayer  = "application/wasm"

	// Older wasm layer types still found in registries: wasm-to-oci's, and
	// the module.wasm.image spec used by crun and the containerd shims.
	mediaTypeWasmLayerWasmToOCI = "application/vnd.wasm.content.layer.v1+wasm"
	mediaTypeWasmLayerModule    = "application/vnd.module.wasm.content.layer.v1+wasm"

	mediaTypeDockerManifest     = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerManifestList = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerLayerGzip    = "application/vnd.docker.image.rootfs.diff.tar.gzip"
	mediaTypeDockerLayerTar     = "application/vnd.docker.image.rootfs.diff.tar"
)

// Bounds on what is considered from a manifest or index.
const (
	maxManifestBytes = 4 << 20
	maxLayers        = 64 // layers in a manifest
	maxImageLayers   = 8  // image layers searched for plugin.wasm
	maxIndexEntries  = 256
)

// Errors a caller can test with errors.Is; every returned error wraps its
// kind with the reference, media types, sizes or digests involved.
var (
	ErrComponent      = wasmfile.ErrComponent
	ErrNotWasm        = wasmfile.ErrNotWasm
	ErrTooLarge       = errors.New("size limit exceeded")
	ErrDigestMismatch = errors.New("digest mismatch")
	ErrUnsupported    = errors.New("unsupported artifact")
)

// Layout says how the wasm module is carried.
type Layout string

const (
	// LayoutWasm is the CNCF Wasm OCI artifact: the layer is the module.
	LayoutWasm Layout = "wasm-artifact"
	// LayoutImage is a container image (hyper-mcp's plugins) whose
	// tar layer holds /plugin.wasm.
	LayoutImage Layout = "image"
)

func isManifestType(mt string) bool {
	return mt == ocispec.MediaTypeImageManifest || mt == mediaTypeDockerManifest
}

func isIndexType(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == mediaTypeDockerManifestList
}

func isWasmLayer(mt string) bool {
	switch mt {
	case MediaTypeWasmLayer, mediaTypeWasmLayerWasmToOCI, mediaTypeWasmLayerModule:
		return true
	}
	return false
}

// imageLayerCompression reports whether mt is a tar layer this package can
// read, and whether it is gzip-compressed.
func imageLayerCompression(mt string) (ok, gz bool) {
	switch mt {
	case ocispec.MediaTypeImageLayerGzip, mediaTypeDockerLayerGzip:
		return true, true
	case ocispec.MediaTypeImageLayer, mediaTypeDockerLayerTar:
		return true, false
	}
	return false, false
}

// plan is the outcome of looking at a manifest: which layers to fetch, in
// order, and how to read them.
type plan struct {
	layout Layout
	config string
	layers []ocispec.Descriptor // LayoutWasm: exactly one; LayoutImage: top-most first
}

// parseManifest decodes an image manifest (OCI or Docker v2) and checks the
// bounds and the shape of its descriptors.
func parseManifest(b []byte) (ocispec.Manifest, error) {
	var m ocispec.Manifest
	if len(b) > maxManifestBytes {
		return m, fmt.Errorf("%w: manifest is %d bytes, more than the %d allowed", ErrTooLarge, len(b), maxManifestBytes)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("manifest is not valid JSON: %w", err)
	}
	if n := len(m.Layers); n > maxLayers {
		return m, fmt.Errorf("%w: manifest has %d layers, more than the %d considered", ErrUnsupported, n, maxLayers)
	}
	return m, nil
}

// selectLayers picks the wasm layer of a manifest (CNCF layout), or else the
// tar layers that may hold plugin.wasm (hyper-mcp's images), refusing
// anything else with the media types it found.
func selectLayers(m ocispec.Manifest) (plan, error) {
	p := plan{config: m.Config.MediaType}
	var wasm []ocispec.Descriptor
	var image []ocispec.Descriptor
	for _, l := range m.Layers {
		if err := checkDescriptor(l); err != nil {
			return plan{}, err
		}
		switch ok, _ := imageLayerCompression(l.MediaType); {
		case isWasmLayer(l.MediaType):
			wasm = append(wasm, l)
		case ok:
			image = append(image, l)
		}
	}
	switch {
	case len(wasm) == 1:
		p.layout = LayoutWasm
		p.layers = wasm
		return p, nil
	case len(wasm) > 1:
		return plan{}, fmt.Errorf("%w: manifest has %d WebAssembly layers (%s); warden expects one module per artifact",
			ErrUnsupported, len(wasm), digests(wasm))
	case len(image) > 0 && len(image) <= maxImageLayers:
		p.layout = LayoutImage
		for i := len(image) - 1; i >= 0; i-- { // the top-most layer wins
			p.layers = append(p.layers, image[i])
		}
		return p, nil
	case len(image) > maxImageLayers:
		return plan{}, fmt.Errorf("%w: image has %d tar layers, more than the %d searched for plugin.wasm",
			ErrUnsupported, len(image), maxImageLayers)
	}
	return plan{}, fmt.Errorf("%w: no WebAssembly layer (config %s, layers %s); warden accepts a layer of type %s "+
		"(CNCF Wasm OCI artifact) or a tar layer holding /plugin.wasm (hyper-mcp plugin image)",
		ErrNotWasm, orNone(m.Config.MediaType), mediaTypes(m.Layers), MediaTypeWasmLayer)
}

func checkDescriptor(d ocispec.Descriptor) error {
	if d.Size < 0 {
		return fmt.Errorf("%w: descriptor %s (%s) has negative size %d", ErrUnsupported, termsafe.Line(string(d.Digest)), orNone(d.MediaType), d.Size)
	}
	if err := d.Digest.Validate(); err != nil {
		return fmt.Errorf("%w: descriptor of type %s has an invalid digest %q: %v", ErrUnsupported, orNone(d.MediaType), termsafe.Line(string(d.Digest)), err)
	}
	return nil
}

// parseIndex decodes an image index (OCI or Docker manifest list).
func parseIndex(b []byte) (ocispec.Index, error) {
	var ix ocispec.Index
	if len(b) > maxManifestBytes {
		return ix, fmt.Errorf("%w: index is %d bytes, more than the %d allowed", ErrTooLarge, len(b), maxManifestBytes)
	}
	if err := json.Unmarshal(b, &ix); err != nil {
		return ix, fmt.Errorf("index is not valid JSON: %w", err)
	}
	if n := len(ix.Manifests); n > maxIndexEntries {
		return ix, fmt.Errorf("%w: index has %d entries, more than the %d considered", ErrUnsupported, n, maxIndexEntries)
	}
	return ix, nil
}

// wasmPlatformRank orders wasm platforms: core-module targets first.
func wasmPlatformRank(p *ocispec.Platform) int {
	if p == nil || p.Architecture != "wasm" {
		return 0
	}
	switch p.OS {
	case "wasip1":
		return 3
	case "wasi":
		return 2
	case "wasip2":
		return 1
	}
	return 0
}

// isAttestation reports whether an index entry is a build attestation
// (docker buildx pushes provenance as platform unknown/unknown).
func isAttestation(d ocispec.Descriptor) bool {
	if d.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
		return true
	}
	return d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown"
}

// selectIndexEntry chooses the manifest to follow in an index: the best
// wasm platform entry; failing that, the only image entry besides
// attestations. Nested indexes are refused.
func selectIndexEntry(ix ocispec.Index) (ocispec.Descriptor, error) {
	best, bestRank := -1, 0
	var others []int
	for i, d := range ix.Manifests {
		if err := checkDescriptor(d); err != nil {
			return ocispec.Descriptor{}, err
		}
		if !isManifestType(d.MediaType) {
			continue // nested indexes and unknown entries are not followed
		}
		if r := wasmPlatformRank(d.Platform); r > bestRank {
			best, bestRank = i, r
			continue
		}
		if !isAttestation(d) {
			others = append(others, i)
		}
	}
	if best >= 0 {
		return ix.Manifests[best], nil
	}
	if len(others) == 1 {
		return ix.Manifests[others[0]], nil
	}
	var plats []string
	for _, d := range ix.Manifests {
		plats = append(plats, platformString(d.Platform)+" "+orNone(d.MediaType))
	}
	return ocispec.Descriptor{}, fmt.Errorf("%w: index has no wasm entry (platform os wasip1/wasi/wasip2, architecture wasm) "+
		"and not a single image entry to follow; entries: [%s]", ErrNotWasm, strings.Join(plats, ", "))
}

func platformString(p *ocispec.Platform) string {
	if p == nil {
		return "(no platform)"
	}
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return termsafe.Line(s)
}

func mediaTypes(ds []ocispec.Descriptor) string {
	if len(ds) == 0 {
		return "(none)"
	}
	var mts []string
	for _, d := range ds {
		mts = append(mts, orNone(d.MediaType))
	}
	return "[" + strings.Join(mts, ", ") + "]"
}

func digests(ds []ocispec.Descriptor) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Digest.String())
	}
	return strings.Join(s, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return termsafe.Line(s)
}
