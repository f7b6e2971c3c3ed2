package oci

import (
	"errors"
	"fmt"
	"strings"

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

// checkNoCredentials refuses a reference (without oci://) whose registry
// part has an @, naming only what follows it.
func checkNoCredentials(s string) error {
	host, _, _ := strings.Cut(s, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		return fmt.Errorf("oci://[redacted]@%s…: %w; log in with docker login instead (warden reads the Docker config)",
			termsafe.Line(host[i+1:]), ErrCredentials)
	}
	return nil
}

// ShowRef is a reference as a message may show it: an @ in its registry
// part and what precedes it are not shown.
func ShowRef(raw string) string {
	s := strings.TrimPrefix(raw, "oci://")
	host, rest, _ := strings.Cut(s, "/")
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		s = "[redacted]@" + host[i+1:] + "/" + rest
	}
	return termsafe.Line(s)
}
