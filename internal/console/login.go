package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/warden-run/warden/internal/principal"
)

// NewLoginLink returns the path (under the prefix, with its query) of a
// one-time link that logs who in: single use, valid for Options.LinkTTL,
// carrying a 256-bit token. `warden console` prints it on the terminal.
func (c *Console) NewLoginLink(who principal.Principal) string {
	return c.opts.Prefix + "login?token=" + c.sessions.newLink(who)
}

// loginLink exchanges a one-time token for a session cookie.
func (c *Console) loginLink(w http.ResponseWriter, r *http.Request, _ *session) {
	s, ok := c.sessions.useLink(r.URL.Query().Get("token"))
	if !ok {
		c.log.Warn("console: a login link was refused (used, expired or unknown)")
		c.renderPage(w, http.StatusUnauthorized, "login", nil, c.loginData(),
			"This login link was already used, has expired, or is not one this console gave out. Run `warden console` again for a new one.", "")
		return
	}
	c.setSession(w, s)
	http.Redirect(w, r, c.opts.Prefix+"approvals", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.close(s.id)
	c.clearSession(w)
	c.renderPage(w, http.StatusOK, "login", nil, c.loginData(), "You are logged out.", "")
}

func (c *Console) loginData() map[string]any {
	return map[string]any{"OIDC": c.opts.OIDC != nil}
}

// OIDC is an OpenID Connect login: the authorization code flow with PKCE
// (S256), state and nonce checked, groups read from the ID token.
type OIDC struct {
	// Issuer is the OpenID provider's issuer URL (its discovery document
	// is Issuer/.well-known/openid-configuration).
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is this console's callback, as registered with the
	// provider: https://HOST/console/oidc/callback.
	RedirectURL string
	// GroupsClaim is the ID token claim holding the person's groups
	// (default "groups"): approver rights follow them.
	GroupsClaim string
	// Admins are the subjects and groups who may change grants and
	// install modules; everyone else who logs in sees those pages and
	// answers the questions they are an approver of. None: nobody.
	Admins []string
	// HTTPClient reaches the provider (nil: http.DefaultClient).
	HTTPClient *http.Client

	once     sync.Mutex
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	config   oauth2.Config

	mu      sync.Mutex
	pending map[string]pendingLogin // by state
}

// pendingLogin is a login begun and not yet returned from the provider.
type pendingLogin struct {
	nonce, verifier string
	expires         time.Time
}

// maxPendingLogins bounds the logins begun and not finished.
const maxPendingLogins = 256

// loginFlowCookie binds a pending login to the browser that began it. It
// is SameSite=Lax: the provider's redirect back is a cross-site
// navigation, which a Strict cookie would not follow.
const loginFlowCookie = "warden-console-login"

func (o *OIDC) init() error {
	if o.Issuer == "" || o.ClientID == "" || o.RedirectURL == "" {
		return errors.New("console OIDC: issuer, client_id and redirect_url are required")
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	o.pending = map[string]pendingLogin{}
	return nil
}

// discover reads the provider's discovery document once it answers: a
// provider down at start does not stop the server.
func (o *OIDC) discover(ctx context.Context) error {
	o.once.Lock()
	defer o.once.Unlock()
	if o.provider != nil {
		return nil
	}
	if o.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, o.HTTPClient)
	}
	p, err := oidc.NewProvider(ctx, o.Issuer)
	if err != nil {
		return fmt.Errorf("OpenID provider %s: %w", o.Issuer, err)
	}
	o.provider = p
	o.verifier = p.Verifier(&oidc.Config{ClientID: o.ClientID})
	o.config = oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: []string{oidc.ScopeOpenID, "profile", "email"}}
	return nil
}

func (o *OIDC) ctx(ctx context.Context) context.Context {
	if o.HTTPClient != nil {
		return context.WithValue(ctx, oauth2.HTTPClient, o.HTTPClient)
	}
	return ctx
}

