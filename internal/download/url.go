package download

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/warden-run/warden/internal/termsafe"
)

// parseURL parses rawURL and applies the rules every URL warden downloads
// from must meet (see checkURL).
func parseURL(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		if strings.Contains(rawURL, "@") {
			// The parser's message quotes a part of the URL ("invalid port
			// \":pa\"" of https://user:pa/ss@host), which may be a password.
			return nil, fmt.Errorf("%w: not a URL, and it has an @, so it may carry credentials (user:password@): "+
				"warden does not show it, nor record it; publish the file where it can be fetched without them", ErrInsecure)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the raw URL
		}
		return nil, fmt.Errorf("not a URL: %s", termsafe.Line(err.Error()))
	}
	if err := checkURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkURL refuses a URL with credentials in it, a scheme other than https
// (http only for a loopback host), or no host.
func checkURL(u *url.URL) error {
	if u.User != nil {
		return fmt.Errorf("%w: the URL carries credentials (user@ or user:password@); warden records the URL in "+
			"config.yaml's lockfile, where a secret does not belong: publish the file where it can be fetched without them",
			ErrInsecure)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopback(u.Hostname()) {
			return fmt.Errorf("%w: plain http:// is allowed only for loopback hosts (localhost, 127.0.0.0/8, ::1), "+
				"and %s is not one: use https://", ErrInsecure, termsafe.Line(u.Host))
		}
	case "":
		return fmt.Errorf("%w: the URL has no scheme: use https://", ErrInsecure)
	default:
		return fmt.Errorf("%w: scheme %s: use https://", ErrInsecure, termsafe.Line(u.Scheme))
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: the URL names no host", ErrInsecure)
	}
	return nil
}

// LoopbackHost reports whether host (without port or brackets) is localhost
// or a loopback IP literal: the hosts plain http:// is allowed for. Other
// settings that take a URL (security.tuf_url) apply the same rule.
func LoopbackHost(host string) bool { return loopback(host) }

// loopback reports whether host (without port or brackets) is localhost or
// a loopback IP literal. Names other than localhost are not resolved: a name
// that resolves to 127.0.0.1 today may not tomorrow.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// defaultPort is the port a URL of the scheme uses when it names none.
func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// hostKey is u's host and port, lower-cased, with the scheme's default port
// filled in: what "the same host" means for a redirect.
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// configHost is how u's host is written in tools.fetch.redirect_hosts: the
// host name alone when u uses its scheme's default port, else host:port.
func configHost(u *url.URL) string {
	h := strings.ToLower(u.Hostname())
	if p := u.Port(); p != "" && p != defaultPort(u.Scheme) {
		return net.JoinHostPort(h, p)
	}
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// allowedHost reports whether entry (an item of
// tools.fetch.redirect_hosts: HOST or HOST:PORT; an IPv6 address in
// brackets) names u's host. An entry without a port matches u only on its
// scheme's default port.
func allowedHost(entry string, u *url.URL) bool {
	e, err := url.Parse("//" + strings.TrimSpace(entry))
	if err != nil || e.Hostname() == "" || e.User != nil || (e.Path != "" && e.Path != "/") {
		return false
	}
	if !strings.EqualFold(e.Hostname(), u.Hostname()) {
		return false
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	if e.Port() == "" {
		return port == defaultPort(u.Scheme)
	}
	return e.Port() == port
}

// ShowURL is rawURL as warden may print or log it anywhere: never its
// userinfo (a user:token@ is a secret), nor anything after the host of a
// URL with an @ there (see show), nor, when it cannot be parsed and has an
// @, any of it; escaped and bounded by termsafe. Every place that shows a
// URL a person typed or a lockfile holds uses it.
func ShowURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if strings.Contains(rawURL, "@") {
			return "(an unparsable URL, not shown as it may carry credentials)"
		}
		return termsafe.Line(rawURL)
	}
	return show(u)
}

