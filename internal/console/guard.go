package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/warden-run/warden/internal/termsafe"
)

// csp allows the console's own script and stylesheet and nothing else: no
// inline script or style, no framing, forms posting only to itself.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// csrfField is the form field (and csrfHeader the header) carrying a
// session's CSRF token.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// headers sets what every response of the console carries, page, asset
// or refusal.
func (c *Console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin, not no-referrer: under no-referrer a browser sends
		// "Origin: null" on a form POST, which the Origin check refuses.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if c.opts.TLS {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// wrap guards route r: the Host check on every route, a session on every
// route that is not public, and the CSRF token and Origin on every POST.
func (c *Console) wrap(rt Route) http.Handler {
	return c.headers(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !c.hostAllowed(r.Host) {
			c.log.Warn("console: refused a request: Host not allowed (DNS-rebinding protection)", "host", termsafe.Line(r.Host))
			http.Error(w, "forbidden: Host "+termsafe.Line(r.Host)+" is not this console's (DNS-rebinding protection)", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if err := c.checkOrigin(r); err != "" {
				c.log.Warn("console: refused a cross-origin request", "path", termsafe.Line(r.URL.Path), "origin", termsafe.Line(r.Header.Get("Origin")))
				http.Error(w, "forbidden: "+err, http.StatusForbidden)
				return
			}
		}
		var s *session
		if cookie, err := r.Cookie(c.cookieName()); err == nil {
			s, _ = c.sessions.get(cookie.Value)
		}
		if s == nil && !rt.Public {
			if r.Method == http.MethodGet && !strings.HasSuffix(rt.Path, "events") && !strings.HasSuffix(rt.Path, "list") {
				c.render(w, http.StatusUnauthorized, "login", nil, c.loginData())
				return
			}
			http.Error(w, "unauthorized: log in to the console first", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && !rt.Public {
			r.Body = http.MaxBytesReader(w, r.Body, maxForm)
			token := r.Header.Get(csrfHeader)
			if token == "" {
				token = r.PostFormValue(csrfField)
			}
			if subtle.ConstantTimeCompare([]byte(token), []byte(s.csrf)) != 1 {
				c.log.Warn("console: refused a request without this session's CSRF token", "path", termsafe.Line(r.URL.Path))
				http.Error(w, "forbidden: the request does not carry this session's CSRF token; reload the page", http.StatusForbidden)
				return
			}
		}
		rt.h(w, r, s)
	}))
}

// notAdmin refuses a change only a console admin may make, saying why,
// and reports whether it did.
func (c *Console) notAdmin(w http.ResponseWriter, s *session, page string, data any) bool {
	if s.admin {
		return false
	}
	c.log.Warn("console: refused a change by a person who is not a console admin", "who", termsafe.Line(whoOf(s.who)))
	c.renderPage(w, http.StatusForbidden, page, s, data,
		"Changing grants and installing modules is for the console's admins (server.console_login.admin_subjects, admin_groups), and you ("+
			whoOf(s.who)+", groups: "+listOf(s.who.Groups)+") are not among them.", "")
	return true
}

// maxForm bounds a form's body.
const maxForm = 1 << 20

// hostAllowed is the DNS-rebinding check: a page on another name that
// resolves to this address must not reach the console.
func (c *Console) hostAllowed(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.Contains(c.opts.Hosts, host)
}

// checkOrigin refuses a state change whose Origin is not this console's
// (a browser always sends Origin on a POST); "" means allowed.
func (c *Console) checkOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "a state change must carry an Origin header (a browser sends one)"
	}
	// The console's public origin is its own whatever the Host: behind
	// a same-machine proxy the Host is a loopback name.
	public := c.opts.Origin != "" && origin == c.opts.Origin
	if u, err := url.Parse(origin); !public && (err != nil || u.Host != r.Host || u.Scheme != c.scheme()) {
		return "Origin " + termsafe.Line(origin) + " is not this console's"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "a " + termsafe.Line(site) + " request may not change anything"
	}
	return ""
}

func (c *Console) scheme() string {
	if c.opts.TLS {
		return "https"
	}
	return "http"
}

// cookieName is the session cookie's name: with TLS the __Host- prefix
// makes browsers refuse it unless Secure, host-only and Path=/, so a
// sibling subdomain cannot plant one.
func (c *Console) cookieName() string {
	if c.opts.TLS {
		return "__Host-warden-console"
	}
	return "warden-console"
}

// cookiePath is the session cookie's Path. Browsers scope cookies by
// host, not port: a cookie of http://127.0.0.1:7331 is also sent to a
// dev server on 127.0.0.1:3000. Without TLS (a loopback console) the
// cookie is sent only under the console's prefix, which for a loopback
// console is a random per-launch path (RandomPrefix) the other server
// does not know. With TLS the __Host- prefix requires Path=/; that
// console has a host name of its own.
func (c *Console) cookiePath() string {
	if c.opts.TLS {
		return "/"
	}
	return c.opts.Prefix
}

// RandomPrefix returns base followed by a fresh 128-bit random segment
// and "/": the path a loopback console is served under, so that another
// server on the same host, which receives its cookie, cannot name a page
// of it. It is printed in the login link only.
func RandomPrefix(base string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base + hex.EncodeToString(b[:]) + "/"
}

// setSession sends s's cookie.
func (c *Console) setSession(w http.ResponseWriter, s *session) {
	http.SetCookie(w, &http.Cookie{
		Name: c.cookieName(), Value: s.id, Path: c.cookiePath(),
		HttpOnly: true, Secure: c.opts.TLS, SameSite: http.SameSiteStrictMode,
		// No Expires: a browser-session cookie. The server ends the
		// session at its expiry whatever the browser keeps.
	})
}

// clearSession removes the cookie.
func (c *Console) clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: c.cookieName(), Value: "", Path: c.cookiePath(), MaxAge: -1,
		HttpOnly: true, Secure: c.opts.TLS, SameSite: http.SameSiteStrictMode})
}
