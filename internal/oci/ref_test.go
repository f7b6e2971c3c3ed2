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
	// An @ past the first / (a / in the password or token), a second @, an
	// @ not followed by a digest: each may end credentials, and is refused
	// and shown from its last @ on. Only REPO@DIGEST keeps its @.
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for ref, shown := range map[string]string{
		"oci://user:pa/" + pw + "@ghcr.io/acme/tool:1":               "[redacted]@ghcr.io/acme/tool:1",
		"oci://tok/" + pw + "@ghcr.io/x:1":                           "[redacted]@ghcr.io/x:1",
		"oci://u:" + pw + "@ghcr.io/acme/tool@sha256:" + sum:         "[redacted]@sha256:" + sum,
		"oci://ghcr.io/u:" + pw + "@ghcr.io/acme/tool@sha256:" + sum: "[redacted]@sha256:" + sum,
		"oci://tok/" + pw + "@sha256:" + sum[:10]:                    "[redacted]@sha256:" + sum[:10],
	} {
		_, err1 := CanonicalRef(ref)
		err2 := CheckPushRef(ref)
		_, err3 := Fetch(t.Context(), ref, Options{Dir: t.TempDir()})
		for _, err := range []error{err1, err2, err3} {
			if !errors.Is(err, ErrCredentials) || strings.Contains(err.Error(), pw) {
				t.Errorf("%s: %v, want ErrCredentials without the secret", ref, err)
			}
		}
		if got := ShowRef(ref); got != shown || strings.Contains(got, pw) {
			t.Errorf("ShowRef(%s) = %q, want %q", ref, got, shown)
		}
	}
	// The digest form is a reference, not credentials.
	digestRef := "oci://ghcr.io/acme/tool@sha256:" + sum
	if got, err := CanonicalRef(digestRef); err != nil || got != digestRef {
		t.Errorf("CanonicalRef(%s) = %q, %v", digestRef, got, err)
	}
	if got := ShowRef(digestRef); got != strings.TrimPrefix(digestRef, "oci://") {
		t.Errorf("ShowRef(%s) = %q", digestRef, got)
	}
}

// FuzzRefCredentials: whatever precedes an @ that is not a digest
// reference's (REPO@DIGEST) is in no error of CanonicalRef or CheckPushRef,
// nor in ShowRef, wherever a / in it puts the @.
func FuzzRefCredentials(f *testing.F) {
	f.Add("user:pa/ss", "ghcr.io/acme/tool:1")
	f.Add("tok/en", "ghcr.io/x:1")
	f.Add("ghcr.io/acme/tool", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Add("u:p", "ghcr.io/a@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	f.Fuzz(func(t *testing.T, user, rest string) {
		secret := "Zq" + user + "Zq"
		if strings.Contains(user, "@") || strings.Contains(rest, "Zq") {
			return
		}
		ref := "oci://" + secret + "@" + rest
		s := strings.TrimPrefix(ref, "oci://")
		if !hasCredentialAt(s) {
			return // REPO@DIGEST: the part before the @ is the repository
		}
		_, err1 := CanonicalRef(ref)
		err2 := CheckPushRef(ref)
		for _, err := range []error{err1, err2} {
			if !errors.Is(err, ErrCredentials) || strings.Contains(err.Error(), secret) {
				t.Fatalf("%q: %v, want ErrCredentials without %q", ref, err, secret)
			}
		}
		if got := ShowRef(ref); strings.Contains(got, secret) {
			t.Fatalf("ShowRef(%q) = %q", ref, got)
		}
	})
}
