// Package sigsign signs a published tool with a private key, offline: it
// makes the Sigstore bundle (v0.3, protobuf-JSON) that `warden publish
// --sign-key` attaches to the tool's manifest, and that package sigverify
// verifies in key mode (Policy{PublicKey: …}). There is no Fulcio
// certificate and no Rekor entry: keyless signing needs an identity
// provider, which is cosign's job.
//
// The bundle is made with sigstore-go's pkg/sign over the key the user
// holds. What is signed depends on the key, so that verification against
// the manifest's sha256 digest alone works:
//
//   - ECDSA P-256 and RSA: a message signature over the manifest bytes,
//     whose messageDigest is the manifest's sha256, the OCI digest;
//   - ECDSA P-384 and ed25519: a DSSE envelope holding an in-toto statement
//     whose subject is the manifest's sha256 digest. (Their default hash is
//     not SHA-256, and a pure ed25519 message signature can only be
//     verified against the whole manifest, not its digest.)
package sigsign

import (
	"bytes"
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
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/warden-run/warden/internal/sigverify"
	"github.com/warden-run/warden/internal/termsafe"
)

// ErrKey marks a private key SignWithKey cannot use.
var ErrKey = errors.New("unusable signing key")

// Statement constants for the DSSE form: an in-toto v1 statement with
// cosign's predicate type for a plain signature of an image.
const (
	inTotoPayloadType = "application/vnd.in-toto+json"
	inTotoStatement   = "https://in-toto.io/Statement/v1"
	cosignSignPred    = "https://sigstore.dev/cosign/sign/v1"
)

// SignWithKey signs manifestBytes (an OCI manifest, exactly as pushed) with
// the PEM private key and returns a Sigstore bundle (v0.3, protobuf-JSON)
// that verifies with sigverify.Verify against the manifest's sha256 digest
// and the matching public key. Keys are PKCS#8 "PRIVATE KEY" (ECDSA P-256 or
// P-384, ed25519, RSA of 2048 bits or more), "EC PRIVATE KEY" (SEC 1) or
// "RSA PRIVATE KEY" (PKCS#1), unencrypted. cosign's encrypted keys are
// refused with a message saying what to do instead. The bundle's key hint is
// the hex sha256 of the public key's PKIX DER encoding. The bundle is
// verified before it is returned.
func SignWithKey(ctx context.Context, manifestBytes []byte, privateKeyPEM []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(manifestBytes) == 0 {
		return nil, errors.New("sign: the manifest is empty")
	}
	kp, err := LoadKey(privateKeyPEM)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(manifestBytes)
	dgst := "sha256:" + hex.EncodeToString(sum[:])

	var content sign.Content
	switch {
	case kp.messageSig:
		content = &sign.PlainData{Data: manifestBytes}
	default:
		st, err := statement(sum[:])
		if err != nil {
			return nil, err
		}
		content = &sign.DSSEData{Data: st, PayloadType: inTotoPayloadType}
	}
	pb, err := sign.Bundle(content, kp, sign.BundleOptions{Context: ctx})
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	out, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("sign: encoding the bundle: %w", err)
	}
	pubPEM, err := kp.GetPublicKeyPem()
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if _, err := sigverify.Verify(ctx, out, dgst, sigverify.Policy{PublicKey: []byte(pubPEM)}, nil); err != nil {
		return nil, fmt.Errorf("sign: the bundle made does not verify (a bug): %w", err)
	}
	return out, nil
}

// statement is an in-toto v1 statement whose one subject is the manifest
// digest. The subject has no name the signer knows; "_" is in-toto's
// placeholder for that.
func statement(sum []byte) ([]byte, error) {
	return json.Marshal(map[string]any{
		"_type":         inTotoStatement,
		"subject":       []any{map[string]any{"name": "_", "digest": map[string]string{"sha256": hex.EncodeToString(sum)}}},
		"predicateType": cosignSignPred,
		"predicate":     map[string]any{},
	})
}

// Keypair is a private key loaded for signing: sigstore-go's sign.Keypair
// over a crypto.Signer.
type Keypair struct {
	signer     crypto.Signer
	details    signature.AlgorithmDetails
	hint       []byte
	messageSig bool
}

var _ sign.Keypair = (*Keypair)(nil)

