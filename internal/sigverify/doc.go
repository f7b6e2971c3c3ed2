// Package sigverify verifies that a WebAssembly tool fetched from an OCI
// registry (internal/oci) or downloaded (internal/download) was signed by
// someone the user trusts; internal/app applies it on every install, sync
// and update.
//
// The unit of trust is the artifact's top-level OCI digest (sha256:…), what
// `cosign sign REF` signs: SignedDigest returns it for an oci.Artifact (the
// index digest when the reference named an index, else the manifest
// digest). It pins the config and every layer, so a signature over it covers
// the module. The signature
// comes as a Sigstore bundle in its protobuf-JSON form, what cosign attaches
// with --new-bundle-format and what `cosign sign-blob --bundle` writes: a
// DSSE envelope holding an in-toto statement whose subject is the digest, or
// a message signature over the digest itself.
//
// Verification is done by sigstore-go, the Sigstore project's own verifier,
// never by shelling out to cosign. A Policy says whom to trust, in one of two
// ways:
//
//   - keyless: the Fulcio certificate must name an identity (exact, or a
//     regular expression matched against the whole subject) issued by an
//     OIDC issuer (exact, or a whole-string regular expression); the
//     certificate must chain to a Fulcio CA of the trusted root (a
//     trusted_root.json, read offline), the bundle must carry a transparency
//     log entry of a log in that root, and the certificate must have been
//     valid when the entry was integrated;
//   - key: the signature must verify with a given PEM public key (ECDSA,
//     ed25519 or RSA); no certificate, identity or log entry is needed.
//
// Failures are typed (errors.Is): ErrUnsigned, ErrMalformedBundle,
// ErrIdentityMismatch, ErrIssuerMismatch, ErrDigestMismatch, ErrExpired,
// ErrBadSignature and ErrBadPolicy. Every message says what was expected and
// what was found; whatever comes from the bundle is escaped with
// internal/termsafe before it reaches a terminal.
//
// Matcher chooses the policy for a source: patterns such as ghcr.io/acme/*
// map to a Policy, the longest matching pattern wins, and a default mode
// (require, warn or off) applies to sources no pattern names.
package sigverify
