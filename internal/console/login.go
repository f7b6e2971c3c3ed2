package console

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/termsafe"
)

// NewLoginLink returns the path (under the prefix, with its query) of a
// one-time link that logs who in: single use, valid for Options.LinkTTL,
// carrying a 256-bit token. `warden console` prints it on the terminal.
func (c *Console) NewLoginLink(who principal.Principal) string {
	return c.opts.Prefix + "login?token=" + c.sessions.newLink(who)
}

// loginLink exchanges a one-time token for a session cookie.
func (c *Console) loginLink(w http.ResponseWriter, r *http.Request, _ *session) {
	// "GET login" also matches HEAD, which link previewers and prefetchers
	// send: a HEAD must not spend the one-time link (and take the session).
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "a login link is opened with GET, by the browser", http.StatusMethodNotAllowed)
		return
	}
	s, err := c.sessions.useLink(r.URL.Query().Get("token"))
	if errors.Is(err, errSessionsFull) {
		c.renderPage(w, http.StatusServiceUnavailable, "login", nil, c.loginData(), "Login failed: "+err.Error()+".", "")
		return
	}
	if err != nil {
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
	// AdminSubjects (ID token subjects of Issuer) and AdminGroups (groups
	// of GroupsClaim) may change grants and install modules; everyone
	// else who logs in sees those pages and answers the questions they
	// are an approver of. None: nobody.
	AdminSubjects, AdminGroups []string
	// HTTPClient reaches the provider (nil: http.DefaultClient).
	HTTPClient *http.Client

	once     sync.Mutex
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	config   oauth2.Config

	// flow seals a pending login's state, nonce and PKCE verifier into
	// the browser's flow cookie (AES-256-GCM): the server keeps nothing
	// per login begun, so unauthenticated requests to oidc/start cannot
	// fill a table and turn real logins away.
	flow cipher.AEAD
}

// pendingLogin is a login begun and not yet returned from the provider,
// as sealed in the flow cookie.
type pendingLogin struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Expires  int64  `json:"e"` // Unix seconds
}

// loginFlowCookie carries the sealed pending login and binds it to the
// browser that began it. It is SameSite=Lax: the provider's redirect back
// is a cross-site navigation, which a Strict cookie would not follow.
const loginFlowCookie = "warden-console-login"

// flowAD is the sealed cookie's additional data: a value sealed for
// another purpose under the same key never opens as a login.
const flowAD = "warden console OpenID login flow v1"

func (o *OIDC) init() error {
	if o.Issuer == "" || o.ClientID == "" || o.RedirectURL == "" {
		return errors.New("console OIDC: issuer, client_id and redirect_url are required")
	}
	if o.GroupsClaim == "" {
		o.GroupsClaim = "groups"
	}
	key, err := flowKey(o.ClientSecret)
	if err != nil {
		return err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	o.flow, err = cipher.NewGCM(block)
	return err
}

// flowKey is the flow cookie's key. With a client secret it is derived
// from it (HKDF-SHA256), so that every replica of a team server opens
// the cookie another sealed and a login may come back to any of them;
// without one it is random per process.
func flowKey(clientSecret string) ([]byte, error) {
	if clientSecret == "" {
		key := make([]byte, 32)
		_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
		return key, nil
	}
	return hkdf.Key(sha256.New, []byte(clientSecret), nil, flowAD, 32)
}

// seal returns p as a flow cookie value: a random GCM nonce and the
// ciphertext, base64url.
func (o *OIDC) seal(p pendingLogin) string {
	plain, _ := json.Marshal(p) // a struct of strings and an int: never fails
	nonce := make([]byte, o.flow.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(o.flow.Seal(nonce, nonce, plain, []byte(flowAD)))
}

// open returns the pending login sealed in a flow cookie value; false
// for anything this console did not seal.
func (o *OIDC) open(value string) (pendingLogin, bool) {
	var p pendingLogin
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < o.flow.NonceSize() {
		return p, false
	}
	plain, err := o.flow.Open(nil, raw[:o.flow.NonceSize()], raw[o.flow.NonceSize():], []byte(flowAD))
	if err != nil || json.Unmarshal(plain, &p) != nil {
		return p, false
	}
	return p, true
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
	sealed := o.seal(pendingLogin{State: state, Nonce: nonce, Verifier: verifier, Expires: c.opts.now().Add(c.opts.LinkTTL).Unix()})
	http.SetCookie(w, &http.Cookie{Name: loginFlowCookie, Value: sealed, Path: c.opts.Prefix + "oidc/",
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
		// The page shows only a code the protocol defines: the parameter
		// is whatever the link's author wrote, and the page is this
		// console's, which people trust.
		code := "an error"
		if slices.Contains(oauthErrorCodes, e) {
			code = e
		}
		c.log.Warn("console: OpenID login refused by the provider", "error", termsafe.Line(e), "description", termsafe.Line(q.Get("error_description")))
		c.renderPage(w, http.StatusUnauthorized, "login", nil, c.loginData(), "Login failed: the provider answered "+code+". Start again.", "")
		return
	}
	state := q.Get("state")
	var p pendingLogin
	cookie, err := r.Cookie(loginFlowCookie)
	ok := err == nil
	if ok {
		p, ok = o.open(cookie.Value)
	}
	if !ok || state == "" || subtle.ConstantTimeCompare([]byte(p.State), []byte(state)) != 1 {
		fail("the login's state does not match this browser's", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginFlowCookie, Path: c.opts.Prefix + "oidc/", MaxAge: -1, HttpOnly: true, Secure: c.opts.TLS, SameSite: http.SameSiteLaxMode})
	if !c.opts.now().Before(time.Unix(p.Expires, 0)) {
		fail("the login expired or was already finished", nil)
		return
	}
	if err := o.discover(r.Context()); err != nil {
		fail("the OpenID provider cannot be reached", err)
		return
	}
	tok, err := o.config.Exchange(o.ctx(r.Context()), q.Get("code"), oauth2.VerifierOption(p.Verifier))
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
	nh, ph := sha256.Sum256([]byte(idt.Nonce)), sha256.Sum256([]byte(p.Nonce))
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
	// A subject is matched as a subject and a group as a group: a
	// group the provider lets someone create may not be named like an
	// admin's subject and make its members admins.
	admin := slices.Contains(o.AdminSubjects, who.Subject)
	for _, g := range o.AdminGroups {
		admin = admin || slices.Contains(who.Groups, g)
	}
	s, err := c.sessions.open(who, admin)
	if err != nil {
		c.log.Warn("console: OpenID login refused", "who", termsafe.Line(whoOf(who)), "error", err)
		c.renderPage(w, http.StatusServiceUnavailable, "login", nil, c.loginData(), "Login failed: "+err.Error()+".", "")
		return
	}
	c.setSession(w, s)
	// A page that refreshes to the console, not a redirect: the
	// navigation back from the provider is cross-site, and a
	// SameSite=Strict cookie is only sent on the next, same-site one.
	c.render(w, http.StatusOK, "continue", nil, map[string]any{"Next": c.opts.Prefix + "approvals"})
}

// oauthErrorCodes are the error codes an authorization response may
// carry (RFC 6749 4.1.2.1, OpenID Connect Core 3.1.2.6): the failed-login
// page names one of these or none.
var oauthErrorCodes = []string{
	"invalid_request", "unauthorized_client", "access_denied", "unsupported_response_type",
	"invalid_scope", "server_error", "temporarily_unavailable",
	"interaction_required", "login_required", "account_selection_required", "consent_required",
	"invalid_request_uri", "invalid_request_object", "request_not_supported",
	"request_uri_not_supported", "registration_not_supported",
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
