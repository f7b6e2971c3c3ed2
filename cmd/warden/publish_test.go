package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/oci/ocitest"
	"github.com/warden-run/warden/internal/sigverify"
	"github.com/warden-run/warden/internal/wasmfile"
)

// startAuthRegistry serves a registry on loopback that requires
// credentials (ocitest), and points $DOCKER_CONFIG at an empty config (no
// credentials) for the test.
func startAuthRegistry(t *testing.T) (host, dockerDir string) {
	t.Helper()
	reg := ocitest.Start(t, nil)
	dockerDir = t.TempDir()
	t.Setenv("DOCKER_CONFIG", dockerDir)
	return reg.Host, dockerDir
}

// login writes the registry's credentials into the Docker config.
func login(t *testing.T, dockerDir, host string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dockerDir, "config.json"), ocitest.DockerConfig(host), 0o600); err != nil {
		t.Fatal(err)
	}
}

// repositories lists what the registry holds.
func repositories(t *testing.T, host string) []string { return ocitest.Catalog(t, host) }

var installLine = regexp.MustCompile(`warden install oci://(\S+@sha256:[0-9a-f]{64})\n`)

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestPublishCLI(t *testing.T) {
	cfgPath, echo := setup(t)
	host, dockerDir := startAuthRegistry(t)
	ref := "oci://" + host + "/tools/echo:1.0.0"

	_, err := run(t, "", "-c", cfgPath, "publish", echo, ref)
	if err == nil || !strings.Contains(err.Error(), "docker login "+host) || !strings.Contains(err.Error(), "requires credentials") {
		t.Fatalf("publish without credentials: %v", err)
	}
	if r := repositories(t, host); len(r) != 0 {
		t.Fatalf("repositories after a refused publish: %v", r)
	}

	login(t, dockerDir, host)
	out, err := run(t, "", "-c", cfgPath, "publish", echo, ref)
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	t.Logf("output:\n%s", out)
	m := installLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no install line in:\n%s", out)
	}
	for _, want := range []string{"Pushed   " + host + "/tools/echo:1.0.0", "Tools    echo (version 1.0.0)",
		"cosign sign --new-bundle-format --registry-referrers-mode=oci-1-1 " + m[1], "Not signed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	a, err := oci.Fetch(context.Background(), m[1], oci.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if a.ModuleDigest.String() != fileSHA(t, echo) || a.Layout != oci.LayoutWasm || a.Resolved != m[1] {
		t.Errorf("fetched %+v, want module %s", a, fileSHA(t, echo))
	}
	if !strings.Contains(out, "Digest   "+a.ManifestDigest.String()) {
		t.Errorf("digest %s not shown", a.ManifestDigest)
	}
	// Unsigned: nothing attached.
	f, err := oci.Bundles(context.Background(), m[1], a.ManifestDigest.String(), oci.Options{})
	if err != nil || len(f.Bundles) != 0 {
		t.Errorf("bundles of an unsigned publish: %v %v", f, err)
	}
}

func writeKey(t *testing.T) (keyPath string, pubPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	pubDER, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	keyPath = filepath.Join(t.TempDir(), "signing.key")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}

// TestPublishSignKey: a publish signed with --sign-key attaches a bundle
// as a referrer that verifies with the public key.
func TestPublishSignKey(t *testing.T) {
	cfgPath, echo := setup(t)
	host, dockerDir := startAuthRegistry(t)
	login(t, dockerDir, host)
	keyPath, pub := writeKey(t)

	out, err := run(t, "", "-c", cfgPath, "publish", "--sign-key", keyPath, echo, "oci://"+host+"/acme/echo:v1")
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	t.Logf("output:\n%s", out)
	m := installLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no install line in:\n%s", out)
	}
	for _, want := range []string{"Signed   with " + keyPath, string(pub), "  security:\n    signatures:\n      \"" + host + "/acme/echo\":\n        key: keys/echo.pub\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "Not signed") {
		t.Error("keyless note shown for a signed publish")
	}
	dgst := m[1][strings.Index(m[1], "@")+1:]
	f, err := oci.Bundles(context.Background(), m[1], dgst, oci.Options{})
	if err != nil || len(f.Bundles) != 1 {
		t.Fatalf("bundles: %+v %v", f, err)
	}
	if _, err := sigverify.Verify(context.Background(), f.Bundles[0], dgst, sigverify.Policy{PublicKey: pub}, nil); err != nil {
		t.Errorf("Verify: %v", err)
	}
	_, otherPub := writeKey(t)
	if _, err := sigverify.Verify(context.Background(), f.Bundles[0], dgst, sigverify.Policy{PublicKey: otherPub}, nil); !errors.Is(err, sigverify.ErrBadSignature) {
		t.Errorf("Verify with another key: %v", err)
	}
}

