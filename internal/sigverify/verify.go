package sigverify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/warden-run/warden/internal/termsafe"
)

// Typed failures; test them with errors.Is.
var (
	// ErrUnsigned: there is no bundle to verify.
	ErrUnsigned = errors.New("unsigned: no signature bundle")
	// ErrMalformedBundle: the bundle is not a Sigstore bundle warden can read.
	ErrMalformedBundle = errors.New("malformed signature bundle")
	// ErrIdentityMismatch: the certificate names another identity than the policy's.
	ErrIdentityMismatch = errors.New("signer identity mismatch")
	// ErrIssuerMismatch: the certificate's OIDC issuer is not the policy's.
	ErrIssuerMismatch = errors.New("OIDC issuer mismatch")
	// ErrDigestMismatch: the signature covers another artifact.
	ErrDigestMismatch = errors.New("signature is over another digest")
	// ErrExpired: the certificate was not valid when the signature was logged.
	ErrExpired = errors.New("certificate not valid at signing time")
	// ErrBadSignature: the signature, certificate chain or log entry does not verify.
	ErrBadSignature = errors.New("bad signature")
	// ErrBadPolicy: the policy (or digest, or trusted root) given to Verify is unusable.
	ErrBadPolicy = errors.New("invalid signature policy")
)

// MaxBundleBytes bounds the bundle Verify accepts. Real bundles are a few KiB.
const MaxBundleBytes = 1 << 20

// TrustedMaterial is sigstore-go's set of trusted Fulcio CAs, transparency
// logs and timestamp authorities; LoadTrustedRoot reads one from a
// trusted_root.json.
type TrustedMaterial = root.TrustedMaterial

// LoadTrustedRoot reads a Sigstore trusted root (trusted_root.json, as the
// Sigstore TUF repository distributes it) without any network access.
func LoadTrustedRoot(path string) (TrustedMaterial, error) {
	tr, err := root.NewTrustedRootFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("reading trusted root %s: %w", path, err)
	}
	return tr, nil
}

// Policy says whom to trust. Either PublicKey is set (key mode), or an
// identity (Identity or IdentityRegexp) and an issuer (Issuer or
// IssuerRegexp) are (keyless mode). Regular expressions are matched against
// the whole value (they are anchored), unlike cosign's
// --certificate-identity-regexp, so that "https://github.com/acme/.*" cannot
// be satisfied by an identity that merely contains it.
type Policy struct {
	Identity, IdentityRegexp string
	Issuer, IssuerRegexp     string
	// PublicKey is a PEM public key (PKIX "PUBLIC KEY": ECDSA, ed25519, RSA).
	PublicKey []byte
}

// Keyless reports whether p verifies Fulcio certificates rather than a key.
func (p Policy) Keyless() bool { return len(p.PublicKey) == 0 }

// String describes the policy for messages.
func (p Policy) String() string {
	if !p.Keyless() {
		return "public key"
	}
	id := p.Identity
	if id == "" {
		id = "~" + p.IdentityRegexp
	}
	iss := p.Issuer
	if iss == "" {
		iss = "~" + p.IssuerRegexp
	}
	return fmt.Sprintf("identity %q issued by %q", id, iss)
}

// Result describes a verified signature.
type Result struct {
	// Digest is the verified artifact digest, "sha256:<hex>".
	Digest string
	// Keyless is true for a Fulcio certificate, false for a public key.
	Keyless bool
	// Identity and Issuer are the certificate's subject alternative name and
	// OIDC issuer (keyless only), as found in the certificate (unescaped).
	Identity, Issuer string
	// KeyHint is the bundle's public key hint (key mode only; may be empty).
	// It comes from the bundle, so it names nothing verified.
	KeyHint string
	// KeyFingerprint is "sha256:<hex>" of the DER (PKIX) form of the
	// policy's public key that verified the signature (key mode only):
	// the key as configured, not anything the bundle says about itself.
	KeyFingerprint string
	// SignedAt is the earliest verified observer time (transparency log
	// integration or signed timestamp); zero in key mode without any.
	SignedAt time.Time
}

// Verify checks that bundleJSON (a Sigstore bundle, protobuf-JSON) is a
// signature over digest ("sha256:<64 hex>", the OCI manifest digest) that
// satisfies p. root is the trusted material for keyless verification (it
// may be nil in key mode). ctx is checked before the work starts;
// verification itself is offline and bounded.
func Verify(ctx context.Context, bundleJSON []byte, digest string, p Policy, root TrustedMaterial) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	want, err := parseDigest(digest)
	if err != nil {
		return nil, err
	}
	b, err := ParseBundle(bundleJSON)
	if err != nil {
		return nil, err
	}
	if p.Keyless() {
		return verifyKeyless(b, digest, want, p, root)
	}
	return verifyKey(b, digest, want, p)
}

