package capsyntax

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/warden-run/warden/internal/download"
)

// NetGrant is one parsed entry of a tool's net grant.
type NetGrant struct {
	Scheme string // "https" or "http"
	// Host is the lower-case host without a trailing dot: a name, "*"
	// (any host), or the suffix of a "*.suffix" wildcard.
	Host     string
	AnyHost  bool
	Wildcard bool
	// Addr is set when Host is an IP literal.
	Addr netip.Addr
	Port uint16 // 0: the scheme's default port
	// Private allows connecting to non-public addresses for this host.
	Private bool
}

// ValidateNetGrant reports why entry is not a valid net grant entry, or
// nil: the grammar hostfuncs/net documents (net.ValidateGrant) and enforces
// with the grant ParseNetGrant returns.
func ValidateNetGrant(entry string) error {
	_, err := ParseNetGrant(entry)
	return err
}

// ParseNetGrant parses a net grant entry, [scheme://]host[:port][ private].
func ParseNetGrant(entry string) (NetGrant, error) {
	var g NetGrant
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
		g.Private = true
	}
	rest := fields[0]
	g.Scheme = "https"
	if scheme, after, ok := strings.Cut(rest, "://"); ok {
		g.Scheme, rest = strings.ToLower(scheme), after
		if g.Scheme != "https" && g.Scheme != "http" {
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
		g.Port = uint16(n)
	}
	g.Host = NormalizeHost(host)
	switch {
	case g.Host == "*":
		g.AnyHost = true
	case strings.HasPrefix(g.Host, "*."):
		g.Wildcard, g.Host = true, g.Host[2:]
		if err := CheckNumericHost(g.Host); err != nil {
			return g, fmt.Errorf("net grant %q: %w", entry, err)
		}
		if !ValidHostName(g.Host) {
			return g, fmt.Errorf("net grant %q: %q is not a valid host name", entry, g.Host)
		}
	case strings.HasPrefix(host, "["):
		addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return g, fmt.Errorf("net grant %q: %s is not an IPv6 address", entry, host)
		}
		g.Addr = addr.Unmap()
	default:
		if addr, err := netip.ParseAddr(g.Host); err == nil {
			if !addr.Is4() {
				return g, fmt.Errorf("net grant %q: write IPv6 addresses in brackets", entry)
			}
			g.Addr = addr
		} else if err := CheckNumericHost(g.Host); err != nil {
			return g, fmt.Errorf("net grant %q: %w", entry, err)
		} else if !ValidHostName(g.Host) {
			return g, fmt.Errorf("net grant %q: %q is not a valid host name", entry, g.Host)
		}
	}
	if g.Private && (g.AnyHost || g.Wildcard || g.Addr.IsValid()) {
		return g, fmt.Errorf("net grant %q: private is only allowed on an exact host name (an IP literal is explicit already)", entry)
	}
	if g.Addr.IsValid() || g.Host == "localhost" {
		g.Private = true
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

// NormalizeHost lower-cases a host and drops one trailing dot, so that
// "API.Example.com." and "api.example.com" are the same host.
func NormalizeHost(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// ValidHostName reports whether name is an ASCII DNS name: dot-separated labels
// of 1-63 letters, digits, '-' or '_', 253 bytes at most. Internationalized
// names must be written in punycode.
func ValidHostName(name string) bool {
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

// CheckNumericHost refuses a host that reads as an IPv4 address in a form
// other than dotted decimal: "127.1", "2130706433", "0x7f.0.0.1",
// "0177.0.0.1". Browsers (the WHATWG URL standard) and C resolvers
// (inet_aton) read each as 127.0.0.1; Go's resolver reads none of them, and
// before this check they were DNS names here. A name that one layer takes
// for a loopback address and another for a public name is a policy matched
// on a spelling: "*" would cover it in a prompt while a resolver reached
// loopback. So such a host is refused in grants and URLs alike, naming the
// one spelling that is accepted. The rule is the WHATWG one: a host whose
// last label is a number (decimal, or hex after 0x) is an IPv4 address; no
// DNS top-level label is numeric. host is normalized (NormalizeHost) and
// not an IP literal netip accepts.
func CheckNumericHost(host string) error {
	labels := strings.Split(host, ".")
	last := labels[len(labels)-1]
	if !NumericLabel(last) {
		return nil
	}
	if addr, ok := ParseIPv4Loose(labels); ok {
		return fmt.Errorf("host %q is the IPv4 address %s in another spelling; write it as %s", host, addr, addr)
	}
	return fmt.Errorf("host %q ends in a number but is not an IPv4 address; write an IPv4 address as four decimal numbers", host)
}

// NumericLabel reports whether label is all decimal digits, or 0x followed
// by hex digits (WHATWG "ends in a number").
func NumericLabel(label string) bool {
	if h, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return label != "" && strings.Trim(label, "0123456789") == ""
}

// ParseIPv4Loose parses the labels of an IPv4 address as inet_aton does:
// one to four numbers, each decimal, octal (leading 0) or hex (0x), the
// last filling the remaining bytes.
func ParseIPv4Loose(labels []string) (netip.Addr, bool) {
	if len(labels) > 4 {
		return netip.Addr{}, false
	}
	var ip uint64
	for i, label := range labels {
		base, digits := 10, label
		switch {
		case strings.HasPrefix(strings.ToLower(label), "0x"):
			base, digits = 16, label[2:]
			if digits == "" {
				digits = "0"
			}
		case len(label) > 1 && label[0] == '0':
			base, digits = 8, label[1:]
		}
		n, err := strconv.ParseUint(digits, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			ip = ip<<8 | n
			continue
		}
		rest := 4 - i // bytes the last number fills
		if n>>(8*rest) != 0 {
			return netip.Addr{}, false
		}
		ip = ip<<(8*rest) | n
	}
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}
