// Package oauth verifies the JWT access tokens of an OAuth 2.1 resource
// server: the signature against the issuer's published keys (a JWK Set,
// fetched over https, cached, and refetched at a bounded rate), the issuer
// against an allow-list, the audience against this server's canonical URL,
// and the token's validity period with a clock-skew tolerance.
//
// All cryptography is go-jose's. Only asymmetric signatures are accepted
// (RS256, ES256, EdDSA): "none" and the HMAC algorithms, whose key would be
// a secret shared with every resource server, are refused before any key is
// looked up.
package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/termsafe"
)

// Algorithms are the signature algorithms accepted, in the order tried.
var Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

// Defaults of Options.
const (
	DefaultRefreshMin   = limits.DefaultJWKSRefreshMin
	DefaultMaxAge       = time.Hour
	DefaultFetchTimeout = 10 * time.Second
	DefaultMaxJWKSBytes = 1 << 20
	// MaxTokenBytes bounds an access token; a longer one is refused
	// before it is parsed.
	MaxTokenBytes = 16 << 10
	// minRSABits is the smallest RSA key accepted from a JWK Set.
	minRSABits = 2048
)

// Issuer is one trusted authorization server.
type Issuer struct {
	// Issuer is its identifier, exactly as tokens' iss claim says.
	Issuer string
	// JWKSURL is where its signing keys are published: https://, or
	// http:// for a loopback host.
	JWKSURL string
}

// Options configure a Verifier.
type Options struct {
	// Resource is this server's canonical URL: a token's audience must
	// contain it.
	Resource string
	// Issuers are the trusted authorization servers; at least one.
	Issuers []Issuer
	// ClockSkew is the tolerance on exp, nbf and iat; 0 means none.
	ClockSkew time.Duration
	// RefreshMin is the least time between two fetches of one issuer's
	// keys, whatever asks for them (a token naming an unknown key, keys
	// grown stale, a failed fetch); 0 means DefaultRefreshMin.
	RefreshMin time.Duration
	// MaxAge is how long fetched keys are used before they are fetched
	// again (keys an issuer withdrew stop being accepted); 0 means
	// DefaultMaxAge. While a refetch fails the old keys stay in use.
	MaxAge time.Duration
	// FetchTimeout bounds one fetch of a JWK Set; 0 means
	// DefaultFetchTimeout.
	FetchTimeout time.Duration
	// MaxJWKSBytes bounds a JWK Set document; 0 means DefaultMaxJWKSBytes.
	MaxJWKSBytes int64
	// GroupsClaim names the claim that lists the groups a token's subject
	// belongs to (a string or an array of strings, see groupList); ""
	// means DefaultGroupsClaim. Only the claims of a token whose signature
	// and issuer were checked are read.
	GroupsClaim string
	// RequireGroups refuses a token without the groups claim, or one that
	// says its groups are elsewhere (see groupsOf): set when per-person
	// policy reads groups (config's server.oauth.require_groups_claim).
	RequireGroups bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Transport carries the JWK Set requests; nil means
	// http.DefaultTransport. Redirects are never followed.
	Transport http.RoundTripper
	// Logger receives fetch failures and refused tokens; nil discards.
	Logger *slog.Logger
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	opts    Options
	client  *http.Client
	issuers map[string]*keySet
	log     *slog.Logger
}

// New returns a Verifier; it fetches nothing until the first token (or
// Prefetch).
func New(opts Options) (*Verifier, error) {
	if opts.Resource == "" {
		return nil, errors.New("oauth: no resource URL")
	}
	if len(opts.Issuers) == 0 {
		return nil, errors.New("oauth: no issuer")
	}
	if opts.RefreshMin <= 0 {
		opts.RefreshMin = DefaultRefreshMin
	}
	if opts.MaxAge <= 0 {
		opts.MaxAge = DefaultMaxAge
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultFetchTimeout
	}
	if opts.MaxJWKSBytes <= 0 {
		opts.MaxJWKSBytes = DefaultMaxJWKSBytes
	}
	if opts.ClockSkew < 0 {
		opts.ClockSkew = 0
	}
	if opts.GroupsClaim == "" {
		opts.GroupsClaim = DefaultGroupsClaim
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	v := &Verifier{
		opts: opts,
		client: &http.Client{
			Transport: opts.Transport,
			Timeout:   opts.FetchTimeout,
			// A JWK Set is served where configured; following a
			// redirect would let whoever controls the target (or a
			// plain-http hop) choose the keys.
			CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
		},
		issuers: make(map[string]*keySet),
		log:     log,
	}
	for _, is := range opts.Issuers {
		if is.Issuer == "" {
			return nil, errors.New("oauth: an issuer without an identifier")
		}
		if _, dup := v.issuers[is.Issuer]; dup {
			return nil, fmt.Errorf("oauth: issuer %q listed twice", is.Issuer)
		}
		if err := checkFetchURL(is.JWKSURL); err != nil {
			return nil, fmt.Errorf("oauth: issuer %q: jwks_url: %w", is.Issuer, err)
		}
		v.issuers[is.Issuer] = &keySet{v: v, issuer: is.Issuer, url: is.JWKSURL}
	}
	return v, nil
}

var errRedirect = errors.New("the JWK Set URL redirects; redirects are not followed: configure the URL it redirects to")

// checkFetchURL allows https://, and http:// only for a loopback host.
func checkFetchURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Host == "":
		return fmt.Errorf("%q names no host", raw)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && download.LoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q is not https:// (plain http:// is allowed for loopback hosts only)", raw)
}

