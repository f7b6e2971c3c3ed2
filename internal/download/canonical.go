package download

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/warden-run/warden/internal/termsafe"
)

// ErrNotCanonical marks a URL CanonicalURL refuses because no single form
// of it can be both matched against a signature policy and fetched: an
// encoded slash or backslash, a path parameter on a dot segment, a
// non-ASCII host, a #fragment.
var ErrNotCanonical = errors.New("URL refused")

// CanonicalURL returns the one form of rawURL warden matches against the
// signature policy, fetches, records in the lockfile and shows, or an
// error saying why there is none. The form is RFC 3986's normalisation,
// made strict where servers disagree:
//
//   - scheme and host in lower case, the host's trailing dot dropped, an
//     IPv6 literal in its shortest form, the scheme's default port dropped
//     (https://EXAMPLE.com.:443 is https://example.com);
//   - an empty path is /, and dot segments are resolved (/a/../b is /b), so
//     the path matched is the path the server is asked for;
//   - percent-encoding normalised: an encoded unreserved character is
//     decoded (%7E is ~, %2E is ., so %2E%2E is a dot segment and resolved),
//     every other escape is written in upper-case hex;
//   - refused: userinfo (user:password@, which would be written to disk and
//     printed), an @ anywhere else (how a mistyped credential looks, and
//     how `user/pa@host` hides one: write it %40), a #fragment, an encoded
//     / (%2F) or \ (%5C), a raw \, an encoded % (%25, a double encoding), an
//     encoded NUL, a dot segment carrying a path parameter (..;x, which
//     some servers resolve as ..), a host that is not ASCII (write its
//     xn-- form) or not a host name, a zone in an IPv6 literal. A server may
//     decode any of these into a path other than the one matched, so none
//     is taken literally.
//
// The query is kept, its escapes normalised the same way. The result is a
// fixed point: CanonicalURL of it returns it unchanged, and url.Parse of it
// gives a URL whose String() is it, so the bytes sent are the bytes
// matched. Errors never show userinfo.
func CanonicalURL(rawURL string) (string, error) {
	u, err := parseURL(rawURL)
	if err != nil {
		return "", err
	}
	if u.Fragment != "" || strings.Contains(rawURL, "#") {
		return "", fmt.Errorf("%w: it carries a #fragment, which is never sent to the server: leave it out", ErrNotCanonical)
	}
	if u.Opaque != "" {
		return "", fmt.Errorf("%w: it is not scheme://host/path", ErrNotCanonical)
	}
	host, err := canonicalHost(u)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	if u.Scheme == "http" && !loopback(strings.Trim(host, "[]")) {
		// checkURL judged the host as written; the rule holds for the
		// host recorded too.
		return "", fmt.Errorf("%w: plain http:// is allowed only for loopback hosts", ErrInsecure)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%w: port %s is not between 1 and 65535", ErrNotCanonical, termsafe.Line(p))
		}
		if p = strconv.Itoa(n); p != defaultPort(u.Scheme) {
			host += ":" + p
		}
	}
	path, err := canonicalPath(u.EscapedPath())
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotCanonical, err)
	}
	out := u.Scheme + "://" + host + path
	if u.RawQuery != "" {
		q, err := normaliseEscapes(u.RawQuery, true)
		if err != nil {
			return "", fmt.Errorf("%w: the query: %w", ErrNotCanonical, err)
		}
		out += "?" + q
	}
	// The form must survive the parser the download uses unchanged, or
	// what is fetched would differ from what was matched.
	if back, err := url.Parse(out); err != nil || back.String() != out {
		return "", fmt.Errorf("%w: it has no form that parses back to itself", ErrNotCanonical)
	}
	return out, nil
}

// MatchKey is what security.signatures patterns are matched against for
// a canonical URL: its host (and port, when not the default) and escaped
// path, without scheme or query (example.com/releases/v1/tool.wasm).
func MatchKey(canonicalURL string) string {
	u, err := url.Parse(canonicalURL)
	if err != nil {
		return ""
	}
	return u.Host + u.EscapedPath()
}

