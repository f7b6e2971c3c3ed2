package oci

import (
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"

	"github.com/warden-run/warden/internal/termsafe"
)

// ErrCredentials marks a reference that carries credentials
// (oci://user:password@registry/…): they would be recorded in the lockfile
// and printed, and registry credentials come from the Docker config.
var ErrCredentials = errors.New("the reference carries credentials (user:password@)")

// CanonicalRef returns the one form of an oci:// reference warden matches,
// fetches, records and shows: the registry host in lower case, without a
// trailing dot or port 443; repository and tag or digest as oras-go parses
// them. A reference with credentials is refused without showing them.
func CanonicalRef(raw string) (string, error) {
	s := strings.TrimPrefix(raw, "oci://")
	if err := checkNoCredentials(s); err != nil {
		return "", err
	}
	r, err := registry.ParseReference(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a registry reference (want oci://REGISTRY/REPO:TAG or @sha256:…): %s", termsafe.Line(raw), termsafe.Line(err.Error()))
	}
	if r.Reference == "" {
		return "", fmt.Errorf("%q names no tag or digest (want oci://REGISTRY/REPO:TAG or @sha256:…)", termsafe.Line(raw))
	}
	host, port, hasPort := strings.Cut(r.Registry, ":")
	if strings.HasPrefix(r.Registry, "[") { // an IPv6 literal
		host, port, hasPort = r.Registry, "", false
		if i := strings.LastIndex(r.Registry, "]:"); i >= 0 {
			host, port, hasPort = r.Registry[:i+1], r.Registry[i+2:], true
		}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if hasPort && port != "443" {
		host += ":" + port
	}
	r.Registry = host
	return "oci://" + r.String(), nil
}

// checkNoCredentials refuses a reference (without oci://) with an @
// anywhere but its one legitimate place, naming only what follows the
// last @. An OCI reference's @ is REGISTRY/REPO[:TAG]@DIGEST: a single @,
// after the repository, followed by a digest (ALG:HEX, as go-digest
// validates it) and nothing else. Every other @ may end a user:password@,
// wherever a / in the password or token puts it (oci://user:pa/ss@ghcr.io/…
// parses as registry "user:pa"), and oras-go's parse error would quote it.
func checkNoCredentials(s string) error {
	if !hasCredentialAt(s) {
		return nil
	}
	after := s[strings.LastIndexByte(s, '@')+1:]
	host, _, _ := strings.Cut(after, "/")
	return fmt.Errorf("oci://[redacted]@%s…: %w; log in with docker login instead (warden reads the Docker config). "+
		"A reference's only other @ is REPO@sha256:<hex>; nothing before this one is shown",
		termsafe.Line(host), ErrCredentials)
}

// hasCredentialAt reports whether s (without oci://) has an @ that is not
// the single @ of a digest reference (see checkNoCredentials).
func hasCredentialAt(s string) bool {
	i := strings.IndexByte(s, '@')
	if i < 0 {
		return false
	}
	digestForm := i == strings.LastIndexByte(s, '@') && strings.Contains(s[:i], "/") &&
		digest.Digest(s[i+1:]).Validate() == nil
	return !digestForm
}

// ShowRef is a reference as a message may show it: a reference with an @
// that may end credentials (checkNoCredentials) is shown from its last @
// on, what precedes it redacted.
func ShowRef(raw string) string {
	s := strings.TrimPrefix(raw, "oci://")
	if hasCredentialAt(s) {
		s = "[redacted]@" + s[strings.LastIndexByte(s, '@')+1:]
	}
	return termsafe.Line(s)
}
