package sigverify

import "github.com/warden-run/warden/internal/oci"

// SignedDigest is the digest a signature for a fetched artifact covers: the
// top-level digest the reference resolved to, as `cosign sign REF` signs it
// (the index when the reference named one, else the image manifest). It is
// the digest in a.Resolved.
func SignedDigest(a *oci.Artifact) string {
	if a.IndexDigest != "" {
		return string(a.IndexDigest)
	}
	return string(a.ManifestDigest)
}
