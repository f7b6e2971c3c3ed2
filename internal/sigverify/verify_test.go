package sigverify

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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

// statement is an in-toto statement over digest, what cosign signs for an
// image with --new-bundle-format.
func statement(t testing.TB, digest string) []byte {
	t.Helper()
	hexPart := strings.TrimPrefix(digest, "sha256:")
	st := map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"name": "ghcr.io/acme/tool", "digest": map[string]string{"sha256": hexPart}}},
		"predicateType": "https://sigstore.dev/cosign/sign/v1",
		"predicate":     map[string]any{},
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newSigstore(t testing.TB) *ca.VirtualSigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// keylessBundle signs digest's statement with a Fulcio certificate for id/iss
// of vs, logged at logged, as a v0.3 bundle (certificate, inclusion proof,
// RFC 3161 timestamp).
func keylessBundle(t testing.TB, vs *ca.VirtualSigstore, id, iss, digest string, logged time.Time) []byte {
	t.Helper()
	e, err := vs.AttestAtTime(id, iss, statement(t, digest), logged, true)
	if err != nil {
		t.Fatal(err)
	}
	return entityJSON(t, vs, e, "application/vnd.dev.sigstore.bundle.v0.3+json")
}

// messageBundle signs artifact (a message signature over its sha256) with a
// Fulcio certificate: a v0.1 bundle, the VirtualSigstore's hashedrekord entries
// carrying an inclusion promise but no proof.
func messageBundle(t *testing.T, vs *ca.VirtualSigstore, id, iss string, artifact []byte) []byte {
	t.Helper()
	e, err := vs.Sign(id, iss, artifact)
	if err != nil {
		t.Fatal(err)
	}
	return entityJSON(t, vs, e, "application/vnd.dev.sigstore.bundle+json;version=0.1")
}

func entityJSON(t testing.TB, vs *ca.VirtualSigstore, e *ca.TestEntity, mediaType string) []byte {
	t.Helper()
	vc, _ := e.VerificationContent()
	entries, _ := e.TlogEntries()
	tss, _ := e.Timestamps()
	sc, _ := e.SignatureContent()
	vm := &protobundle.VerificationMaterial{}
	if strings.Contains(mediaType, "0.3") {
		vm.Content = &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}}
	} else {
		vm.Content = &protobundle.VerificationMaterial_X509CertificateChain{X509CertificateChain: &protocommon.X509CertificateChain{
			Certificates: []*protocommon.X509Certificate{{RawBytes: vc.Certificate().Raw}},
		}}
	}
	for _, en := range entries {
		// tlog.NewEntry leaves the kind, version and inclusion promise (SET)
		// out of its protobuf form; fill them in as Rekor would.
		tle := proto.Clone(en.TransparencyLogEntry()).(*protorekor.TransparencyLogEntry)
		var kv struct{ Kind, APIVersion string }
		if err := json.Unmarshal(tle.CanonicalizedBody, &kv); err != nil {
			t.Fatal(err)
		}
		tle.KindVersion = &protorekor.KindVersion{Kind: kv.Kind, Version: kv.APIVersion}
		set, err := vs.RekorSignPayload(tlog.RekorPayload{
			Body:           base64.StdEncoding.EncodeToString(tle.CanonicalizedBody),
			IntegratedTime: tle.IntegratedTime,
			LogIndex:       tle.LogIndex,
			LogID:          hex.EncodeToString(tle.LogId.KeyId),
		})
		if err != nil {
			t.Fatal(err)
		}
		tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
		vm.TlogEntries = append(vm.TlogEntries, tle)
	}
	if len(tss) > 0 {
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{}
		for _, ts := range tss {
			vm.TimestampVerificationData.Rfc3161Timestamps = append(vm.TimestampVerificationData.Rfc3161Timestamps, &protocommon.RFC3161SignedTimestamp{SignedTimestamp: ts})
		}
	}
	pb := &protobundle.Bundle{MediaType: mediaType, VerificationMaterial: vm}
	if env := sc.EnvelopeContent(); env != nil {
		raw := env.RawEnvelope()
		payload, err := base64.StdEncoding.DecodeString(raw.Payload)
		if err != nil {
			t.Fatal(err)
		}
		pe := &protodsse.Envelope{Payload: payload, PayloadType: raw.PayloadType}
		for _, s := range raw.Signatures {
			sig, err := base64.StdEncoding.DecodeString(s.Sig)
			if err != nil {
				t.Fatal(err)
			}
			pe.Signatures = append(pe.Signatures, &protodsse.Signature{Sig: sig, Keyid: s.KeyID})
		}
		pb.Content = &protobundle.Bundle_DsseEnvelope{DsseEnvelope: pe}
	} else {
		ms := sc.MessageSignatureContent()
		pb.Content = &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: ms.Digest()},
			Signature:     ms.Signature(),
		}}
	}
	return marshal(t, pb)
}

func marshal(t testing.TB, pb *protobundle.Bundle) []byte {
	t.Helper()
	b, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	// Check that sigstore-go reads it back, so that failures below are
	// verification failures and not test plumbing.
	var check bundle.Bundle
	if err := check.UnmarshalJSON(b); err != nil {
		t.Fatalf("test bundle does not parse: %v", err)
	}
	return b
}

// keyBundle is what `cosign sign-blob --key --new-bundle-format
// --tlog-upload=false` writes: a message signature over digest, with a
// public key hint and no log entry.
func keyBundle(t *testing.T, sign func(digest []byte) []byte, digest string) []byte {
	t.Helper()
	raw, err := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
	if err != nil {
		t.Fatal(err)
	}
	return marshal(t, &protobundle.Bundle{
		MediaType: "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: "acme-release"}},
		},
		Content: &protobundle.Bundle_MessageSignature{MessageSignature: &protocommon.MessageSignature{
			MessageDigest: &protocommon.HashOutput{Algorithm: protocommon.HashAlgorithm_SHA2_256, Digest: raw},
			Signature:     sign(raw),
		}},
	})
}

func ecdsaKey(t *testing.T) (func([]byte) []byte, []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(d []byte) []byte {
		sig, err := ecdsa.SignASN1(rand.Reader, priv, d)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	return sign, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

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
