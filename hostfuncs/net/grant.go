package net

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/warden-run/warden/internal/capsyntax"
)

// grant is one parsed entry of a tool's net grant.
type grant struct {
	scheme string // "https" or "http"
	// host is the lower-case host without a trailing dot: a name, "*"
	// (any host), or the suffix of a "*.suffix" wildcard.
	host     string
	anyHost  bool
	wildcard bool
	// addr is set when host is an IP literal.
	addr netip.Addr
	port uint16 // 0: the scheme's default port
	// private allows connecting to non-public addresses for this host.
	private bool
}

// ValidateGrant reports why entry is not a valid net grant entry, or nil.
// Config loaders call it so that a typo fails at load rather than denying
// silently at call time; entries that do not parse never match anything.
//
// Syntax: [scheme://]host[:port][ private]
//
//   - scheme is https (the default) or http; an entry allows only its scheme.
//   - host is a DNS name ("api.github.com"), a wildcard "*.example.com" (any
//     name ending in .example.com, at any depth, but not example.com itself),
//     "*" (any host), or an IP literal ("10.1.2.3", "[::1]").
//   - port, when given, is the only port allowed; otherwise only the
//     scheme's default port (443 or 80).
//   - "private" allows the name to resolve to a non-public address
//     (loopback, private, link-local, ...), which the SSRF guard otherwise
//     refuses. It is only accepted on an exact DNS name. An IP literal
//     grant is explicit by itself, and allows that one address; "localhost"
//     allows loopback addresses only.
func ValidateGrant(entry string) error {
	_, err := parseGrant(entry)
	return err
}

// parseGrant parses entry with the grammar config checks grants with
// (capsyntax.ParseNetGrant).
func parseGrant(entry string) (grant, error) {
	p, err := capsyntax.ParseNetGrant(entry)
	return grant{scheme: p.Scheme, host: p.Host, anyHost: p.AnyHost, wildcard: p.Wildcard, addr: p.Addr, port: p.Port, private: p.Private}, err
}

func normalizeHost(host string) string { return capsyntax.NormalizeHost(host) }

func validName(name string) bool { return capsyntax.ValidHostName(name) }

func checkNumericHost(host string) error { return capsyntax.CheckNumericHost(host) }

// target is the part of a URL that grants are matched against.
type target struct {
	scheme string
	host   string     // normalized; for an IP literal, without brackets
	addr   netip.Addr // set when host is an IP literal
	port   uint16     // explicit or the scheme's default
}

// parseTarget checks that u is a URL warden may fetch at all (absolute,
// http or https, no credentials, an ASCII host) and returns what grants are
// matched against.
func parseTarget(u *url.URL) (target, error) {
	var t target
	t.scheme = strings.ToLower(u.Scheme)
	if t.scheme != "https" && t.scheme != "http" {
		return t, fmt.Errorf("scheme %q: only https and http are supported", u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return t, fmt.Errorf("%q has no host", u.Redacted())
	}
	if u.User != nil {
		return t, fmt.Errorf("URLs with user information are not supported")
	}
	t.host = normalizeHost(u.Hostname())
	if addr, err := netip.ParseAddr(t.host); err == nil {
		if addr.Zone() != "" {
			return t, fmt.Errorf("host %q: zoned addresses are not supported", t.host)
		}
		t.addr = addr.Unmap()
	} else if err := checkNumericHost(t.host); err != nil {
		return t, err
	} else if !validName(t.host) {
		return t, fmt.Errorf("host %q is not an ASCII DNS name or IP address", u.Hostname())
	}
	t.port = defaultPort(t.scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return t, fmt.Errorf("port %q must be 1-65535", p)
		}
		t.port = uint16(n)
	}
	return t, nil
}

func defaultPort(scheme string) uint16 {
	if scheme == "http" {
		return 80
	}
	return 443
}

// matches reports whether g allows t.
func (g *grant) matches(t target) bool {
	if g.scheme != t.scheme {
		return false
	}
	if port := orDefault(g.port, defaultPort(g.scheme)); port != t.port {
		return false
	}
	switch {
	case g.anyHost:
		return true
	case g.addr.IsValid():
		return t.addr == g.addr
	case t.addr.IsValid():
		return false // names never match IP literals
	case g.wildcard:
		return strings.HasSuffix(t.host, "."+g.host)
	}
	return t.host == g.host
}

func orDefault(v, fallback uint16) uint16 {
	if v == 0 {
		return fallback
	}
	return v
}

// String renders g in the syntax ValidateGrant accepts.
func (g *grant) String() string {
	var b strings.Builder
	b.WriteString(g.scheme + "://")
	switch {
	case g.anyHost:
		b.WriteString("*")
	case g.wildcard:
		b.WriteString("*." + g.host)
	case g.addr.Is6():
		b.WriteString("[" + g.addr.String() + "]")
	case g.addr.IsValid():
		b.WriteString(g.addr.String())
	default:
		b.WriteString(g.host)
	}
	if g.port != 0 {
		b.WriteString(":" + strconv.Itoa(int(g.port)))
	}
	if g.private && !g.addr.IsValid() && g.host != "localhost" {
		b.WriteString(" private")
	}
	return b.String()
}