// oidcStart sends the browser to the provider.
func (c *Console) oidcStart(w http.ResponseWriter, r *http.Request, _ *session) {
	o := c.opts.OIDC
	if o == nil {
		http.NotFound(w, r)
		return
	}
	if err := o.discover(r.Context()); err != nil {
		c.log.Error("console: OpenID provider unreachable", "error", err)
		http.Error(w, "the OpenID provider cannot be reached; try again later", http.StatusBadGateway)
		return
	}
	state, nonce, verifier := newSecret(), newSecret(), oauth2.GenerateVerifier()
	now := c.opts.now()
	o.mu.Lock()
	for k, p := range o.pending {
		if !now.Before(p.expires) {
			delete(o.pending, k)
		}
	}
	if len(o.pending) >= maxPendingLogins {
		o.mu.Unlock()
		http.Error(w, "too many logins in progress; try again in a minute", http.StatusServiceUnavailable)
		return
	}
	o.pending[state] = pendingLogin{nonce: nonce, verifier: verifier, expires: now.Add(c.opts.LinkTTL)}
	o.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: loginFlowCookie, Value: state, Path: c.opts.Prefix + "oidc/",
		HttpOnly: true, Secure: c.opts.TLS, SameSite: http.SameSiteLaxMode, MaxAge: int(c.opts.LinkTTL.Seconds())})
	http.Redirect(w, r, o.config.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// oidcCallback finishes a login: the state must be the one this browser
// began with, the code is exchanged with the PKCE verifier, and the ID
// token must verify and carry the nonce.
func (c *Console) oidcCallback(w http.ResponseWriter, r *http.Request, _ *session) {
	o := c.opts.OIDC
	if o == nil {
		http.NotFound(w, r)
		return
	}
	fail := func(why string, err error) {
		c.log.Warn("console: OpenID login refused", "reason", why, "error", err)
		c.renderPage(w, http.StatusUnauthorized, "login", nil, c.loginData(), "Login failed: "+why+". Start again.", "")
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		fail("the provider answered "+e, nil)
		return
	}
	state := q.Get("state")
	cookie, err := r.Cookie(loginFlowCookie)
	if err != nil || state == "" || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(state)) != 1 {
		fail("the login's state does not match this browser's", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginFlowCookie, Path: c.opts.Prefix + "oidc/", MaxAge: -1, HttpOnly: true, Secure: c.opts.TLS, SameSite: http.SameSiteLaxMode})
	o.mu.Lock()
	p, ok := o.pending[state]
	delete(o.pending, state)
	o.mu.Unlock()
	if !ok || !c.opts.now().Before(p.expires) {
		fail("the login expired or was already finished", nil)
		return
	}
	if err := o.discover(r.Context()); err != nil {
		fail("the OpenID provider cannot be reached", err)
		return
	}
	tok, err := o.config.Exchange(o.ctx(r.Context()), q.Get("code"), oauth2.VerifierOption(p.verifier))
	if err != nil {
		fail("the provider refused the code", err)
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		fail("the provider sent no ID token", nil)
		return
	}
	idt, err := o.verifier.Verify(r.Context(), raw)
	if err != nil {
		fail("the ID token does not verify", err)
		return
	}
	// The nonce ties the token to this login: a token replayed from
	// another login carries another nonce.
	nh, ph := sha256.Sum256([]byte(idt.Nonce)), sha256.Sum256([]byte(p.nonce))
	if subtle.ConstantTimeCompare(nh[:], ph[:]) != 1 {
		fail("the ID token's nonce is not this login's", nil)
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		fail("the ID token's claims do not decode", err)
		return
	}
	who := principal.Principal{Subject: idt.Subject, Via: principal.ViaOAuth, Issuer: idt.Issuer, Groups: groupsOf(claims[o.GroupsClaim])}
	admin := false
	for _, a := range o.Admins {
		if a == who.Subject || slices.Contains(who.Groups, a) {
			admin = true
		}
	}
	s := c.sessions.open(who, admin)
	c.setSession(w, s)
	// A page that refreshes to the console, not a redirect: the
	// navigation back from the provider is cross-site, and a
	// SameSite=Strict cookie is only sent on the next, same-site one.
	c.render(w, http.StatusOK, "continue", nil, map[string]any{"Next": c.opts.Prefix + "approvals"})
}

// groupsOf reads a groups claim: a list of strings, or one string.
func groupsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, g := range v {
			if s, ok := g.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