// ParseBundle parses and validates a Sigstore bundle (protobuf-JSON).
// An empty (or all-space) input is ErrUnsigned; anything else that is not a
// bundle is ErrMalformedBundle.
func ParseBundle(bundleJSON []byte) (*bundle.Bundle, error) {
	trimmed := bytes.TrimSpace(bundleJSON)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, ErrUnsigned
	}
	if len(bundleJSON) > MaxBundleBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrMalformedBundle, len(bundleJSON), MaxBundleBytes)
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(bundleJSON); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformedBundle, termsafe.Message(err.Error()))
	}
	if _, err := b.SignatureContent(); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformedBundle, termsafe.Message(err.Error()))
	}
	if _, err := b.VerificationContent(); err != nil {
		return nil, fmt.Errorf("%w: %s", ErrMalformedBundle, termsafe.Message(err.Error()))
	}
	return &b, nil
}

func parseDigest(d string) ([]byte, error) {
	hexPart, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(hexPart) != 64 || strings.ToLower(hexPart) != hexPart {
		return nil, fmt.Errorf("%w: artifact digest %s: want sha256:<64 lowercase hex digits>", ErrBadPolicy, termsafe.Line(d))
	}
	raw, err := hex.DecodeString(hexPart)
	if err != nil {
		return nil, fmt.Errorf("%w: artifact digest %s: %v", ErrBadPolicy, termsafe.Line(d), err)
	}
	return raw, nil
}

func anchored(re string) string {
	if re == "" {
		return ""
	}
	return `^(?:` + re + `)$`
}

func verifyKeyless(b *bundle.Bundle, digest string, want []byte, p Policy, tm TrustedMaterial) (*Result, error) {
	if (p.Identity == "") == (p.IdentityRegexp == "") {
		return nil, fmt.Errorf("%w: keyless verification needs exactly one of an identity or an identity regexp", ErrBadPolicy)
	}
	if (p.Issuer == "") == (p.IssuerRegexp == "") {
		return nil, fmt.Errorf("%w: keyless verification needs exactly one of an issuer or an issuer regexp", ErrBadPolicy)
	}
	if tm == nil {
		return nil, fmt.Errorf("%w: keyless verification needs a trusted root", ErrBadPolicy)
	}
	id, err := verify.NewShortCertificateIdentity(p.Issuer, anchored(p.IssuerRegexp), p.Identity, anchored(p.IdentityRegexp))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPolicy, err)
	}
	vc, _ := b.VerificationContent()
	leaf := vc.Certificate()
	if leaf == nil {
		return nil, fmt.Errorf("%w: the bundle is signed with a key (hint %q), the policy wants a certificate for %s",
			ErrBadSignature, termsafe.Line(keyHint(vc)), p)
	}
	v, err := verify.NewVerifier(tm, verify.WithTransparencyLog(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPolicy, err)
	}
	res, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", want), verify.WithCertificateIdentity(id)))
	if err != nil {
		return nil, classify(err, b, leaf, digest, want, p)
	}
	out := &Result{Digest: digest, Keyless: true, SignedAt: earliest(res.VerifiedTimestamps)}
	if res.Signature != nil && res.Signature.Certificate != nil {
		out.Identity = res.Signature.Certificate.SubjectAlternativeName
		out.Issuer = res.Signature.Certificate.Issuer
	}
	return out, nil
}

func verifyKey(b *bundle.Bundle, digest string, want []byte, p Policy) (*Result, error) {
	if p.Identity != "" || p.IdentityRegexp != "" || p.Issuer != "" || p.IssuerRegexp != "" {
		return nil, fmt.Errorf("%w: a policy has either a public key or an identity and issuer, not both", ErrBadPolicy)
	}
	pub, err := parsePublicKey(p.PublicKey)
	if err != nil {
		return nil, err
	}
	sv, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %v", ErrBadPolicy, err)
	}
	vc, _ := b.VerificationContent()
	if leaf := vc.Certificate(); leaf != nil {
		s, _ := certificate.SummarizeCertificate(leaf)
		return nil, fmt.Errorf("%w: the bundle is signed with a certificate for %q (issuer %q), the policy wants the configured public key",
			ErrBadSignature, termsafe.Line(s.SubjectAlternativeName), termsafe.Line(s.Issuer))
	}
	key := root.NewExpiringKey(sv, time.Time{}, time.Time{})
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return key, nil })
	// A key signature needs no observer time: the key has no validity window.
	// Log entries the bundle may carry are not checked in key mode.
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadPolicy, err)
	}
	if _, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest("sha256", want), verify.WithKey())); err != nil {
		return nil, classify(err, b, nil, digest, want, p)
	}
	fp, err := KeyFingerprint(pub)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %v", ErrBadPolicy, err)
	}
	return &Result{Digest: digest, KeyHint: keyHint(vc), KeyFingerprint: fp}, nil
}

func parsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("%w: public key is not PEM", ErrBadPolicy)
	}
	if block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("%w: public key PEM block is %q, want \"PUBLIC KEY\"", ErrBadPolicy, termsafe.Line(block.Type))
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: public key: %v", ErrBadPolicy, err)
	}
	return pub, nil
}

// KeyFingerprint is "sha256:<hex>" of pub's DER (PKIX) encoding, the
// form `openssl pkey -pubin -outform DER | sha256sum` gives for a PEM key.
func KeyFingerprint(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

func keyHint(vc verify.VerificationContent) string {
	if pk := vc.PublicKey(); pk != nil {
		return pk.Hint()
	}
	return ""
}

func earliest(ts []verify.TimestampVerificationResult) time.Time {
	var t time.Time
	for _, r := range ts {
		if t.IsZero() || r.Timestamp.Before(t) {
			t = r.Timestamp
		}
	}
	return t
}

// classify turns sigstore-go's failure into one of the typed errors, naming
// what was expected and what was found. sigstore-go checks the log entry and
// the certificate's validity first, then the signature over the digest, and
// the identity last; its messages are kept at the end for detail.
func classify(err error, b *bundle.Bundle, leaf *x509.Certificate, digest string, want []byte, p Policy) error {
	detail := termsafe.Message(err.Error())
	var noID *verify.ErrNoMatchingCertificateIdentity
	if leaf != nil && errors.As(err, &noID) {
		s, serr := certificate.SummarizeCertificate(leaf)
		if serr == nil {
			if !matches(s.Issuer, p.Issuer, p.IssuerRegexp) {
				return fmt.Errorf("%w: want issuer %s, the certificate has %q", ErrIssuerMismatch, want2(p.Issuer, p.IssuerRegexp), termsafe.Line(s.Issuer))
			}
			if !matches(s.SubjectAlternativeName, p.Identity, p.IdentityRegexp) {
				return fmt.Errorf("%w: want identity %s, the certificate has %q", ErrIdentityMismatch, want2(p.Identity, p.IdentityRegexp), termsafe.Line(s.SubjectAlternativeName))
			}
		}
		return fmt.Errorf("%w: want %s: %s", ErrIdentityMismatch, p, detail)
	}
	if leaf != nil {
		if t, ok := outsideValidity(b, leaf); ok {
			return fmt.Errorf("%w: the certificate is valid from %s to %s, the signature was logged at %s",
				ErrExpired, leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))
		}
	}
	if found := foundDigests(b); len(found) > 0 && !containsDigest(found, want) {
		return fmt.Errorf("%w: want %s, the signature is over %s", ErrDigestMismatch, digest, termsafe.Line(strings.Join(found, ", ")))
	}
	return fmt.Errorf("%w: verifying against %s: %s", ErrBadSignature, p, detail)
}

func want2(exact, re string) string {
	if exact != "" {
		return fmt.Sprintf("%q", exact)
	}
	return fmt.Sprintf("matching %q", anchored(re))
}

func matches(v, exact, re string) bool {
	if exact != "" {
		return v == exact
	}
	m, err := verify.NewSANMatcher("", anchored(re))
	if err != nil {
		return false
	}
	return m.Regexp.MatchString(v)
}

// outsideValidity reports a transparency log integration time of the bundle
// at which leaf was not valid.
func outsideValidity(b *bundle.Bundle, leaf *x509.Certificate) (time.Time, bool) {
	entries, err := b.TlogEntries()
	if err != nil {
		return time.Time{}, false
	}
	for _, e := range entries {
		t := e.IntegratedTime()
		if t.IsZero() {
			continue
		}
		if t.Before(leaf.NotBefore) || t.After(leaf.NotAfter) {
			return t, true
		}
	}
	return time.Time{}, false
}

// foundDigests lists the sha256 digests the bundle's signature claims to
// cover, as "algorithm:hex".
func foundDigests(b *bundle.Bundle) []string {
	sc, err := b.SignatureContent()
	if err != nil {
		return nil
	}
	if ms := sc.MessageSignatureContent(); ms != nil {
		return []string{algName(ms.DigestAlgorithm()) + ":" + hex.EncodeToString(ms.Digest())}
	}
	env := sc.EnvelopeContent()
	if env == nil {
		return nil
	}
	st, err := env.Statement()
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range st.GetSubject() {
		for alg, h := range s.GetDigest() {
			out = append(out, alg+":"+h)
		}
	}
	return out
}

func algName(a string) string {
	switch a {
	case "SHA2_256":
		return "sha256"
	case "SHA2_384":
		return "sha384"
	case "SHA2_512":
		return "sha512"
	}
	return strings.ToLower(a)
}

func containsDigest(found []string, want []byte) bool {
	w := "sha256:" + hex.EncodeToString(want)
	for _, f := range found {
		if strings.EqualFold(f, w) {
			return true
		}
	}
	return false
}
