package oci

import (
	"context"
	_ "crypto/sha256" // registers sha256 for go-digest
	_ "crypto/sha512" // registers sha384/sha512 for go-digest
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/wasmfile"
)

// DefaultMaxBytes bounds the module (and each blob downloaded for it) when
// Options.MaxBytes is zero.
const DefaultMaxBytes = limits.DefaultFetchMaxSize

// inflateFactor bounds how far a compressed image layer may inflate while
// plugin.wasm is looked for, as a multiple of the size limit.
const inflateFactor = 4

// Options configure Fetch, Push, Bundles and AttachBundle. The zero value is usable.
type Options struct {
	// Dir is where the module's temp file is created; "" is os.TempDir().
	Dir string
	// MaxBytes bounds the module and every blob downloaded for it;
	// 0 is DefaultMaxBytes.
	MaxBytes int64
	// PlainHTTP talks HTTP instead of HTTPS. Loopback registries
	// (localhost, 127.0.0.0/8, ::1) always use plain HTTP.
	PlainHTTP bool
	// DockerConfig is the path of a Docker config.json for credentials
	// (auths, credsStore, credHelpers). "" is $DOCKER_CONFIG/config.json,
	// else ~/.docker/config.json; a missing file means anonymous access.
	DockerConfig string
	// HTTPClient carries the requests; nil is oras-go's retrying client.
	HTTPClient *http.Client
	// Created is the created time Push writes into the artifact's config and
	// manifest; zero is $SOURCE_DATE_EPOCH when set, else now.
	Created time.Time
}

// Artifact is a fetched module.
type Artifact struct {
	// Path is the temp file (in Options.Dir) holding the core module; the
	// caller owns it and removes it.
	Path string
	// Ref is the reference as fetched, without oci://.
	Ref string
	// Resolved pins what was fetched: registry/repo@digest of the top-level
	// manifest (the index, when Ref named one).
	Resolved string
	Layout   Layout

	// IndexDigest and IndexMediaType are set when Ref named an index.
	IndexDigest    digest.Digest
	IndexMediaType string

	ManifestDigest    digest.Digest
	ManifestMediaType string
	ConfigMediaType   string

	// The layer the module came from: the module itself (LayoutWasm) or
	// the tar layer holding plugin.wasm (LayoutImage).
	LayerDigest    digest.Digest
	LayerMediaType string
	LayerSize      int64

	// Size and ModuleDigest (sha256) describe the module file.
	Size         int64
	ModuleDigest digest.Digest
}

// Fetch resolves ref (REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:…, with or
// without an oci:// prefix), picks the wasm module and downloads it to a
// temp file in opts.Dir, verifying every digest on the way. On any error
// nothing is left in opts.Dir.
func Fetch(ctx context.Context, ref string, opts Options) (*Artifact, error) {
	a, err := fetch(ctx, ref, opts)
	if err != nil {
		return nil, fmt.Errorf("oci: %s: %w", ShowRef(ref), err)
	}
	return a, nil
}

type fetcher struct {
	repo *remote.Repository
	ref  registry.Reference
	dir  string
	max  int64
}