// Prefetch fetches every issuer's keys in the background, so that the
// first token need not wait for them.
func (v *Verifier) Prefetch() {
	for _, ks := range v.issuers {
		ks.mu.Lock()
		ks.startFetchLocked(v.opts.Now())
		ks.mu.Unlock()
	}
}

// Token is a verified access token.
type Token struct {
	Issuer string
	// Subject is the sub claim; when a token has none, its client_id or
	// azp (a client acting on its own behalf).
	Subject string
	// Scopes are the scope (space-separated) and scp claims' values.
	Scopes []string
	// Groups are the groups claim's values (Options.GroupsClaim).
	Groups []string
	Expiry time.Time
}

// Principal is who the token speaks for.
func (t *Token) Principal() principal.Principal {
	return principal.Principal{Subject: t.Subject, Via: principal.ViaOAuth, Scopes: t.Scopes, Issuer: t.Issuer, Groups: t.Groups}
}

// Error is why a token was refused.
type Error struct {
	// Description is fixed text, safe to send to the client: it repeats
	// nothing from the token.
	Description string
	// Detail says more, for the server's log (escaped, bounded).
	Detail string
	// Unavailable is set when the token could not be checked because its
	// issuer's keys could not be fetched: the server's trouble, not the
	// token's.
	Unavailable bool
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return e.Description
	}
	return e.Description + ": " + e.Detail
}

// ErrorDescription is the text the client may be shown (RFC 6750's
// error_description).
func (e *Error) ErrorDescription() string { return e.Description }

// ServerFault reports whether the token could not be checked for a reason
// of the server's (Unavailable).
func (e *Error) ServerFault() bool { return e.Unavailable }

func refuse(description, format string, args ...any) *Error {
	return &Error{Description: description, Detail: termsafe.Line(fmt.Sprintf(format, args...))}
}

// claims are what a token says, as far as warden reads it.
type claims struct {
	jwt.Claims
	Scope    json.RawMessage `json:"scope,omitempty"`
	Scp      json.RawMessage `json:"scp,omitempty"`
	ClientID string          `json:"client_id,omitempty"`
	AZP      string          `json:"azp,omitempty"`
}

// Verify checks token and returns what it says, or an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (*Token, error) {
	t, err := v.verify(ctx, token)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			v.log.Warn("access token refused", "reason", e.Description, "detail", e.Detail)
		}
		return nil, err
	}
	return t, nil
}

// VerifyPrincipal is Verify returning the token's principal.
func (v *Verifier) VerifyPrincipal(ctx context.Context, token string) (principal.Principal, error) {
	t, err := v.Verify(ctx, token)
	if err != nil {
		return principal.Principal{}, err
	}
	return t.Principal(), nil
}

