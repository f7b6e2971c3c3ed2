package sigsign

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/sigstore/sigstore-go/pkg/bundle"

	"github.com/warden-run/warden/internal/sigverify"
)

var manifest = []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{}}`)

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// keyPEMs returns a private key in the given PEM form and its public key.
func keyPEMs(t *testing.T, key crypto.Signer, form string) (priv, pub []byte) {
	t.Helper()
	var der []byte
	var err error
	switch form {
	case "PRIVATE KEY":
		der, err = x509.MarshalPKCS8PrivateKey(key)
	case "EC PRIVATE KEY":
		der, err = x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	case "RSA PRIVATE KEY":
		der = x509.MarshalPKCS1PrivateKey(key.(*rsa.PrivateKey))
	}
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: form, Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
}

func ecKey(t *testing.T, c elliptic.Curve) crypto.Signer {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSignWithKeyVerifies(t *testing.T) {
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, form string
		key        crypto.Signer
		message    bool // a message signature, else DSSE
	}{
		{"p256 pkcs8", "PRIVATE KEY", ecKey(t, elliptic.P256()), true},
		{"p256 sec1", "EC PRIVATE KEY", ecKey(t, elliptic.P256()), true},
		{"p384 pkcs8", "PRIVATE KEY", ecKey(t, elliptic.P384()), false},
		{"p384 sec1", "EC PRIVATE KEY", ecKey(t, elliptic.P384()), false},
		{"ed25519", "PRIVATE KEY", edKey, false},
		{"rsa pkcs8", "PRIVATE KEY", rsaKey, true},
		{"rsa pkcs1", "RSA PRIVATE KEY", rsaKey, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			priv, pub := keyPEMs(t, c.key, c.form)
			out, err := SignWithKey(context.Background(), manifest, priv)
			if err != nil {
				t.Fatalf("SignWithKey: %v", err)
			}
			d := digestOf(manifest)
			res, err := sigverify.Verify(context.Background(), out, d, sigverify.Policy{PublicKey: pub}, nil)
			if err != nil {
				t.Fatalf("Verify: %v\n%s", err, out)
			}
			pubDER, _ := x509.MarshalPKIXPublicKey(c.key.Public())
			hint := sha256.Sum256(pubDER)
			if res.Digest != d || res.Keyless || res.KeyHint != hex.EncodeToString(hint[:]) {
				t.Errorf("result %+v", res)
			}

			var b bundle.Bundle
			if err := b.UnmarshalJSON(out); err != nil {
				t.Fatal(err)
			}
			if b.GetMediaType() != "application/vnd.dev.sigstore.bundle.v0.3+json" {
				t.Errorf("media type %s", b.GetMediaType())
			}
			if ms := b.GetMessageSignature(); c.message {
				if ms == nil || hex.EncodeToString(ms.GetMessageDigest().GetDigest()) != strings.TrimPrefix(d, "sha256:") ||
					ms.GetMessageDigest().GetAlgorithm().String() != "SHA2_256" {
					t.Errorf("message signature %v, want messageDigest %s", ms, d)
				}
			} else if b.GetDsseEnvelope() == nil {
				t.Errorf("no DSSE envelope")
			}
			if len(b.GetVerificationMaterial().GetTlogEntries()) != 0 || b.GetVerificationMaterial().GetPublicKey() == nil {
				t.Errorf("verification material %v", b.GetVerificationMaterial())
			}

			// Another key fails, and so does another manifest.
			_, otherPub := keyPEMs(t, ecKey(t, elliptic.P256()), "PRIVATE KEY")
			if _, err := sigverify.Verify(context.Background(), out, d, sigverify.Policy{PublicKey: otherPub}, nil); !errors.Is(err, sigverify.ErrBadSignature) {
				t.Errorf("other key: %v, want ErrBadSignature", err)
			}
			other := digestOf([]byte("another manifest"))
			if _, err := sigverify.Verify(context.Background(), out, other, sigverify.Policy{PublicKey: pub}, nil); !errors.Is(err, sigverify.ErrDigestMismatch) {
				t.Errorf("other manifest: %v, want ErrDigestMismatch", err)
			}
		})
	}
}

func TestSignWithKeyRefusals(t *testing.T) {
	_, pub := keyPEMs(t, ecKey(t, elliptic.P256()), "PRIVATE KEY")
	p224, _ := keyPEMs(t, ecKey(t, elliptic.P224()), "PRIVATE KEY")
	smallRSA, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	rsa1024, _ := keyPEMs(t, smallRSA, "PRIVATE KEY")
	good, _ := keyPEMs(t, ecKey(t, elliptic.P256()), "PRIVATE KEY")
	block := func(typ string) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: []byte("junk")}) }
	for name, c := range map[string]struct {
		key  []byte
		want []string
	}{
		"encrypted sigstore": {block("ENCRYPTED SIGSTORE PRIVATE KEY"), []string{"encrypted cosign key", "unencrypted", "PKCS#8", "cosign sign --key"}},
		"encrypted cosign":   {block("ENCRYPTED COSIGN PRIVATE KEY"), []string{"encrypted cosign key", "cosign sign --key"}},
		"encrypted pkcs8":    {block("ENCRYPTED PRIVATE KEY"), []string{"encrypted", "openssl"}},
		"public key":         {pub, []string{"public key"}},
		"not pem":            {[]byte("hello"), []string{"not a PEM"}},
		"certificate":        {block("CERTIFICATE"), []string{"not a private key"}},
		"junk pkcs8":         {block("PRIVATE KEY"), []string{"PRIVATE KEY"}},
		"p224":               {p224, []string{"P-224"}},
		"rsa 1024":           {rsa1024, []string{"1024 bits"}},
		"two blocks":         {append(append([]byte{}, good...), pub...), []string{"more than one PEM block"}},
	} {
		_, err := SignWithKey(context.Background(), manifest, c.key)
		if !errors.Is(err, ErrKey) {
			t.Errorf("%s: %v, want ErrKey", name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", name, err, w)
			}
		}
	}
	if _, err := SignWithKey(context.Background(), nil, good); err == nil {
		t.Error("empty manifest signed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SignWithKey(ctx, manifest, good); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