func fetch(ctx context.Context, rawRef string, opts Options) (*Artifact, error) {
	s := strings.TrimPrefix(rawRef, "oci://")
	if err := checkNoCredentials(s); err != nil {
		return nil, err
	}
	ref, err := registry.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("not a registry reference (want REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:…): %w", err)
	}
	if ref.Reference == "" {
		return nil, errors.New("the reference names no tag or digest (want REGISTRY/REPO:TAG or REGISTRY/REPO@sha256:…)")
	}
	f := &fetcher{ref: ref, dir: opts.Dir, max: opts.MaxBytes}
	if f.dir == "" {
		f.dir = os.TempDir()
	}
	if f.max <= 0 {
		f.max = DefaultMaxBytes
	}
	var configPath string
	if f.repo, configPath, err = newRepository(ref, opts); err != nil {
		return nil, err
	}

	a := &Artifact{Ref: ref.String()}
	desc, rc, err := f.repo.Manifests().FetchReference(ctx, ref.Reference)
	if err != nil {
		return nil, fmt.Errorf("resolving the manifest: %w", authHint(err, ref.Registry, configPath))
	}
	b, err := readManifest(rc, desc)
	if err != nil {
		return nil, err
	}
	a.Resolved = ref.Registry + "/" + ref.Repository + "@" + desc.Digest.String()

	if isIndexType(desc.MediaType) {
		ix, err := parseIndex(b)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", desc.Digest, err)
		}
		a.IndexDigest, a.IndexMediaType = desc.Digest, desc.MediaType
		entry, err := selectIndexEntry(ix)
		if err != nil {
			return nil, fmt.Errorf("index %s: %w", desc.Digest, err)
		}
		rc, err := f.repo.Manifests().Fetch(ctx, entry)
		if err != nil {
			return nil, fmt.Errorf("fetching manifest %s from index %s: %w", entry.Digest, desc.Digest, err)
		}
		if b, err = readManifest(rc, entry); err != nil {
			return nil, err
		}
		desc = entry
	}
	if !isManifestType(desc.MediaType) {
		return nil, fmt.Errorf("%w: manifest %s has media type %s; want an image manifest or index", ErrUnsupported, desc.Digest, orNone(desc.MediaType))
	}
	m, err := parseManifest(b)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	a.ManifestDigest, a.ManifestMediaType = desc.Digest, desc.MediaType
	p, err := selectLayers(m)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", desc.Digest, err)
	}
	a.Layout, a.ConfigMediaType = p.layout, p.config

	var layer ocispec.Descriptor
	switch p.layout {
	case LayoutWasm:
		layer = p.layers[0]
		a.Path, err = f.download(ctx, layer)
	default:
		layer, a.Path, err = f.extractFromImage(ctx, p.layers)
	}
	if err != nil {
		return nil, err
	}
	a.LayerDigest, a.LayerMediaType, a.LayerSize = layer.Digest, layer.MediaType, layer.Size
	if err := finish(a, layer); err != nil {
		os.Remove(a.Path)
		return nil, err
	}
	return a, nil
}

// newRepository sets up oras-go for the reference: plain HTTP for loopback,
// credentials from the Docker config.
func newRepository(ref registry.Reference, opts Options) (*remote.Repository, string, error) {
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, "", err
	}
	repo.PlainHTTP = opts.PlainHTTP || isLoopback(ref.Registry)
	repo.MaxMetadataBytes = maxManifestBytes
	repo.ManifestMediaTypes = []string{
		ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageIndex,
		mediaTypeDockerManifest, mediaTypeDockerManifestList,
	}
	var store *credentials.DynamicStore
	if opts.DockerConfig != "" {
		store, err = credentials.NewStore(opts.DockerConfig, credentials.StoreOptions{})
	} else {
		store, err = credentials.NewStoreFromDocker(credentials.StoreOptions{})
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the Docker config for registry credentials: %w", err)
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = retry.DefaultClient
	}
	client := &auth.Client{
		Client:     hc,
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
		Header:     http.Header{"User-Agent": {"warden"}},
	}
	repo.Client = client
	return repo, store.ConfigPath(), nil
}

// authHint adds what to do when the registry wants credentials warden has
// not got.
func authHint(err error, host, configPath string) error {
	var er *errcode.ErrorResponse
	unauthorized := errors.As(err, &er) && (er.StatusCode == http.StatusUnauthorized || er.StatusCode == http.StatusForbidden)
	if !unauthorized && !errors.Is(err, auth.ErrBasicCredentialNotFound) {
		return err
	}
	return fmt.Errorf("%w (the registry requires credentials: run `docker login %s`, or configure a credential helper; warden reads %s)",
		err, host, configPath)
}

func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// readManifest reads a manifest or index body, bounded and verified against
// its descriptor.
func readManifest(rc io.ReadCloser, desc ocispec.Descriptor) ([]byte, error) {
	defer rc.Close()
	if desc.Size > maxManifestBytes {
		return nil, fmt.Errorf("%w: manifest %s (%s) is %d bytes, more than the %d allowed",
			ErrTooLarge, desc.Digest, orNone(desc.MediaType), desc.Size, maxManifestBytes)
	}
	b, err := content.ReadAll(io.LimitReader(rc, maxManifestBytes+1), desc)
	if err != nil {
		if errors.Is(err, content.ErrMismatchedDigest) {
			err = fmt.Errorf("%w: %v", ErrDigestMismatch, err)
		}
		return nil, fmt.Errorf("reading manifest %s (%s): %w", desc.Digest, orNone(desc.MediaType), err)
	}
	return b, nil
}