func (v *Verifier) verify(ctx context.Context, token string) (*Token, error) {
	if len(token) > MaxTokenBytes {
		return nil, refuse("the access token is too long", "%d bytes, the bound is %d", len(token), MaxTokenBytes)
	}
	// The allowed algorithms are checked as the token is parsed: "none",
	// HS256 and the rest are refused here, before any key is looked up.
	tok, err := jwt.ParseSigned(token, Algorithms)
	if err != nil {
		return nil, refuse("the access token is not a JWT signed with RS256, ES256 or EdDSA", "%v", err)
	}
	if len(tok.Headers) != 1 {
		return nil, refuse("the access token is malformed", "%d signatures", len(tok.Headers))
	}
	h := tok.Headers[0]
	if typ, ok := h.ExtraHeaders[jose.HeaderType]; ok {
		s, _ := typ.(string)
		switch strings.ToLower(s) {
		case "jwt", "at+jwt", "application/at+jwt":
		default:
			return nil, refuse("the access token's type (typ) is not an access token's", "typ %v", typ)
		}
	}
	// The issuer picks the keys, so it is read before the signature is
	// checked; the signature then proves it. A token of an issuer not
	// listed costs no fetch.
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, refuse("the access token's claims are malformed", "%v", err)
	}
	ks, ok := v.issuers[unverified.Issuer]
	if !ok {
		return nil, refuse("the access token's issuer is not trusted here", "iss %q is not in server.oauth.issuers", unverified.Issuer)
	}
	key, err := ks.key(ctx, h.KeyID, h.Algorithm)
	if err != nil {
		return nil, err
	}
	if err := tok.Claims(key.Key); err != nil {
		return nil, refuse("the access token's signature is invalid", "kid %q, alg %s: %v", h.KeyID, h.Algorithm, err)
	}
	var c claims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		// The signature is the issuer's; the claims are still not what a
		// token carries.
		return nil, refuse("the access token's claims are malformed", "%v", err)
	}
	if c.Expiry == nil {
		return nil, refuse("the access token has no expiry (exp)", "issuer %q", c.Issuer)
	}
	now := v.opts.Now()
	err = c.ValidateWithLeeway(jwt.Expected{
		Issuer:      ks.issuer,
		AnyAudience: jwt.Audience{v.opts.Resource},
		Time:        now,
	}, v.opts.ClockSkew)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrInvalidAudience):
		return nil, refuse("the access token is not meant for this resource (its audience does not include "+v.opts.Resource+")",
			"aud %q", []string(c.Audience))
	case errors.Is(err, jwt.ErrExpired):
		return nil, refuse("the access token has expired", "exp %s, now %s, clock skew %s",
			c.Expiry.Time().UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.opts.ClockSkew)
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, refuse("the access token is not valid yet", "nbf %s, now %s, clock skew %s",
			c.NotBefore.Time().UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.opts.ClockSkew)
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, refuse("the access token was issued in the future", "iat %s, now %s, clock skew %s",
			c.IssuedAt.Time().UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), v.opts.ClockSkew)
	default:
		return nil, refuse("the access token is invalid", "%v", err)
	}
	subject := c.Subject
	if subject == "" {
		subject = c.ClientID
	}
	if subject == "" {
		subject = c.AZP
	}
	if subject == "" {
		return nil, refuse("the access token names no subject (sub)", "issuer %q", c.Issuer)
	}
	scopes, err := scopeList(c.Scope, c.Scp)
	if err != nil {
		return nil, refuse("the access token's scope claim is malformed", "%v", err)
	}
	// The groups claim is named by config, so it is read from the claims
	// as a map, after the signature was checked.
	var all map[string]json.RawMessage
	if err := tok.UnsafeClaimsWithoutVerification(&all); err != nil {
		return nil, refuse("the access token's claims are malformed", "%v", err)
	}
	groups, err := v.groupsOf(all)
	if err != nil {
		return nil, err
	}
	return &Token{Issuer: ks.issuer, Subject: subject, Scopes: scopes, Groups: groups, Expiry: c.Expiry.Time()}, nil
}

// scopeList reads the scope claim (RFC 9068: a space-separated string)
// and scp (a list, or a string, as some issuers write it), each once.
func scopeList(claims ...json.RawMessage) ([]string, error) {
	var scopes []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			scopes = append(scopes, s)
		}
	}
	for _, raw := range claims {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			for _, f := range strings.Fields(s) {
				add(f)
			}
			continue
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, errors.New("neither a string nor a list of strings")
		}
		for _, s := range list {
			for _, f := range strings.Fields(s) {
				add(f)
			}
		}
	}
	return scopes, nil
}

// usable reports whether k can check a signature of alg: its type fits
// the algorithm, and its own alg, when it names one, is alg.
func usable(k *jose.JSONWebKey, alg string) bool {
	if k.Algorithm != "" && k.Algorithm != alg {
		return false
	}
	switch jose.SignatureAlgorithm(alg) {
	case jose.RS256:
		_, ok := k.Key.(*rsa.PublicKey)
		return ok
	case jose.ES256:
		pk, ok := k.Key.(*ecdsa.PublicKey)
		return ok && pk.Curve == elliptic.P256()
	case jose.EdDSA:
		_, ok := k.Key.(ed25519.PublicKey)
		return ok
	}
	return false
}
