package oci

import (
	"errors"
	"strings"
	"testing"
)

func TestCanonicalRef(t *testing.T) {
	for in, want := range map[string]string{
		"oci://GHCR.io/acme/fetch:1.2.0":      "oci://ghcr.io/acme/fetch:1.2.0",
		"oci://ghcr.io.:443/acme/fetch:1.2.0": "oci://ghcr.io/acme/fetch:1.2.0",
		"ghcr.io:5000/acme/fetch:1":           "oci://ghcr.io:5000/acme/fetch:1",
		"oci://[::1]:443/acme/fetch:1":        "oci://[::1]/acme/fetch:1",
		"oci://[::1]:5000/acme/fetch:1":       "oci://[::1]:5000/acme/fetch:1",
	} {
		got, err := CanonicalRef(in)
		if err != nil || got != want {
			t.Errorf("CanonicalRef(%q) = %q, %v; want %q", in, got, err, want)
		}
		if again, err := CanonicalRef(got); again != got || err != nil {
			t.Errorf("CanonicalRef(%q) = %q, %v: not a fixed point", got, again, err)
		}
	}
}

// TestRefCredentialsNeverShown: a reference with user:password@ is refused
// by fetch, push and CanonicalRef, and no error shows the password (oras'
// own parse error would quote it).
func TestRefCredentialsNeverShown(t *testing.T) {
	const pw = "s3cretPW42"
	ref := "oci://user:" + pw + "@ghcr.io/acme/fetch:1"
	_, err1 := CanonicalRef(ref)
	err2 := CheckPushRef(ref)
	_, err3 := Fetch(t.Context(), ref, Options{Dir: t.TempDir()})
	_, err4 := Push(t.Context(), ref, "nonexistent.wasm", Options{})
	for _, err := range []error{err1, err2, err3, err4} {
		if err == nil {
			t.Fatalf("%s was accepted", ref)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	for _, err := range []error{err1, err2, err3} {
		if !errors.Is(err, ErrCredentials) || !strings.Contains(err.Error(), "oci://[redacted]@ghcr.io…") {
			t.Errorf("error %v: want ErrCredentials naming oci://[redacted]@ghcr.io…", err)
		}
	}
	if got := ShowRef(ref); got != "[redacted]@ghcr.io/acme/fetch:1" {
		t.Errorf("ShowRef = %q", got)
	}
}
