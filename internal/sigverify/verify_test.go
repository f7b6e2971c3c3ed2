package sigverify

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/warden-run/warden/internal/sigverify/sigtest"
	"google.golang.org/protobuf/encoding/protojson"
)

const (
	identity = "https://github.com/acme/tools/.github/workflows/release.yml@refs/tags/v1.0.0"
	issuer   = "https://token.actions.githubusercontent.com"
)

// manifest stands for an OCI manifest; its sha256 is the artifact digest.
var manifest = []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`)

func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func statement(t testing.TB, digest string) []byte { return sigtest.Statement(t, digest) }

func newSigstore(t testing.TB) *ca.VirtualSigstore { return sigtest.NewSigstore(t) }

func keylessBundle(t testing.TB, vs *ca.VirtualSigstore, id, iss, digest string, logged time.Time) []byte {
	return sigtest.KeylessBundle(t, vs, id, iss, digest, logged)
}

func messageBundle(t *testing.T, vs *ca.VirtualSigstore, id, iss string, artifact []byte) []byte {
	return sigtest.MessageBundle(t, vs, id, iss, artifact)
}

func marshal(t testing.TB, pb *protobundle.Bundle) []byte { return sigtest.Marshal(t, pb) }

func keyBundle(t *testing.T, sign func(digest []byte) []byte, digest string) []byte {
	return sigtest.KeyBundle(t, sign, digest)
}

func ecdsaKey(t *testing.T) (func([]byte) []byte, []byte) { return sigtest.ECDSAKey(t) }

var keyless = Policy{Identity: identity, Issuer: issuer}

func TestKeylessValid(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	for name, p := range map[string]Policy{
		"exact":  keyless,
		"regexp": {IdentityRegexp: `https://github\.com/acme/tools/\.github/workflows/[^/]+@refs/tags/v.*`, IssuerRegexp: `https://token\.actions\.githubusercontent\.com`},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := Verify(context.Background(), b, d, p, vs)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !res.Keyless || res.Identity != identity || res.Issuer != issuer || res.Digest != d || res.SignedAt.IsZero() {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

// TestKeylessTrustedRootFile: the virtual Sigstore written as a
// trusted_root.json (what security.trusted_root names) verifies the same
// bundle through LoadTrustedRoot, and an unrelated root does not.
func TestKeylessTrustedRootFile(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	tm, err := LoadTrustedRoot(sigtest.TrustedRootFile(t, vs, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), b, d, keyless, tm); err != nil {
		t.Fatalf("Verify with the trusted root file: %v", err)
	}
	other, err := LoadTrustedRoot(sigtest.TrustedRootFile(t, newSigstore(t), t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(context.Background(), b, d, keyless, other); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("Verify against another root: %v", err)
	}
}

func TestKeylessMessageSignature(t *testing.T) {
	vs := newSigstore(t)
	b := messageBundle(t, vs, identity, issuer, manifest)
	if _, err := Verify(context.Background(), b, digestOf(manifest), keyless, vs); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	_, err := Verify(context.Background(), b, digestOf([]byte("another manifest")), keyless, vs)
	wantErr(t, err, ErrDigestMismatch, digestOf([]byte("another manifest")), digestOf(manifest))
}

func wantErr(t *testing.T, err, target error, mentions ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}

func TestKeyValid(t *testing.T) {
	sign, pub := ecdsaKey(t)
	d := digestOf(manifest)
	res, err := Verify(context.Background(), keyBundle(t, sign, d), d, Policy{PublicKey: pub}, nil)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if res.Keyless || res.KeyHint != "acme-release" || res.Digest != d {
		t.Fatalf("result %+v", res)
	}
	// The fingerprint is the policy's key's (sha256 of its DER), computed
	// here from the PEM, not from anything the bundle names.
	block, _ := pem.Decode(pub)
	fp := sha256.Sum256(block.Bytes)
	if want := "sha256:" + hex.EncodeToString(fp[:]); res.KeyFingerprint != want {
		t.Errorf("KeyFingerprint %q, want %q", res.KeyFingerprint, want)
	}
}

func TestKeyEd25519DSSE(t *testing.T) {
	pubKey, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(pubKey)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	d := digestOf(manifest)
	payload := statement(t, d)
	const pt = "application/vnd.in-toto+json"
	pae := []byte("DSSEv1 " + strconv.Itoa(len(pt)) + " " + pt + " " + strconv.Itoa(len(payload)) + " " + string(payload))
	b := marshal(t, &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: pt,
			Signatures: []*protodsse.Signature{{Sig: ed25519.Sign(priv, pae)}},
		}},
	})
	if _, err := Verify(context.Background(), b, d, Policy{PublicKey: pub}, nil); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	other := digestOf([]byte("x"))
	_, err = Verify(context.Background(), b, other, Policy{PublicKey: pub}, nil)
	wantErr(t, err, ErrDigestMismatch, other, d)
}

