package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/warden-run/warden/internal/oci/ocitest"
)

const (
	testUser = ocitest.User
	testPass = ocitest.Password
)

// coreModule is a core WebAssembly module padded with a custom section to
// size bytes (at least 8+3+len(name)).
func coreModule(size int) []byte {
	b := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	if size <= len(b) {
		return b
	}
	// custom section: id 0, LEB128 length, name length 1, name "p", payload.
	payload := size - len(b) - 2 - 2 // id + 2-byte LEB + name
	b = append(b, 0x00, byte(0x80|(payload+2)&0x7f), byte((payload+2)>>7), 0x01, 'p')
	return append(b, bytes.Repeat([]byte{0xaa}, payload-1)...)
}

func componentBinary() []byte {
	return []byte{0x00, 'a', 's', 'm', 0x0d, 0x00, 0x01, 0x00, 0x01, 0x02, 0x03}
}

// startRegistry serves go-containerregistry's in-memory registry on
// loopback, optionally wrapped (auth, tampering). It returns the host:port.
func startRegistry(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(nopLogger()))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// pusher pushes test content with oras-go (ocitest's pusher, sending
// testUser/testPass, which are ocitest's credentials).
type pusher struct {
	*ocitest.Pusher
	t    *testing.T
	host string
}

func newPusher(t *testing.T, host, name string) *pusher {
	t.Helper()
	return &pusher{Pusher: ocitest.NewPusher(t, host, name), t: t, host: host}
}

// wasmArtifact pushes the CNCF Wasm OCI artifact layout.
func (p *pusher) wasmArtifact(module []byte, tag string) (manifest, layer ocispec.Descriptor) {
	layer = p.Blob(MediaTypeWasmLayer, module)
	cfg := []byte(`{"created":"2025-01-01T00:00:00Z","architecture":"wasm","os":"wasip1","layerDigests":["` + layer.Digest.String() + `"]}`)
	manifest = p.Manifest(ocispec.MediaTypeImageManifest, MediaTypeWasmConfig, cfg, []ocispec.Descriptor{layer}, tag)
	return manifest, layer
}

type tarEntry struct {
	name string
	data []byte
	typ  byte
}

