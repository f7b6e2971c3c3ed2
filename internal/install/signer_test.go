package install

import (
	"errors"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/sigverify"
)

// TestSigner: the signer recorded comes from what verified only, one line
// whatever the certificate holds.
func TestSigner(t *testing.T) {
	for _, c := range []struct {
		name string
		sc   SignatureCheck
		want string
	}{
		{"keyless", SignatureCheck{Verified: &sigverify.Result{Keyless: true, Identity: "dev@acme.example", Issuer: "https://accounts.example.com"}},
			"dev@acme.example (issuer https://accounts.example.com)"},
		// A certificate's SAN may hold bytes a terminal or YAML would act
		// on: the record is escaped as warden shows it.
		{"keyless with control characters", SignatureCheck{Verified: &sigverify.Result{Keyless: true, Identity: "dev\x1b[2J\nfake line\xff", Issuer: "i\u202e"}},
			`dev\x1b[2J\x0afake line\xff (issuer i\u202e)`},
		// The bundle's hint names the key as its signer chose; only the
		// fingerprint of the configured key is recorded.
		{"key", SignatureCheck{Verified: &sigverify.Result{KeyHint: "acme-release", KeyFingerprint: "sha256:" + "ab"}}, "key sha256:ab"},
		{"warn", SignatureCheck{Mode: sigverify.Warn, Warning: "no bundle"}, "unsigned"},
		{"off", SignatureCheck{Mode: sigverify.Off, Warning: "off"}, "unsigned"},
	} {
		if got := c.sc.Signer(); got != c.want {
			t.Errorf("%s: Signer() = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCheckRecordedSigner: a record naming a signer must match the one
// verified now; one naming nobody asks nothing beyond the policy.
func TestCheckRecordedSigner(t *testing.T) {
	verified := SignatureCheck{Verified: &sigverify.Result{Keyless: true, Identity: "dev@acme.example", Issuer: "https://accounts.example.com"}}
	src := config.Source{Ref: "oci://ghcr.io/acme/m:1", Digest: "sha256:d"}
	for _, signer := range []string{"", SignerUnsigned, "dev@acme.example (issuer https://accounts.example.com)"} {
		src.Signer = signer
		if err := checkRecordedSigner("m", src, verified); err != nil {
			t.Errorf("record %q: %v", signer, err)
		}
	}
	for _, c := range []struct {
		record string
		sc     SignatureCheck
		want   string
	}{
		{"evil@acme.example (issuer https://accounts.example.com)", verified,
			`signer differs from the install record: tools.sources.m.signer is "evil@acme.example (issuer https://accounts.example.com)", but oci://ghcr.io/acme/m:1 at sha256:d verifies as signed by "dev@acme.example (issuer https://accounts.example.com)": refused, nothing written (if the new signer is trusted, ` + "`warden install`" + ` the module again to record it)`},
		// A module recorded as signed that now passes unsigned (the policy
		// was relaxed to warn) is refused too.
		{"dev@acme.example (issuer https://accounts.example.com)", SignatureCheck{Mode: sigverify.Warn},
			`signer differs from the install record: tools.sources.m.signer is "dev@acme.example (issuer https://accounts.example.com)", but oci://ghcr.io/acme/m:1 at sha256:d verifies as signed by "unsigned": refused, nothing written (if the new signer is trusted, ` + "`warden install`" + ` the module again to record it)`},
	} {
		src.Signer = c.record
		err := checkRecordedSigner("m", src, c.sc)
		if !errors.Is(err, ErrSignerChanged) || err.Error() != c.want {
			t.Errorf("record %q:\n got  %v\n want %s", c.record, err, c.want)
		}
	}
}
