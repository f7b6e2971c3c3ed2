package net

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/warden-run/warden/internal/download"
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

func parseGrant(entry string) (grant, error) {
	var g grant
	if strings.Contains(entry, "@") {
		// Shown without its user:password@: a refused entry may still hold a
		// password, and this message reaches stderr and the logs.
		return g, fmt.Errorf("net grant %q (shown without what precedes the @): only [scheme://]host[:port] is allowed, no user or password", download.ShowHost(entry))
	}
	fields := strings.Fields(entry)
	if len(fields) == 0 {
		return g, fmt.Errorf("empty net grant")
	}
	for _, opt := range fields[1:] {
		if opt != "private" {
			return g, fmt.Errorf("net grant %q: unknown option %q (want private)", entry, opt)
		}
		g.private = true
	}
	rest := fields[0]
	g.scheme = "https"
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		g.scheme, rest = strings.ToLower(scheme), after
		if g.scheme != "https" && g.scheme != "http" {
			return g, fmt.Errorf("net grant %q: scheme must be https or http", entry)
		}
	}
	rest = strings.TrimSuffix(rest, "/")
	if strings.ContainsAny(rest, "/?#@\\") {
		return g, fmt.Errorf("net grant %q: only [scheme://]host[:port] is allowed, no path, query or user", entry)
	}
	host, port, err := splitHostPort(rest)
	if err != nil {
		return g, fmt.Errorf("net grant %q: %w", entry, err)
	}
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || port[0] == '0' {
			return g, fmt.Errorf("net grant %q: port must be 1-65535", entry)
		}
		g.port = uint16(n)
	}
	g.host = normalizeHost(host)
	switch {
	case g.host == "*":
		g.anyHost = true
	case strings.HasPrefix(g.host, "*."):
		g.wildcard, g.host = true, g.host[2:]
		if err := checkNumericHost(g.host); err != nil {
			return g, fmt.Errorf("net grant %q: %w", entry, err)
		}
		if !validName(g.host) {
			return g, fmt.Errorf("net grant %q: %q is not a valid host name", entry, g.host)
		}
	case strings.HasPrefix(host, "["):
		addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return g, fmt.Errorf("net grant %q: %s is not an IPv6 address", entry, host)
		}
		g.addr = addr.Unmap()
	default:
		if addr, err := netip.ParseAddr(g.host); err == nil {
			if !addr.Is4() {
				return g, fmt.Errorf("net grant %q: write IPv6 addresses in brackets", entry)
			}
			g.addr = addr
		} else if err := checkNumericHost(g.host); err != nil {
			return g, fmt.Errorf("net grant %q: %w", entry, err)
		} else if !validName(g.host) {
			return g, fmt.Errorf("net grant %q: %q is not a valid host name", entry, g.host)
		}
	}
	if g.private && (g.anyHost || g.wildcard || g.addr.IsValid()) {
		return g, fmt.Errorf("net grant %q: private is only allowed on an exact host name (an IP literal is explicit already)", entry)
	}
	if g.addr.IsValid() || g.host == "localhost" {
		g.private = true
	}
	return g, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port".
func splitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("missing ] in %q", s)
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if rest[0] != ':' || len(rest) == 1 {
			return "", "", fmt.Errorf("bad port in %q", s)
		}
		return host, rest[1:], nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return "", "", fmt.Errorf("bad port in %q", s)
		}
		return host, port, nil
	}
	return "", "", fmt.Errorf("write IPv6 addresses in brackets: %q", s)
}

// normalizeHost lower-cases a host and drops one trailing dot, so that
// "API.Example.com." and "api.example.com" are the same host.
func normalizeHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// validName reports whether name is an ASCII DNS name: dot-separated labels
// of 1-63 letters, digits, '-' or '_', 253 bytes at most. Internationalized
// names must be written in punycode.
func validName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

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