// LoadKey reads a PEM private key (see SignWithKey for the forms taken).
func LoadKey(pemBytes []byte) (*Keypair, error) {
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("%w: not a PEM file (want a \"PRIVATE KEY\" block)", ErrKey)
	}
	if b2, _ := pem.Decode(rest); b2 != nil {
		return nil, fmt.Errorf("%w: the file holds more than one PEM block (%q, then %q); give a file with only the private key",
			ErrKey, termsafe.Line(block.Type), termsafe.Line(b2.Type))
	}
	var key any
	var err error
	switch block.Type {
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		return nil, fmt.Errorf("%w: this is an encrypted cosign key (%s), which warden does not decrypt: pass an unencrypted "+
			"PKCS#8 private key instead (e.g. one made with `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out signing.key`, "+
			"whose public half `openssl pkey -in signing.key -pubout` users put in their config), or publish without --sign-key "+
			"and sign the pushed digest with `cosign sign --key cosign.key REGISTRY/REPO@DIGEST`", ErrKey, block.Type)
	case "ENCRYPTED PRIVATE KEY":
		return nil, fmt.Errorf("%w: the PKCS#8 key is encrypted; decrypt it first (`openssl pkey -in KEY -out plain.key`) and keep the result private", ErrKey)
	case "PUBLIC KEY":
		return nil, fmt.Errorf("%w: this is a public key; --sign-key takes the private key (users verify with the public one)", ErrKey)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: PEM block %q is not a private key (want \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\")",
			ErrKey, termsafe.Line(block.Type))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKey, block.Type, err)
	}
	return newKeypair(key)
}

func newKeypair(key any) (*Keypair, error) {
	var alg protocommon.PublicKeyDetails
	kp := &Keypair{}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			alg, kp.messageSig = protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256, true
		case elliptic.P384():
			alg = protocommon.PublicKeyDetails_PKIX_ECDSA_P384_SHA_384
		default:
			return nil, fmt.Errorf("%w: ECDSA curve %s; use P-256 or P-384", ErrKey, k.Curve.Params().Name)
		}
		kp.signer = k
	case ed25519.PrivateKey:
		alg, kp.signer = protocommon.PublicKeyDetails_PKIX_ED25519, k
	case *rsa.PrivateKey:
		switch bits := k.N.BitLen(); {
		case bits < 2048:
			return nil, fmt.Errorf("%w: RSA key of %d bits; use 2048 bits or more", ErrKey, bits)
		case bits < 3072:
			alg = protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_2048_SHA256
		case bits < 4096:
			alg = protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_3072_SHA256
		default:
			alg = protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_4096_SHA256
		}
		kp.signer, kp.messageSig = k, true
	default:
		return nil, fmt.Errorf("%w: key type %T; use ECDSA P-256/P-384, ed25519 or RSA", ErrKey, key)
	}
	details, err := signature.GetAlgorithmDetails(alg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	kp.details = details
	der, err := x509.MarshalPKIXPublicKey(kp.signer.Public())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKey, err)
	}
	sum := sha256.Sum256(der)
	kp.hint = []byte(hex.EncodeToString(sum[:]))
	return kp, nil
}

// PublicKeyPEM is the PKIX "PUBLIC KEY" PEM of the key, what users put in
// their config to verify.
func (k *Keypair) PublicKeyPEM() []byte {
	b, _ := cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
	return b
}

// Hint is the key hint written into bundles: hex sha256 of the PKIX DER.
func (k *Keypair) Hint() string { return string(k.hint) }

// GetHashAlgorithm returns the hash the data is signed with.
func (k *Keypair) GetHashAlgorithm() protocommon.HashAlgorithm { return k.details.GetProtoHashType() }

// GetSigningAlgorithm returns the key's signing algorithm.
func (k *Keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.details.GetSignatureAlgorithm()
}

// GetHint returns the public key hint.
func (k *Keypair) GetHint() []byte { return k.hint }

// GetKeyAlgorithm returns the key type's name.
func (k *Keypair) GetKeyAlgorithm() string {
	switch k.details.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	case signature.ED25519:
		return "ED25519"
	}
	return ""
}

// GetPublicKey returns the public key.
func (k *Keypair) GetPublicKey() crypto.PublicKey { return k.signer.Public() }

// GetPublicKeyPem returns the public key as PEM.
func (k *Keypair) GetPublicKeyPem() (string, error) {
	b, err := cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
	return string(bytes.TrimSpace(b)) + "\n", err
}

// SignData signs data: the digest of data under the key's hash (returned as
// the second value), or, for ed25519, data itself.
func (k *Keypair) SignData(ctx context.Context, data []byte) ([]byte, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	hf := k.details.GetHashType()
	toSign := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		toSign = h.Sum(nil)
	}
	sig, err := k.signer.Sign(rand.Reader, toSign, hf)
	if err != nil {
		return nil, nil, err
	}
	return sig, toSign, nil
}
