// Package ocitest runs a real OCI registry (go-containerregistry's
// pkg/registry) on loopback for tests, with credentials required, and
// pushes wasm tools to it the way real publishers do: the CNCF Wasm OCI
// artifact layout, hyper-mcp's plugin images, and Sigstore bundles as
// referrers.
package ocitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// Credentials the registry requires.
const (
	User     = "warden"
	Password = "s3cret"
)

// Media types the pushes use.
const (
	MediaTypeWasmConfig     = "application/vnd.wasm.config.v0+json"
	MediaTypeWasmLayer      = "application/wasm"
	MediaTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"
	mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerLayerGz  = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)

// Registry is a registry on loopback that requires User/Password.
type Registry struct {
	// Host is host:port.
	Host string
	// DockerConfigDir holds a config.json with the registry's credentials:
	// set DOCKER_CONFIG to it, as `docker login` would have.
	DockerConfigDir string
}

// Start serves a registry until the test ends. wrap, if not nil, wraps
// the registry's handler (to tamper with answers); it sees requests after
// the credentials check.
func Start(t testing.TB, wrap func(http.Handler) http.Handler) *Registry {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)), ggcrregistry.WithReferrersSupport(true))
	if wrap != nil {
		h = wrap(h)
	}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, pw, ok := r.BasicAuth(); !ok || u != User || pw != Password {
			w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		inner.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), DockerConfig(host), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Registry{Host: host, DockerConfigDir: dir}
}

// DockerConfig is a Docker config.json holding User/Password for host, as
// `docker login` writes it.
func DockerConfig(host string) []byte {
	return []byte(`{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(User+":"+Password)) + `"}}}`)
}

// Catalog lists the repositories the registry at host holds.
func Catalog(t testing.TB, host string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/v2/_catalog", nil)
	req.SetBasicAuth(User, Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Repositories []string `json:"repositories"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("catalog %s: %v", body, err)
	}
	return c.Repositories
}

// Pusher pushes to one repository of a Registry.
type Pusher struct {
	t    testing.TB
	repo *remote.Repository
}

// Pusher returns a pusher for repository name.
func (r *Registry) Pusher(t testing.TB, name string) *Pusher {
	t.Helper()
	return NewPusher(t, r.Host, name)
}

// NewPusher returns a pusher for repository name of the plain-HTTP
// registry at host (host:port), sending User/Password.
func NewPusher(t testing.TB, host, name string) *Pusher {
	t.Helper()
	repo, err := remote.NewRepository(host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	repo.Client = &auth.Client{
		Client:     http.DefaultClient,
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(host, auth.Credential{Username: User, Password: Password}),
	}
	return &Pusher{t: t, repo: repo}
}

// Blob pushes data as a blob of media type mt.
func (p *Pusher) Blob(mt string, data []byte) ocispec.Descriptor {
	p.t.Helper()
	d := content.NewDescriptorFromBytes(mt, data)
	if err := p.repo.Push(context.Background(), d, bytes.NewReader(data)); err != nil {
		p.t.Fatalf("push blob %s: %v", mt, err)
	}
	return d
}

// Manifest pushes an image manifest of media type mt (tagged unless tag is
// empty).
func (p *Pusher) Manifest(mt, configMT string, config []byte, layers []ocispec.Descriptor, tag string) ocispec.Descriptor {
	p.t.Helper()
	m := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: mt,
		Config:    p.Blob(configMT, config),
		Layers:    layers,
	}
	if layers == nil {
		m.Layers = []ocispec.Descriptor{}
	}
	return p.Push(mt, m, tag)
}

// Index pushes an image index of media type mt (tagged unless tag is empty).
func (p *Pusher) Index(mt string, entries []ocispec.Descriptor, tag string) ocispec.Descriptor {
	p.t.Helper()
	return p.Push(mt, ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: mt, Manifests: entries}, tag)
}

// Push pushes v, marshalled to JSON, as a manifest of media type mt
// (tagged unless tag is empty).
func (p *Pusher) Push(mt string, v any, tag string) ocispec.Descriptor {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	d := content.NewDescriptorFromBytes(mt, b)
	ctx := context.Background()
	if tag == "" {
		err = p.repo.Manifests().Push(ctx, d, bytes.NewReader(b))
	} else {
		err = p.repo.Manifests().PushReference(ctx, d, bytes.NewReader(b), tag)
	}
	if err != nil {
		p.t.Fatalf("push manifest %s: %v", mt, err)
	}
	return d
}

// WasmArtifact pushes module in the CNCF Wasm OCI artifact layout and
// returns the manifest's descriptor (its digest is what signatures cover).
func (p *Pusher) WasmArtifact(module []byte, tag string) ocispec.Descriptor {
	p.t.Helper()
	return p.WasmArtifactAs(module, MediaTypeWasmLayer, tag)
}

// WasmArtifactAs is WasmArtifact with the layer's media type chosen.
func (p *Pusher) WasmArtifactAs(module []byte, layerMT, tag string) ocispec.Descriptor {
	p.t.Helper()
	layer := p.Blob(layerMT, module)
	cfg := []byte(`{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip1","layerDigests":["` + layer.Digest.String() + `"]}`)
	// The tag as an annotation makes each push a distinct manifest, as
	// real releases are (their configs' created times differ), so that
	// signatures attached to one are not found on another.
	m := ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      p.Blob(MediaTypeWasmConfig, cfg),
		Layers:      []ocispec.Descriptor{layer},
		Annotations: map[string]string{ocispec.AnnotationVersion: tag},
	}
	return p.Push(ocispec.MediaTypeImageManifest, m, tag)
}

// HyperImage pushes module as hyper-mcp's plugin images are: a Docker v2
// image whose gzip tar layer holds /plugin.wasm.
func (p *Pusher) HyperImage(module []byte, tag string) ocispec.Descriptor {
	p.t.Helper()
	layer := p.Blob(mediaTypeDockerLayerGz, tarGz(p.t, "plugin.wasm", module))
	cfg := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	return p.Manifest(mediaTypeDockerManifest, "application/vnd.docker.container.image.v1+json", cfg, []ocispec.Descriptor{layer}, tag)
}

// Referrer attaches a Sigstore bundle to subject as cosign
// --new-bundle-format does: a manifest with subject set, one bundle layer.
func (p *Pusher) Referrer(subject ocispec.Descriptor, bundle []byte) ocispec.Descriptor {
	p.t.Helper()
	return p.ReferrerAs(subject, MediaTypeSigstoreBundle, MediaTypeSigstoreBundle, bundle)
}

// ReferrerAs pushes a manifest of artifact type at with subject set and one
// layer of media type layerMT holding data.
func (p *Pusher) ReferrerAs(subject ocispec.Descriptor, at, layerMT string, data []byte) ocispec.Descriptor {
	p.t.Helper()
	subject = ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
	m := ocispec.Manifest{
		Versioned:    specs.Versioned{SchemaVersion: 2},
		MediaType:    ocispec.MediaTypeImageManifest,
		ArtifactType: at,
		Config:       p.Blob(ocispec.MediaTypeEmptyJSON, []byte("{}")),
		Layers:       []ocispec.Descriptor{p.Blob(layerMT, data)},
		Subject:      &subject,
	}
	return p.Push(ocispec.MediaTypeImageManifest, m, "")
}

func tarGz(t testing.TB, name string, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(data))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Repository is the oras-go repository the pusher writes to, to read back
// what was pushed.
func (p *Pusher) Repository() *remote.Repository { return p.repo }
