package sigverify

import (
	"context"
	"errors"
	"testing"
	"time"
)

// FuzzVerifyBundle feeds arbitrary bytes to the bundle parsing entry point:
// nothing may panic, nothing but a real signature may verify, and every
// failure is one of the typed errors.
func FuzzVerifyBundle(f *testing.F) {
	vs := newSigstore(f)
	d := digestOf(manifest)
	valid := keylessBundle(f, vs, identity, issuer, d, time.Now().Add(5*time.Minute))
	for _, s := range [][]byte{valid, []byte("not json"), []byte("{}"), []byte("null"), []byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`), valid[:len(valid)/2]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseBundle(b); err != nil && !errors.Is(err, ErrUnsigned) && !errors.Is(err, ErrMalformedBundle) {
			t.Fatalf("ParseBundle: untyped error %v", err)
		}
		_, err := Verify(context.Background(), b, d, keyless, vs)
		if err == nil {
			if signedParts(t, b) != signedParts(t, valid) {
				t.Fatalf("bundle %q verified", b)
			}
			return
		}
		for _, target := range []error{ErrUnsigned, ErrMalformedBundle, ErrIdentityMismatch, ErrIssuerMismatch, ErrDigestMismatch, ErrExpired, ErrBadSignature} {
			if errors.Is(err, target) {
				return
			}
		}
		t.Fatalf("untyped error %v", err)
	})
}