func tarGz(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: typ}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// hyperImage pushes a plugin image as `docker build` + `docker push` make
// one for hyper-mcp: Docker v2 manifest, gzip tar layers, /plugin.wasm.
func (p *pusher) hyperImage(t *testing.T, module []byte, tag string) (manifest, layer ocispec.Descriptor) {
	base := p.Blob(mediaTypeDockerLayerGzip, tarGz(t, tarEntry{name: "etc/", typ: tar.TypeDir}, tarEntry{name: "etc/motd", data: []byte("hi")}))
	layer = p.Blob(mediaTypeDockerLayerGzip, tarGz(t, tarEntry{name: "plugin.wasm", data: module}))
	cfg := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`)
	manifest = p.Manifest(mediaTypeDockerManifest, "application/vnd.docker.container.image.v1+json", cfg,
		[]ocispec.Descriptor{base, layer}, tag)
	return manifest, layer
}

// testOptions points at an empty Docker config so the host's is never read.
func testOptions(t *testing.T) Options {
	t.Helper()
	return Options{Dir: t.TempDir(), DockerConfig: filepath.Join(t.TempDir(), "config.json")}
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in Dir: %s", e.Name())
	}
}

func fetchOK(t *testing.T, ref string, opts Options) *Artifact {
	t.Helper()
	a, err := Fetch(context.Background(), ref, opts)
	if err != nil {
		t.Fatalf("Fetch(%s): %v", ref, err)
	}
	if filepath.Dir(a.Path) != filepath.Clean(opts.Dir) {
		t.Errorf("Path %s not in Dir %s", a.Path, opts.Dir)
	}
	return a
}

func fetchErr(t *testing.T, ref string, opts Options, want error, substrs ...string) error {
	t.Helper()
	a, err := Fetch(context.Background(), ref, opts)
	if err == nil {
		t.Fatalf("Fetch(%s) = %+v, want an error", ref, a)
	}
	t.Logf("refusal: %v", err)
	if want != nil && !errors.Is(err, want) {
		t.Errorf("Fetch(%s) error %q, want %v", ref, err, want)
	}
	for _, s := range substrs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if opts.Dir != "" {
		assertEmpty(t, opts.Dir)
	}
	return err
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("module file has %d bytes, want the %d pushed", len(got), len(want))
	}
}

func TestFetchWasmArtifactByTagAndDigest(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "tools/echo")
	module := coreModule(300)
	man, layer := p.wasmArtifact(module, "v1")
	opts := testOptions(t)

	a := fetchOK(t, "oci://"+host+"/tools/echo:v1", opts)
	checkFile(t, a.Path, module)
	want := host + "/tools/echo@" + man.Digest.String()
	if a.Resolved != want {
		t.Errorf("Resolved = %s, want %s", a.Resolved, want)
	}
	if a.Ref != host+"/tools/echo:v1" {
		t.Errorf("Ref = %s", a.Ref)
	}
	if a.Layout != LayoutWasm || a.ManifestDigest != man.Digest || a.ManifestMediaType != ocispec.MediaTypeImageManifest ||
		a.ConfigMediaType != MediaTypeWasmConfig || a.LayerDigest != layer.Digest || a.LayerMediaType != MediaTypeWasmLayer ||
		a.LayerSize != int64(len(module)) || a.Size != int64(len(module)) || a.ModuleDigest != digest.FromBytes(module) ||
		a.IndexDigest != "" {
		t.Errorf("artifact = %+v", a)
	}

	b := fetchOK(t, want, opts)
	checkFile(t, b.Path, module)
	if b.Resolved != want || b.LayerDigest != layer.Digest || b.Path == a.Path {
		t.Errorf("by digest: %+v", b)
	}
}

func TestFetchHyperMCPImage(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "plugins/time")
	module := coreModule(1000)
	man, layer := p.hyperImage(t, module, "latest")
	opts := testOptions(t)
	a := fetchOK(t, host+"/plugins/time:latest", opts)
	checkFile(t, a.Path, module)
	if a.Layout != LayoutImage || a.ManifestDigest != man.Digest || a.ManifestMediaType != mediaTypeDockerManifest ||
		a.LayerDigest != layer.Digest || a.LayerMediaType != mediaTypeDockerLayerGzip || a.ModuleDigest != digest.FromBytes(module) {
		t.Errorf("artifact = %+v", a)
	}
	ents, _ := os.ReadDir(opts.Dir)
	if len(ents) != 1 {
		t.Errorf("Dir holds %d files, want only the module (layer blobs removed)", len(ents))
	}

	// An image without plugin.wasm is refused.
	base := p.Blob(ocispec.MediaTypeImageLayerGzip, tarGz(t, tarEntry{name: "bin/sh", data: []byte("#!")}))
	p.Manifest(ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageConfig, []byte(`{}`), []ocispec.Descriptor{base}, "noplugin")
	fetchErr(t, host+"/plugins/time:noplugin", testOptions(t), ErrNotWasm, "/plugin.wasm", base.Digest.String())
}

func TestFetchIndex(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "tools/multi")
	module := coreModule(200)
	wasmMan, _ := p.wasmArtifact(module, "")
	linuxLayer := p.Blob(ocispec.MediaTypeImageLayerGzip, tarGz(t, tarEntry{name: "bin/tool", data: []byte("\x7fELF")}))
	linuxMan := p.Manifest(ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageConfig, []byte(`{"os":"linux"}`), []ocispec.Descriptor{linuxLayer}, "")
	armMan := p.Manifest(ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageConfig, []byte(`{"os":"linux","architecture":"arm64"}`), []ocispec.Descriptor{linuxLayer}, "")
	plat := func(d ocispec.Descriptor, os, arch string) ocispec.Descriptor {
		d.Platform = &ocispec.Platform{OS: os, Architecture: arch}
		return d
	}

	ix := p.Index(ocispec.MediaTypeImageIndex, []ocispec.Descriptor{plat(linuxMan, "linux", "amd64"), plat(wasmMan, "wasip1", "wasm")}, "v1")
	a := fetchOK(t, host+"/tools/multi:v1", testOptions(t))
	checkFile(t, a.Path, module)
	if a.IndexDigest != ix.Digest || a.IndexMediaType != ocispec.MediaTypeImageIndex || a.ManifestDigest != wasmMan.Digest ||
		a.Resolved != host+"/tools/multi@"+ix.Digest.String() {
		t.Errorf("artifact = %+v", a)
	}

	// docker buildx pushes a FROM scratch plugin as an index of the image
	// and its provenance attestation.
	plugin, _ := p.hyperImage(t, module, "")
	att := p.Manifest(ocispec.MediaTypeImageManifest, ocispec.MediaTypeImageConfig, []byte(`{}`), nil, "")
	att = plat(att, "unknown", "unknown")
	att.Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest"}
	p.Index(ocispec.MediaTypeImageIndex, []ocispec.Descriptor{plat(plugin, "linux", "amd64"), att}, "buildx")
	b := fetchOK(t, host+"/tools/multi:buildx", testOptions(t))
	checkFile(t, b.Path, module)
	if b.ManifestDigest != plugin.Digest || b.Layout != LayoutImage {
		t.Errorf("artifact = %+v", b)
	}

	// Two native platforms, no wasm: refused, naming what is there.
	p.Index(mediaTypeDockerManifestList, []ocispec.Descriptor{plat(linuxMan, "linux", "amd64"), plat(armMan, "linux", "arm64")}, "native")
	fetchErr(t, host+"/tools/multi:native", testOptions(t), ErrNotWasm, "linux/amd64", "linux/arm64", "wasm")
}

func TestFetchCredentials(t *testing.T) {
	requireAuth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, pw, ok := r.BasicAuth(); !ok || u != testUser || pw != testPass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	host := startRegistry(t, requireAuth)
	module := coreModule(100)
	newPusher(t, host, "private/tool").wasmArtifact(module, "v1")
	ref := host + "/private/tool:v1"

	t.Run("without", func(t *testing.T) {
		opts := testOptions(t)
		fetchErr(t, ref, opts, nil, ref, "docker login "+host, opts.DockerConfig)
	})

	t.Run("config auths", func(t *testing.T) {
		opts := testOptions(t)
		cfg := `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPass)) + `"}}}`
		if err := os.WriteFile(opts.DockerConfig, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		checkFile(t, fetchOK(t, ref, opts).Path, module)
	})

	t.Run("credential helper", func(t *testing.T) {
		bin := t.TempDir()
		script := "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread server\n" +
			"[ \"$server\" = \"" + host + "\" ] || { echo 'credentials not found in native keychain'; exit 1; }\n" +
			"printf '{\"ServerURL\":\"%s\",\"Username\":\"" + testUser + "\",\"Secret\":\"" + testPass + "\"}' \"$server\"\n"
		if err := os.WriteFile(filepath.Join(bin, "docker-credential-test"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		// Also through $DOCKER_CONFIG, the default location.
		cfgDir := t.TempDir()
		t.Setenv("DOCKER_CONFIG", cfgDir)
		if err := os.WriteFile(filepath.Join(cfgDir, "config.json"), []byte(`{"credHelpers":{"`+host+`":"test"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := testOptions(t)
		opts.DockerConfig = ""
		checkFile(t, fetchOK(t, ref, opts).Path, module)
	})
}

func TestFetchSizeLimit(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "big/tool")
	p.wasmArtifact(coreModule(4096), "v1")
	opts := testOptions(t)
	opts.MaxBytes = 1024
	fetchErr(t, host+"/big/tool:v1", opts, ErrTooLarge, "4096", "1024", MediaTypeWasmLayer)

	// plugin.wasm that inflates past the limit from a small gzip layer.
	p.hyperImage(t, coreModule(8192), "image")
	opts = testOptions(t)
	opts.MaxBytes = 2048
	fetchErr(t, host+"/big/tool:image", opts, ErrTooLarge, "plugin.wasm", "8192", "2048")
}

// tamper serves the blob with the given digest with one byte flipped.
func tamper(d digest.Digest) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			if len(body) > 0 {
				body[len(body)-1] ^= 0xff
			}
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
}

func TestFetchDigestMismatch(t *testing.T) {
	module := coreModule(500)
	layerDigest := digest.FromBytes(module)
	host := startRegistry(t, tamper(layerDigest))
	newPusher(t, host, "evil/tool").wasmArtifact(module, "v1")
	fetchErr(t, host+"/evil/tool:v1", testOptions(t), ErrDigestMismatch, layerDigest.String(), "hash to")
}

func TestFetchComponentRefused(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "wassette/tool")
	p.wasmArtifact(componentBinary(), "v1")
	fetchErr(t, host+"/wassette/tool:v1", testOptions(t), ErrComponent, "component", "core", "author")
}

func TestFetchNotWasmRefused(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "misc/thing")
	l1 := p.Blob("text/plain", []byte("hello"))
	l2 := p.Blob("application/vnd.oci.image.layer.v1.tar+zstd", []byte("zstd?"))
	p.Manifest(ocispec.MediaTypeImageManifest, "application/vnd.example.config+json", []byte(`{}`), []ocispec.Descriptor{l1, l2}, "v1")
	fetchErr(t, host+"/misc/thing:v1", testOptions(t), ErrNotWasm,
		"text/plain", "application/vnd.oci.image.layer.v1.tar+zstd", "application/vnd.example.config+json")

	// Labelled application/wasm, but not WebAssembly.
	p.wasmArtifact([]byte("#!/bin/sh\necho hi\n"), "liar")
	fetchErr(t, host+"/misc/thing:liar", testOptions(t), ErrNotWasm, "\\0asm", MediaTypeWasmLayer)

	// Two wasm layers are ambiguous.
	a := p.Blob(MediaTypeWasmLayer, coreModule(50))
	b := p.Blob(MediaTypeWasmLayer, coreModule(60))
	p.Manifest(ocispec.MediaTypeImageManifest, MediaTypeWasmConfig, []byte(`{}`), []ocispec.Descriptor{a, b}, "two")
	fetchErr(t, host+"/misc/thing:two", testOptions(t), ErrUnsupported, "2 WebAssembly layers")
}

func TestFetchBadReference(t *testing.T) {
	for _, ref := range []string{"", "oci://", "127.0.0.1:1/repo", "not a ref", "127.0.0.1:1/Repo:v1"} {
		_, err := Fetch(context.Background(), ref, testOptions(t))
		if err == nil || !strings.Contains(err.Error(), "REGISTRY/REPO") {
			t.Errorf("Fetch(%q) error = %v, want one naming the expected form", ref, err)
		}
	}
	// Not found names the reference.
	host := startRegistry(t, nil)
	fetchErr(t, host+"/none/here:v1", testOptions(t), nil, host+"/none/here:v1", "not found")
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "localhost:5000": true, "127.0.0.1:5000": true, "127.1.2.3": true,
		"[::1]:5000": true, "::1": true, "ghcr.io": false, "10.0.0.1:5000": false, "localhost.evil.com": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// truncate cuts the body of the blob with the given digest in half and
// drops the connection.
func truncate(d digest.Digest) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) {
				h.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			body := rec.Body.Bytes()
			w.Write(body[:len(body)/2])
			panic(http.ErrAbortHandler)
		})
	}
}

func TestFetchTruncatedAndCancelled(t *testing.T) {
	module := coreModule(40000)
	host := startRegistry(t, truncate(digest.FromBytes(module)))
	newPusher(t, host, "flaky/tool").wasmArtifact(module, "v1")
	fetchErr(t, host+"/flaky/tool:v1", testOptions(t), nil, digest.FromBytes(module).String())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	opts := testOptions(t)
	if _, err := Fetch(ctx, host+"/flaky/tool:v1", opts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err=%v", err)
	}
	assertEmpty(t, opts.Dir)
}

func TestFetchHyperMCPWhiteout(t *testing.T) {
	host := startRegistry(t, nil)
	p := newPusher(t, host, "plugins/gone")
	base := p.Blob(mediaTypeDockerLayerGzip, tarGz(t, tarEntry{name: "plugin.wasm", data: coreModule(100)}))
	top := p.Blob(mediaTypeDockerLayerGzip, tarGz(t, tarEntry{name: ".wh.plugin.wasm"}))
	p.Manifest(mediaTypeDockerManifest, "application/vnd.docker.container.image.v1+json", []byte(`{}`), []ocispec.Descriptor{base, top}, "v1")
	fetchErr(t, host+"/plugins/gone:v1", testOptions(t), ErrNotWasm, "whiteout", top.Digest.String())
}