func TestKeyWrongKey(t *testing.T) {
	sign, _ := ecdsaKey(t)
	_, otherPub := ecdsaKey(t)
	d := digestOf(manifest)
	_, err := Verify(context.Background(), keyBundle(t, sign, d), d, Policy{PublicKey: otherPub}, nil)
	wantErr(t, err, ErrBadSignature)
}

func TestKeyOtherDigest(t *testing.T) {
	sign, pub := ecdsaKey(t)
	d, other := digestOf(manifest), digestOf([]byte("evil manifest"))
	_, err := Verify(context.Background(), keyBundle(t, sign, other), d, Policy{PublicKey: pub}, nil)
	wantErr(t, err, ErrDigestMismatch, d, other)
}

func TestUnsigned(t *testing.T) {
	vs := newSigstore(t)
	for _, b := range [][]byte{nil, {}, []byte("  \n"), []byte("null")} {
		_, err := Verify(context.Background(), b, digestOf(manifest), keyless, vs)
		wantErr(t, err, ErrUnsigned)
	}
}

func TestIdentityMismatch(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	evil := "https://github.com/evil/tools/.github/workflows/release.yml@refs/tags/v1.0.0\x1b[2J"
	b := keylessBundle(t, vs, evil, issuer, d, time.Now().Add(5*time.Minute))
	_, err := Verify(context.Background(), b, d, keyless, vs)
	wantErr(t, err, ErrIdentityMismatch, identity, `https://github.com/evil/tools`)
	if strings.Contains(err.Error(), "\x1b") {
		t.Errorf("error carries a raw escape: %q", err)
	}
	// A regexp is anchored: a prefix of the evil identity is not enough.
	_, err = Verify(context.Background(), b, d, Policy{IdentityRegexp: `https://github\.com/`, Issuer: issuer}, vs)
	wantErr(t, err, ErrIdentityMismatch)
}

func TestIssuerMismatch(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, "https://evil.example", d, time.Now().Add(5*time.Minute))
	_, err := Verify(context.Background(), b, d, keyless, vs)
	wantErr(t, err, ErrIssuerMismatch, issuer, "https://evil.example")
	_, err = Verify(context.Background(), b, d, Policy{Identity: identity, IssuerRegexp: `https://token\.actions\..*`}, vs)
	wantErr(t, err, ErrIssuerMismatch)
}

func TestOtherDigest(t *testing.T) {
	vs := newSigstore(t)
	d, other := digestOf(manifest), digestOf([]byte("evil manifest"))
	b := keylessBundle(t, vs, identity, issuer, other, time.Now().Add(5*time.Minute))
	_, err := Verify(context.Background(), b, d, keyless, vs)
	wantErr(t, err, ErrDigestMismatch, d, other)
}

func TestExpiredCertificate(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	// The VirtualSigstore's leaf certificates are valid for 10 minutes from
	// now; a log entry integrated 30 minutes from now (still inside the
	// log's validity) is outside.
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(30*time.Minute))
	_, err := Verify(context.Background(), b, d, keyless, vs)
	wantErr(t, err, ErrExpired, "valid from", "logged at")
}

func TestUntrustedRoot(t *testing.T) {
	vs, other := newSigstore(t), newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	_, err := Verify(context.Background(), b, d, keyless, other)
	wantErr(t, err, ErrBadSignature)
}

func TestMissingTlogEntry(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(b, &pb); err != nil {
		t.Fatal(err)
	}
	pb.VerificationMaterial.TlogEntries = nil
	_, err := Verify(context.Background(), marshal(t, &pb), d, keyless, vs)
	wantErr(t, err, ErrBadSignature)
}