// download streams a blob into a temp file, bounded by the size limit and
// verified against its digest; on error the file is removed.
func (f *fetcher) download(ctx context.Context, desc ocispec.Descriptor) (path string, err error) {
	what := fmt.Sprintf("layer %s (%s)", desc.Digest, orNone(desc.MediaType))
	if desc.Size > f.max {
		return "", fmt.Errorf("%w: %s is %d bytes, more than the limit of %d", ErrTooLarge, what, desc.Size, f.max)
	}
	alg := desc.Digest.Algorithm()
	if !alg.Available() {
		return "", fmt.Errorf("%w: %s uses digest algorithm %q, which warden cannot verify", ErrUnsupported, what, alg)
	}
	rc, err := f.repo.Blobs().Fetch(ctx, desc)
	if err != nil {
		return "", fmt.Errorf("fetching %s: %w", what, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp(f.dir, ".fetch-*.tmp")
	if err != nil {
		return "", fmt.Errorf("creating a temp file for %s: %w", what, err)
	}
	defer func() {
		if cerr := tmp.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("writing %s: %w", what, cerr)
		}
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	h := alg.Hash()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return "", fmt.Errorf("downloading %s: %w", what, err)
	}
	if n != desc.Size {
		return "", fmt.Errorf("%w: %s: the registry sent %s bytes, the manifest says %d",
			ErrDigestMismatch, what, sizeSent(n, desc.Size), desc.Size)
	}
	if got := digest.NewDigest(alg, h); got != desc.Digest {
		return "", fmt.Errorf("%w: %s: the downloaded bytes hash to %s", ErrDigestMismatch, what, got)
	}
	return tmp.Name(), nil
}

func sizeSent(n, want int64) string {
	if n > want {
		return fmt.Sprintf("more than %d", want)
	}
	return fmt.Sprint(n)
}

// extractFromImage downloads the image's tar layers, top-most first, until
// one holds plugin.wasm, and extracts it into a temp file.
func (f *fetcher) extractFromImage(ctx context.Context, layers []ocispec.Descriptor) (ocispec.Descriptor, string, error) {
	for _, l := range layers {
		blob, err := f.download(ctx, l)
		if err != nil {
			return l, "", err
		}
		path, err := f.extractFile(blob, l)
		os.Remove(blob)
		if errors.Is(err, errNoPlugin) {
			continue
		}
		if errors.Is(err, errPluginDeleted) {
			return l, "", fmt.Errorf("%w: layer %s (%s) deletes /%s (whiteout), so the image has none", ErrNotWasm, l.Digest, orNone(l.MediaType), pluginFile)
		}
		if err != nil {
			return l, "", err
		}
		return l, path, nil
	}
	return ocispec.Descriptor{}, "", fmt.Errorf("%w: no /%s in the image's tar layers (%s); a hyper-mcp plugin image carries its module there",
		ErrNotWasm, pluginFile, digests(layers))
}

func (f *fetcher) extractFile(blob string, l ocispec.Descriptor) (path string, err error) {
	what := fmt.Sprintf("layer %s (%s)", l.Digest, orNone(l.MediaType))
	in, err := os.Open(blob)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.CreateTemp(f.dir, ".fetch-*.tmp")
	if err != nil {
		return "", fmt.Errorf("creating a temp file for %s: %w", what, err)
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out.Name())
		}
	}()
	_, gz := imageLayerCompression(l.MediaType)
	if _, err := extractPlugin(in, gz, out, f.max, inflateFactor*f.max); err != nil {
		if errors.Is(err, errNoPlugin) || errors.Is(err, errPluginDeleted) {
			return "", err
		}
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return out.Name(), nil
}

// finish checks the module is a core module and records its size and digest.
func finish(a *Artifact, layer ocispec.Descriptor) error {
	fh, err := os.Open(a.Path)
	if err != nil {
		return err
	}
	defer fh.Close()
	what := fmt.Sprintf("layer %s (%s)", layer.Digest, orNone(layer.MediaType))
	if a.Layout == LayoutImage {
		what = "/" + pluginFile + " in " + what
	}
	head := make([]byte, 8)
	n, _ := io.ReadFull(fh, head)
	if err := wasmfile.Check(head[:n], what); err != nil {
		return err
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return err
	}
	d := digest.SHA256.Digester()
	size, err := io.Copy(d.Hash(), fh)
	if err != nil {
		return err
	}
	a.Size, a.ModuleDigest = size, d.Digest()
	return nil
}