// TestPublishRefusals: what warden cannot serve, a digest reference and an
// unusable key are refused with nothing pushed.
func TestPublishRefusals(t *testing.T) {
	cfgPath, echo := setup(t)
	host, dockerDir := startAuthRegistry(t)
	login(t, dockerDir, host)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	encrypted := write("cosign.key", pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte("x")}))
	tag := "oci://" + host + "/tools/x:v1"
	for _, c := range []struct {
		name string
		args []string
		want error
		msg  string
	}{
		{"not wasm", []string{write("script.wasm", []byte("#!/bin/sh\necho hi\n")), tag}, wasmfile.ErrNotWasm, "\\0asm"},
		{"component", []string{write("comp.wasm", []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0, 1, 2}), tag}, wasmfile.ErrComponent, "component"},
		{"no tool", []string{write("bare.wasm", []byte{0, 'a', 's', 'm', 1, 0, 0, 0}), tag}, nil, "cannot serve"},
		{"missing file", []string{filepath.Join(dir, "none.wasm"), tag}, os.ErrNotExist, "none.wasm"},
		{"digest ref", []string{echo, "oci://" + host + "/tools/x@sha256:" + strings.Repeat("a", 64)}, oci.ErrUnsupported, "name a tag"},
		{"not a ref", []string{echo, "oci://nope"}, nil, "REGISTRY/REPO:TAG"},
		{"encrypted key", []string{"--sign-key", encrypted, echo, tag}, nil, "cosign sign --key"},
		{"missing key", []string{"--sign-key", filepath.Join(dir, "none.key"), echo, tag}, os.ErrNotExist, "--sign-key"},
		{"one arg", []string{echo}, nil, "accepts 2 arg(s)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := run(t, "", append([]string{"-c", cfgPath, "publish"}, c.args...)...)
			if err == nil {
				t.Fatal("publish succeeded")
			}
			t.Logf("refusal: %v", err)
			if c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("error %v, want %v", err, c.want)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not mention %q", err, c.msg)
			}
		})
	}
	if r := repositories(t, host); len(r) != 0 {
		t.Errorf("repositories after refused publishes: %v", r)
	}
}

// TestPublishThenInstall is an author's and a user's path end to end: the
// author publishes with --sign-key, the user trusts the public key for the
// repository and installs by the printed digest; the tool is installed,
// verified and locked. The same install refuses under a policy naming
// another key.
func TestPublishThenInstall(t *testing.T) {
	cfgPath, echo := setup(t)
	host, dockerDir := startAuthRegistry(t)
	login(t, dockerDir, host)
	keyPath, pub := writeKey(t)
	out, err := run(t, "", "-c", cfgPath, "publish", "--sign-key", keyPath, echo, "oci://"+host+"/acme/echo:v1")
	if err != nil {
		t.Fatalf("publish: %v\n%s", err, out)
	}
	m := installLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no install line in:\n%s", out)
	}
	ref := "oci://" + m[1]

	dir := filepath.Dir(cfgPath)
	_, otherPub := writeKey(t)
	os.WriteFile(filepath.Join(dir, "other.pub"), otherPub, 0o644)
	os.WriteFile(filepath.Join(dir, "echo.pub"), pub, 0o644)
	body := readFile(t, cfgPath)
	trust := func(key string) {
		b := append(append([]byte(nil), body...), fmt.Sprintf("security:\n  signatures:\n    %q: {key: %s}\n", host+"/acme/echo", key)...)
		if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	trust("other.pub")
	if out, err := run(t, "", "-c", cfgPath, "install", "--yes", ref); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Fatalf("install under another key: %v\n%s", err, out)
	}
	trust("echo.pub")
	out, err = run(t, "", "-c", cfgPath, "install", "--yes", ref)
	if err != nil || !strings.Contains(out, "verified: signed with the public key") {
		t.Fatalf("install: %v\n%s", err, out)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if src := cfg.Tools.Sources["echo"]; src.Ref != ref || "sha256:"+cfg.Tools.Pins["echo"] != fileSHA(t, echo) {
		t.Errorf("lock: %+v, pin %s", src, cfg.Tools.Pins["echo"])
	}
}