// TestTampered changes the signed content of a valid bundle in several ways;
// each must fail, and none may pass as valid.
func TestTampered(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	tamper := map[string]func(*protobundle.Bundle){
		"signature": func(pb *protobundle.Bundle) { pb.GetDsseEnvelope().Signatures[0].Sig[5] ^= 1 },
		"payload": func(pb *protobundle.Bundle) {
			pb.GetDsseEnvelope().Payload = []byte(strings.Replace(string(pb.GetDsseEnvelope().Payload), "ghcr.io/acme/tool", "ghcr.io/evil/tool", 1))
		},
		"certificate": func(pb *protobundle.Bundle) {
			c := pb.VerificationMaterial.GetCertificate()
			c.RawBytes[len(c.RawBytes)-3] ^= 1
		},
		"log entry time": func(pb *protobundle.Bundle) { pb.VerificationMaterial.TlogEntries[0].IntegratedTime-- },
		"log entry body": func(pb *protobundle.Bundle) {
			body := pb.VerificationMaterial.TlogEntries[0].CanonicalizedBody
			body[len(body)/2] ^= 1
		},
	}
	for name, f := range tamper {
		t.Run(name, func(t *testing.T) {
			var pb protobundle.Bundle
			if err := protojson.Unmarshal(b, &pb); err != nil {
				t.Fatal(err)
			}
			f(&pb)
			tb, err := protojson.Marshal(&pb)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Verify(context.Background(), tb, d, keyless, vs)
			if err == nil {
				t.Fatalf("tampered bundle verified: %+v", res)
			}
			if !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrMalformedBundle) {
				t.Errorf("error %v, want ErrBadSignature or ErrMalformedBundle", err)
			}
		})
	}
	// Flipping raw bytes anywhere must never yield a verified result.
	for i := 0; i < len(b); i += 7 {
		tb := append([]byte(nil), b...)
		tb[i] ^= 0x01
		if res, err := Verify(context.Background(), tb, d, keyless, vs); err == nil {
			// A flip that protojson tolerates, or one in a part nothing
			// signs (a tlog entry's kindVersion restates its signed body; a
			// checkpoint's signature line names its signer only as a hint),
			// leaves what is verified intact; anything else verifying would
			// be a bug.
			if signedParts(t, b) != signedParts(t, tb) {
				t.Fatalf("flip at %d (%q then %q) verified different content: %+v", i, b[max(0, i-40):i], b[i:min(len(b), i+40)], res)
			}
		}
	}
}

func TestNotJSON(t *testing.T) {
	vs := newSigstore(t)
	for _, b := range []string{"not json", "{", `{"mediaType":"text/plain"}`, `[1,2]`, `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`} {
		_, err := Verify(context.Background(), []byte(b), digestOf(manifest), keyless, vs)
		wantErr(t, err, ErrMalformedBundle)
	}
}

func TestBadPolicy(t *testing.T) {
	vs := newSigstore(t)
	d := digestOf(manifest)
	b := keylessBundle(t, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	_, pub := ecdsaKey(t)
	for name, c := range map[string]struct {
		digest string
		p      Policy
		tm     TrustedMaterial
	}{
		"no identity":      {d, Policy{Issuer: issuer}, vs},
		"no issuer":        {d, Policy{Identity: identity}, vs},
		"both identities":  {d, Policy{Identity: identity, IdentityRegexp: ".*", Issuer: issuer}, vs},
		"bad regexp":       {d, Policy{IdentityRegexp: "(", Issuer: issuer}, vs},
		"no root":          {d, keyless, nil},
		"key and identity": {d, Policy{PublicKey: pub, Identity: identity}, vs},
		"key not PEM":      {d, Policy{PublicKey: []byte("nope")}, vs},
		"digest sha512":    {"sha512:" + strings.Repeat("a", 128), keyless, vs},
		"digest short":     {"sha256:abcd", keyless, vs},
		"digest upper":     {strings.ToUpper(d), keyless, vs},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Verify(context.Background(), b, c.digest, c.p, c.tm)
			wantErr(t, err, ErrBadPolicy)
		})
	}
	// The key/keyless kind of the bundle must be what the policy expects.
	_, err := Verify(context.Background(), b, d, Policy{PublicKey: pub}, vs)
	wantErr(t, err, ErrBadSignature, identity)
	sign, _ := ecdsaKey(t)
	_, err = Verify(context.Background(), keyBundle(t, sign, d), d, keyless, vs)
	wantErr(t, err, ErrBadSignature, "acme-release")
}

func TestCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, []byte("{}"), digestOf(manifest), keyless, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// signedParts is what a verifier relies on in a bundle: the envelope, the
// certificate, each log entry's body, time, index and log, its SET and its
// checkpoint's note text and signature bytes.
func signedParts(t testing.TB, b []byte) string {
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(b, &pb); err != nil {
		return "unparsable"
	}
	var sb strings.Builder
	env, _ := protojson.Marshal(pb.GetDsseEnvelope())
	sb.Write(env)
	sb.Write(pb.GetVerificationMaterial().GetCertificate().GetRawBytes())
	for _, e := range pb.GetVerificationMaterial().GetTlogEntries() {
		text, sigs, _ := strings.Cut(e.GetInclusionProof().GetCheckpoint().GetEnvelope(), "\n\n")
		var sigBytes []string
		for _, line := range strings.Split(sigs, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				sigBytes = append(sigBytes, f[len(f)-1])
			}
		}
		e.KindVersion = nil
		e.InclusionProof.Checkpoint = nil
		eb, _ := protojson.Marshal(e)
		sb.Write(eb)
		sb.WriteString(text)
		sb.WriteString(strings.Join(sigBytes, ","))
	}
	return sb.String()
}
