package oci

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func FuzzSelectManifest(f *testing.F) {
	wasm := ocispec.Descriptor{MediaType: MediaTypeWasmLayer, Digest: digest.Digest("sha256:" + strings.Repeat("a", 64)), Size: 10}
	img := ocispec.Descriptor{MediaType: mediaTypeDockerLayerGzip, Digest: digest.Digest("sha256:" + strings.Repeat("b", 64)), Size: 10}
	for _, m := range []ocispec.Manifest{
		{Config: ocispec.Descriptor{MediaType: MediaTypeWasmConfig}, Layers: []ocispec.Descriptor{wasm}},
		{Layers: []ocispec.Descriptor{img, img}},
		{Layers: []ocispec.Descriptor{wasm, wasm}},
		{Layers: []ocispec.Descriptor{{MediaType: "text/plain", Digest: "sha256:zz", Size: -1}}},
	} {
		b, _ := json.Marshal(m)
		f.Add(b)
	}
	f.Add([]byte(`{"layers":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseManifest(b)
		if err != nil {
			return
		}
		p, err := selectLayers(m)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if len(p.layers) == 0 || len(p.layers) > maxImageLayers {
			t.Fatalf("plan with %d layers", len(p.layers))
		}
		for _, l := range p.layers {
			ok, _ := imageLayerCompression(l.MediaType)
			switch {
			case p.layout == LayoutWasm && (!isWasmLayer(l.MediaType) || len(p.layers) != 1):
				t.Fatalf("wasm plan %+v", p)
			case p.layout == LayoutImage && !ok:
				t.Fatalf("image plan with layer %s", l.MediaType)
			}
			if l.Size < 0 || l.Digest.Validate() != nil {
				t.Fatalf("unchecked descriptor %+v", l)
			}
		}
	})
}

func FuzzSelectIndex(f *testing.F) {
	d := func(os, arch string) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest("sha256:" + strings.Repeat("c", 64)),
			Size: 1, Platform: &ocispec.Platform{OS: os, Architecture: arch}}
	}
	for _, ix := range []ocispec.Index{
		{Manifests: []ocispec.Descriptor{d("linux", "amd64"), d("wasip1", "wasm")}},
		{Manifests: []ocispec.Descriptor{d("linux", "amd64"), d("unknown", "unknown")}},
		{Manifests: []ocispec.Descriptor{d("linux", "amd64"), d("linux", "arm64")}},
		{Manifests: []ocispec.Descriptor{d("wasip2", "wasm"), d("wasi", "wasm")}},
	} {
		b, _ := json.Marshal(ix)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ix, err := parseIndex(b)
		if err != nil {
			return
		}
		e, err := selectIndexEntry(ix)
		if err != nil {
			return
		}
		if !isManifestType(e.MediaType) || e.Size < 0 || e.Digest.Validate() != nil {
			t.Fatalf("selected %+v", e)
		}
		// A wasm entry, when there is one, wins over everything else.
		for _, m := range ix.Manifests {
			if isManifestType(m.MediaType) && wasmPlatformRank(m.Platform) > wasmPlatformRank(e.Platform) {
				t.Fatalf("selected %+v over wasm entry %+v", e, m)
			}
		}
	})
}

func TestExtractPlugin(t *testing.T) {
	module := coreModule(64)
	for name, layer := range map[string][]byte{
		"root":   tarGz(t, tarEntry{name: "plugin.wasm", data: module}),
		"slash":  tarGz(t, tarEntry{name: "/plugin.wasm", data: module}),
		"dot":    tarGz(t, tarEntry{name: "./plugin.wasm", data: module}),
		"nested": tarGz(t, tarEntry{name: "a/", typ: tar.TypeDir}, tarEntry{name: "a/plugin.wasm", data: module}),
		"after":  tarGz(t, tarEntry{name: "plugin.wasm", typ: tar.TypeSymlink}, tarEntry{name: "x", data: []byte("x")}, tarEntry{name: "plugin.wasm", data: module}),
	} {
		var out bytes.Buffer
		n, err := extractPlugin(bytes.NewReader(layer), false, &out, 1<<20, 1<<20)
		if err != nil || n != int64(len(module)) || !bytes.Equal(out.Bytes(), module) {
			t.Errorf("%s: n=%d err=%v", name, n, err)
		}
	}
	for name, layer := range map[string][]byte{
		"absent":    tarGz(t, tarEntry{name: "other.wasm", data: module}),
		"lookalike": tarGz(t, tarEntry{name: "myplugin.wasm", data: module}),
	} {
		if _, err := extractPlugin(bytes.NewReader(layer), true, io.Discard, 1<<20, 1<<20); !errors.Is(err, errNoPlugin) {
			t.Errorf("%s: err=%v, want errNoPlugin", name, err)
		}
	}
	wh := tarGz(t, tarEntry{name: ".wh.plugin.wasm", data: nil})
	if _, err := extractPlugin(bytes.NewReader(wh), true, io.Discard, 1<<20, 1<<20); !errors.Is(err, errPluginDeleted) {
		t.Errorf("whiteout: err=%v", err)
	}
	// A layer that inflates past the read limit before the plugin.
	big := tarGz(t, tarEntry{name: "zeros", data: make([]byte, 1<<20)}, tarEntry{name: "plugin.wasm", data: module})
	if _, err := extractPlugin(bytes.NewReader(big), true, io.Discard, 1<<10, 64<<10); !errors.Is(err, ErrTooLarge) {
		t.Errorf("inflate bound: err=%v", err)
	}
}

func FuzzExtractPlugin(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x1f, 0x8b})
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "plugin.wasm", Size: 8, Mode: 0o644, Typeflag: tar.TypeReg})
	tw.Write(coreModule(8))
	tw.Close()
	f.Add(tb.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		const max = 4096
		var out bytes.Buffer
		n, err := extractPlugin(bytes.NewReader(b), false, &out, max, 16*max)
		if out.Len() > max+1 || int64(out.Len()) != n && err == nil {
			t.Fatalf("wrote %d bytes (n=%d, err=%v) with a limit of %d", out.Len(), n, err, max)
		}
	})
}
