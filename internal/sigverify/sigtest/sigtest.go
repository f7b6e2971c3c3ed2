// Package sigtest makes Sigstore signatures for tests: keyless bundles from
// sigstore-go's virtual Sigstore (a Fulcio CA, a Rekor log and a timestamp
// authority in memory), key-signed bundles, and a trusted_root.json that
// trusts the virtual Sigstore, for tests that go through config.
package sigtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Digest is "sha256:<hex>" of b.
func Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// Statement is an in-toto statement over digest, what cosign signs for an
// image with --new-bundle-format.
func Statement(t testing.TB, digest string) []byte {
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

// NewSigstore starts a virtual Sigstore: a Fulcio CA, a Rekor log and a
// timestamp authority, all in memory.
func NewSigstore(t testing.TB) *ca.VirtualSigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// KeylessBundle signs digest's statement with a Fulcio certificate for id/iss
// of vs, logged at logged, as a v0.3 bundle (certificate, inclusion proof,
// RFC 3161 timestamp).
func KeylessBundle(t testing.TB, vs *ca.VirtualSigstore, id, iss, digest string, logged time.Time) []byte {
	t.Helper()
	e, err := vs.AttestAtTime(id, iss, Statement(t, digest), logged, true)
	if err != nil {
		t.Fatal(err)
	}
	return entityJSON(t, vs, e, "application/vnd.dev.sigstore.bundle.v0.3+json")
}

// MessageBundle signs artifact (a message signature over its sha256) with a
// Fulcio certificate: a v0.1 bundle, the VirtualSigstore's hashedrekord entries
// carrying an inclusion promise but no proof.
func MessageBundle(t testing.TB, vs *ca.VirtualSigstore, id, iss string, artifact []byte) []byte {
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
	return Marshal(t, pb)
}

// Marshal renders pb as protobuf-JSON and checks sigstore-go reads it.
func Marshal(t testing.TB, pb *protobundle.Bundle) []byte {
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

// KeyBundle is what `cosign sign-blob --key --new-bundle-format
// --tlog-upload=false` writes: a message signature over digest, with a
// public key hint and no log entry.
func KeyBundle(t testing.TB, sign func(digest []byte) []byte, digest string) []byte {
	t.Helper()
	raw, err := hex.DecodeString(strings.TrimPrefix(digest, "sha256:"))
	if err != nil {
		t.Fatal(err)
	}
	return Marshal(t, &protobundle.Bundle{
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

// ECDSAKey makes a P-256 key pair: a function signing a digest, and the
// PEM public key.
func ECDSAKey(t testing.TB) (func([]byte) []byte, []byte) {
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

// TrustedRootFile writes a trusted_root.json that trusts vs (its Fulcio CA,
// Rekor log, CT log and timestamp authority) into dir and returns its
// path: what security.trusted_root points at in a test config.
func TrustedRootFile(t testing.TB, vs *ca.VirtualSigstore, dir string) string {
	t.Helper()
	// The virtual Sigstore keeps each log's ID as its hex string, where a
	// trusted_root.json holds the raw key ID (and a loaded root keys its
	// logs by that ID's hex): decode it, or the logs would not be found.
	rawIDs := func(logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
		out := map[string]*root.TransparencyLog{}
		for id, l := range logs {
			raw, err := hex.DecodeString(id)
			if err != nil {
				t.Fatalf("log id %q: %v", id, err)
			}
			c := *l
			c.ID = raw
			out[id] = &c
		}
		return out
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, vs.FulcioCertificateAuthorities(), rawIDs(vs.CTLogs()),
		vs.TimestampingAuthorities(), rawIDs(vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := root.NewTrustedRootFromPath(p); err != nil {
		t.Fatalf("the trusted root written does not load: %v", err)
	}
	return p
}
