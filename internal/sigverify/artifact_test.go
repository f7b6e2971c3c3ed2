package sigverify

import (
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/warden-run/warden/internal/oci"
)

func TestSignedDigest(t *testing.T) {
	m, i := digestOf([]byte("manifest")), digestOf([]byte("index"))
	if got := SignedDigest(&oci.Artifact{ManifestDigest: digest.Digest(m)}); got != m {
		t.Errorf("image: %s, want %s", got, m)
	}
	if got := SignedDigest(&oci.Artifact{ManifestDigest: digest.Digest(m), IndexDigest: digest.Digest(i)}); got != i {
		t.Errorf("index: %s, want %s", got, i)
	}
}