// ShowHost is a host entry of config ([scheme://]HOST[:PORT], as net
// grants and tools.fetch.redirect_hosts write it) as ShowURL would show it:
// without a user:password@, which is how credentials are written even
// where they are refused.
func ShowHost(entry string) string {
	if strings.Contains(entry, "://") {
		return ShowURL(entry)
	}
	return strings.TrimPrefix(ShowURL("//"+entry), "//")
}

// show is u without its userinfo, escaped and bounded by termsafe. A URL
// with an @ anywhere after its host is shown as its scheme only: where the
// person's userinfo ended is unknown, and the parsed host may be part of
// it. https://user/pa@host/x parses as host "user" and path "/pa@host/x",
// and "pa" is a password; https://ghp_tok?en@host parses as host
// "ghp_tok", the first part of a token; https://u:1234#x@host as host u,
// port 1234.
func show(u *url.URL) string {
	c := *u
	c.User = nil
	s := c.String()
	if strings.Contains(s, "@") {
		s = "… (not shown: it has an @ after the host, so it may carry credentials)"
		if c.Scheme != "" {
			s = c.Scheme + "://" + s
		}
	}
	return termsafe.Line(s)
}

// redirectPolicy is the http.Client CheckRedirect of one download whose
// first request went to orig.
type redirectPolicy struct {
	orig     *url.URL
	allow    []string
	sameHost func(canonicalURL string) error
}

func (p *redirectPolicy) check(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return &policyError{fmt.Errorf("%w: more than %d redirects (the last to %s)", ErrRedirect, MaxRedirects, show(req.URL))}
	}
	prev, to := via[len(via)-1].URL, req.URL
	if prev.Scheme == "https" && to.Scheme != "https" {
		return &policyError{fmt.Errorf("%w: %w: %s redirected from https to %s, which would carry the download unencrypted",
			ErrInsecure, ErrRedirect, show(prev), show(to))}
	}
	if err := checkURL(to); err != nil {
		return &policyError{fmt.Errorf("%w: to %s: %w", ErrRedirect, show(to), err)}
	}
	if hostKey(to) == hostKey(p.orig) {
		if p.sameHost == nil {
			return nil
		}
		c, err := CanonicalURL(to.String())
		if err == nil {
			err = p.sameHost(c)
		}
		if err != nil {
			return &policyError{fmt.Errorf("%w: %s redirected to %s: %w", ErrRedirect, show(prev), show(to), err)}
		}
		return nil
	}
	for _, h := range p.allow {
		if allowedHost(h, to) {
			return nil
		}
	}
	from, target := termsafe.Line(p.orig.Host), termsafe.Line(to.Host)
	return &policyError{fmt.Errorf("%w: %s redirected to another host, %s; warden follows redirects only within the host "+
		"the URL names, since that host is what the lockfile records and the signature policy trusts. If %s is "+
		"where %s keeps its downloads, allow it in config.yaml: tools.fetch.redirect_hosts: [%s]",
		ErrRedirect, from, target, target, from, termsafe.Line(configHost(to)))}
}

// policyError marks an error warden wrote itself (already escaped), so that
// it is not escaped again when the http.Client hands it back.
type policyError struct{ err error }

func (e *policyError) Error() string { return e.err.Error() }
func (e *policyError) Unwrap() error { return e.err }

// safeError shows an error that may quote the server (a TLS alert, a bad
// Location header) through termsafe, keeping it for errors.Is/As.
type safeError struct{ err error }

func (e *safeError) Error() string {
	msg := e.err.Error()
	if strings.Contains(msg, "failed to parse Location header") && strings.Contains(msg, "@") {
		// net/http quotes the header and the parser's complaint about it,
		// which may be a part of a password (invalid port ":pa").
		return "the server redirected to a Location that is not a URL and has an @ (not shown: it may carry credentials)"
	}
	return termsafe.Line(RedactText(msg))
}
func (e *safeError) Unwrap() error { return e.err }