// canonicalHost is u's host in lower case, without a trailing dot, and an
// IPv6 literal in brackets in its shortest form, or an error when it is
// not a host name or an IP address written in ASCII.
func canonicalHost(u *url.URL) (string, error) {
	h := u.Hostname()
	if strings.Contains(u.Host, "[") || strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Errorf("host %s is not an IPv6 address without a zone", termsafe.Line(h))
		}
		return "[" + a.String() + "]", nil
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" {
		return "", errors.New("no host")
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 0x80:
			return "", fmt.Errorf("host %s is not ASCII: write the internationalised name in its ASCII (xn--…) form, "+
				"which is what is matched and shown", termsafe.Line(h))
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return "", fmt.Errorf("host %s is not a host name", termsafe.Line(h))
		}
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return "", fmt.Errorf("host %s has an empty label", termsafe.Line(h))
		}
	}
	// A name whose last label is a number is an IP address to some
	// resolvers (2130706433, 0x7f.1, 127.1 are 127.0.0.1 to inet_aton):
	// only the dotted-quad form is accepted, so that the host matched is
	// the host dialled.
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is4() {
			return "", fmt.Errorf("host %s is neither a host name nor an IPv4 address in dotted-quad form", termsafe.Line(h))
		}
	}
	return h, nil
}

// canonicalPath normalises an escaped path (see CanonicalURL): escapes,
// then dot segments.
func canonicalPath(escaped string) (string, error) {
	p, err := normaliseEscapes(escaped, false)
	if err != nil {
		return "", err
	}
	if p == "" {
		return "/", nil
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	out := make([]string, 0, len(segs))
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			if before, _, ok := strings.Cut(s, ";"); ok && (before == "." || before == "..") {
				return "", fmt.Errorf("path segment %s is a dot segment with a parameter, which some servers resolve as %s: refused", termsafe.Line(s), before)
			}
			out = append(out, s)
			continue
		}
		if last { // /a/b/.. is /a/, not /a
			out = append(out, "")
		}
	}
	return "/" + strings.Join(out, "/"), nil
}

// normaliseEscapes decodes the escapes of unreserved characters and writes
// the others in upper-case hex; query also allows a raw ? and /. Characters
// that must be escaped are escaped. See CanonicalURL for what is refused.
func normaliseEscapes(s string, query bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return "", errors.New("a % that is not an escape")
			}
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
			switch {
			case unreserved(v):
				b.WriteByte(v)
				continue
			case v == '/' && !query:
				return "", errors.New("an encoded / (%2F) in the path: servers disagree on whether it separates segments, so it could " +
					"reach a path other than the one the signature policy matched")
			case v == '\\' && !query:
				return "", errors.New("an encoded \\ (%5C) in the path: some servers read it as /")
			case v == '%' && !query:
				return "", errors.New("an encoded % (%25) in the path: a double encoding, which a server decoding twice reads as another path")
			case v == 0:
				return "", errors.New("an encoded NUL (%00)")
			case v == '@':
				// %40 stays encoded: an @ is not unreserved.
			}
			fmt.Fprintf(&b, "%%%02X", v)
		case c == '@':
			return "", errors.New("an @ outside the host part (how credentials are written; if the path really has one, write it %40)")
		case c == '\\' && !query:
			return "", errors.New("a \\ in the path: some servers read it as /")
		case unreserved(c), strings.IndexByte("!$&'()*+,;=:/", c) >= 0, query && c == '?':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String(), nil
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// userinfoInText finds what looks like a URL's userinfo in free text (an
// error of the HTTP client quoting a Location header): from // to the
// last @ before a space or quote, slashes included, since a password may
// hold one.
var userinfoInText = regexp.MustCompile(`//[^\s"'<>` + "`" + `]*@`)

// RedactText removes from s, text that may quote a URL (an error of the
// HTTP client, a server's header), anything that looks like userinfo.
func RedactText(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	return userinfoInText.ReplaceAllString(s, "//[redacted]@")
}

// parseCanonical is the parsed CanonicalURL of rawURL: what Get and Bundle
// request, whatever form they were given.
func parseCanonical(rawURL string) (*url.URL, error) {
	c, err := CanonicalURL(rawURL)
	if err != nil {
		return nil, err
	}
	return url.Parse(c)
}
