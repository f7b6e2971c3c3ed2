package oauth_test

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
	"github.com/warden-run/warden/internal/principal"
)

const resource = "https://warden.example.com/mcp"

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

type fixture struct {
	is    *oauthtest.Issuer
	clock *oauthtest.Clock
	v     *oauth.Verifier
}

func newFixture(t testing.TB, mutate ...func(*oauth.Options)) *fixture {
	t.Helper()
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.RS256, "rsa-1")
	is.AddKey(t, jose.ES256, "ec-1")
	is.AddKey(t, jose.EdDSA, "ed-1")
	clock := oauthtest.NewClock(t0)
	opts := oauth.Options{
		Resource:   resource,
		Issuers:    []oauth.Issuer{{Issuer: is.URL, JWKSURL: is.JWKSURL()}},
		ClockSkew:  time.Minute,
		RefreshMin: time.Minute,
		Now:        clock.Now,
	}
	for _, m := range mutate {
		m(&opts)
	}
	v, err := oauth.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{is: is, clock: clock, v: v}
}

func (f *fixture) claims() map[string]any {
	return f.is.Claims(resource, "alice", t0, "mcp tools:read")
}

// refused checks that token is refused with exactly description.
func (f *fixture) refused(t *testing.T, token, description string) {
	t.Helper()
	tok, err := f.v.Verify(context.Background(), token)
	if err == nil {
		t.Fatalf("accepted: %+v, want refused with %q", tok, description)
	}
	var e *oauth.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *oauth.Error", err, err)
	}
	if e.Description != description {
		t.Errorf("refused with %q (%s), want %q", e.Description, e.Detail, description)
	}
	if e.Unavailable {
		t.Errorf("%q: marked unavailable", description)
	}
}

func TestValidTokens(t *testing.T) {
	f := newFixture(t)
	for _, kid := range []string{"rsa-1", "ec-1", "ed-1"} {
		tok, err := f.v.Verify(context.Background(), f.is.Sign(t, kid, f.claims()))
		if err != nil {
			t.Fatalf("%s: %v", kid, err)
		}
		want := principal.Principal{Subject: "alice", Via: principal.ViaOAuth, Scopes: []string{"mcp", "tools:read"}, Issuer: f.is.URL}
		if got := tok.Principal(); got.Subject != want.Subject || got.Via != want.Via || got.Issuer != want.Issuer ||
			!slices.Equal(got.Scopes, want.Scopes) {
			t.Errorf("%s: principal %+v, want %+v", kid, got, want)
		}
		if !tok.Expiry.Equal(t0.Add(5 * time.Minute)) {
			t.Errorf("%s: expiry %s", kid, tok.Expiry)
		}
	}
	if got := f.is.Hits(); got != 1 {
		t.Errorf("JWK Set fetched %d times for three tokens, want 1", got)
	}
}

func TestClaimsRefused(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, description string
		edit              func(map[string]any)
	}{
		{"wrong audience", "the access token is not meant for this resource (its audience does not include " + resource + ")",
			func(c map[string]any) { c["aud"] = "https://other.example.com/mcp" }},
		{"audience list without the resource", "the access token is not meant for this resource (its audience does not include " + resource + ")",
			func(c map[string]any) { c["aud"] = []string{"https://other.example.com", resource + "/"} }},
		{"no audience", "the access token is not meant for this resource (its audience does not include " + resource + ")",
			func(c map[string]any) { delete(c, "aud") }},
		{"expired", "the access token has expired",
			func(c map[string]any) { c["exp"] = t0.Add(-time.Minute - time.Second).Unix() }},
		{"not yet valid", "the access token is not valid yet",
			func(c map[string]any) { c["nbf"] = t0.Add(time.Minute + time.Second).Unix() }},
		{"issued in the future", "the access token was issued in the future",
			func(c map[string]any) { c["iat"] = t0.Add(2 * time.Minute).Unix() }},
		{"no expiry", "the access token has no expiry (exp)",
			func(c map[string]any) { delete(c, "exp") }},
		{"no subject", "the access token names no subject (sub)",
			func(c map[string]any) { delete(c, "sub") }},
		{"scope not a string", "the access token's scope claim is malformed",
			func(c map[string]any) { c["scope"] = 7 }},
		{"audience not a string", "the access token's claims are malformed",
			func(c map[string]any) { c["aud"] = 7 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.claims()
			tc.edit(c)
			f.refused(t, f.is.Sign(t, "rsa-1", c), tc.description)
		})
	}
}

// TestAudienceList: the resource among several audiences is enough.
func TestAudienceList(t *testing.T) {
	f := newFixture(t)
	c := f.claims()
	c["aud"] = []string{"https://api.example.com", resource}
	if _, err := f.v.Verify(context.Background(), f.is.Sign(t, "ec-1", c)); err != nil {
		t.Fatal(err)
	}
}

// TestClockSkew: exp, nbf and iat are checked against the injected clock,
// with the tolerance on either side.
func TestClockSkew(t *testing.T) {
	f := newFixture(t)
	token := f.is.Sign(t, "rsa-1", f.claims()) // valid from t0 to t0+5m
	verify := func() error { _, err := f.v.Verify(context.Background(), token); return err }

	f.clock.Advance(5*time.Minute + time.Minute) // at exp + skew: still accepted
	if err := verify(); err != nil {
		t.Errorf("at exp+skew: %v", err)
	}
	f.clock.Advance(time.Second)
	f.refused(t, token, "the access token has expired")

	g := newFixture(t)
	c := g.claims()
	c["nbf"] = t0.Add(time.Minute).Unix() // valid a minute from now: within the skew
	c["iat"] = t0.Add(time.Minute).Unix()
	if _, err := g.v.Verify(context.Background(), g.is.Sign(t, "ed-1", c)); err != nil {
		t.Errorf("nbf and iat within the skew: %v", err)
	}

	h := newFixture(t, func(o *oauth.Options) { o.ClockSkew = 0 })
	h.clock.Advance(5*time.Minute + time.Second)
	h.refused(t, h.is.Sign(t, "rsa-1", h.claims()), "the access token has expired")
}

// TestWrongIssuer: a token whose issuer is not listed is refused without a
// fetch, and a listed issuer's token signed by another issuer's key fails
// its signature.
func TestWrongIssuer(t *testing.T) {
	f := newFixture(t)
	other := oauthtest.NewIssuer(t)
	other.AddKey(t, jose.RS256, "rsa-1") // the same kid as the trusted issuer's

	c := other.Claims(resource, "mallory", t0, "mcp")
	f.refused(t, other.Sign(t, "rsa-1", c), "the access token's issuer is not trusted here")
	if f.is.Hits() != 0 || other.Hits() != 0 {
		t.Errorf("an untrusted issuer's token fetched keys: %d, %d", f.is.Hits(), other.Hits())
	}

	c["iss"] = f.is.URL // claims the trusted issuer, signed by the other
	f.refused(t, other.Sign(t, "rsa-1", c), "the access token's signature is invalid")
}

// TestAlgorithmsRefused: "none" and HMAC tokens are refused before any key
// is looked up, HS256 even when keyed with a published public key (the
// classic algorithm confusion).
func TestAlgorithmsRefused(t *testing.T) {
	f := newFixture(t)
	pub, err := x509.MarshalPKIXPublicKey(f.is.Public("rsa-1").(*rsa.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	const want = "the access token is not a JWT signed with RS256, ES256 or EdDSA"
	for name, token := range map[string]string{
		"none":                            oauthtest.Unsigned(t, "rsa-1", f.claims()),
		"none with a signature":           oauthtest.Unsigned(t, "rsa-1", f.claims()) + "c2ln",
		"HS256 keyed with the public key": oauthtest.SignHS256(t, pemKey, "rsa-1", f.claims()),
		"HS256":                           oauthtest.SignHS256(t, []byte("0123456789abcdef0123456789abcdef"), "rsa-1", f.claims()),
	} {
		t.Run(name, func(t *testing.T) { f.refused(t, token, want) })
	}
	if got := f.is.Hits(); got != 0 {
		t.Errorf("refused algorithms fetched the JWK Set %d times", got)
	}
}

// TestHMACKeyInSetIgnored: a symmetric key published under a kid gives
// HS256 tokens nothing: they are refused by algorithm, and the set's
// usable keys still verify.
func TestHMACKeyInSetIgnored(t *testing.T) {
	f := newFixture(t)
	f.is.PublishRaw(`{"kty":"oct","kid":"hmac","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"}`,
		`{"kty":"RSA","kid":"small","n":"AQAB","e":"AQAB"}`,
		`{"kty":"weird","kid":"x"}`,
		`{"kty":"EC","kid":"enc","use":"enc","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pX0Ihyq2_3rE8wJU"}`)
	f.refused(t, oauthtest.SignHS256(t, []byte("secretsecretsecretsecretsecret!!"), "hmac", f.claims()),
		"the access token is not a JWT signed with RS256, ES256 or EdDSA")
	if _, err := f.v.Verify(context.Background(), f.is.Sign(t, "rsa-1", f.claims())); err != nil {
		t.Errorf("a set with keys warden does not use beside its own: %v", err)
	}
}

// TestUnknownKeyRefetchLimit: a token naming a key not in the set fetches
// the set again, at most once per RefreshMin whatever the number of such
// tokens, concurrent or not; a key the issuer starts publishing is found
// by the first fetch allowed after it appears.
func TestUnknownKeyRefetchLimit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.v.Verify(ctx, f.is.Sign(t, "rsa-1", f.claims())); err != nil {
		t.Fatal(err)
	}
	if got := f.is.Hits(); got != 1 {
		t.Fatalf("first token: %d fetches, want 1", got)
	}
	// Tokens with made-up kids, signed by a key the issuer does not publish.
	f.is.AddUnpublishedKey(t, jose.RS256, "next")
	bogus := func(i int) string {
		c := f.claims()
		c["jti"] = fmt.Sprint(i)
		return f.is.Sign(t, "next", c)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.refused(t, bogus(i), "the access token's signing key (kid) is unknown")
		}()
	}
	wg.Wait()
	if got := f.is.Hits(); got != 1 {
		t.Errorf("50 unknown kids within RefreshMin of the last fetch: %d fetches in all, want 1", got)
	}

	f.clock.Advance(time.Minute)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.refused(t, bogus(i), "the access token's signing key (kid) is unknown")
		}()
	}
	wg.Wait()
	if got := f.is.Hits(); got != 2 {
		t.Errorf("50 concurrent unknown kids after RefreshMin: %d fetches in all, want 2", got)
	}

	// The issuer rotates: the new key is published. Within RefreshMin of
	// the last fetch it is still unknown; after, one fetch finds it.
	f.is.Publish("rsa-1", "ec-1", "ed-1", "next")
	f.clock.Advance(30 * time.Second)
	f.refused(t, bogus(0), "the access token's signing key (kid) is unknown")
	f.clock.Advance(30 * time.Second)
	if _, err := f.v.Verify(ctx, bogus(1)); err != nil {
		t.Errorf("the rotated key after RefreshMin: %v", err)
	}
	if _, err := f.v.Verify(ctx, bogus(2)); err != nil {
		t.Errorf("the rotated key, again: %v", err)
	}
	if got := f.is.Hits(); got != 3 {
		t.Errorf("after the rotation: %d fetches in all, want 3", got)
	}
	if got := f.v.Fetches(f.is.URL); got != 3 {
		t.Errorf("Fetches = %d, want 3", got)
	}
}

// TestKeysMaxAge: a set older than MaxAge is fetched again, so a key the
// issuer withdrew stops verifying.
func TestKeysMaxAge(t *testing.T) {
	f := newFixture(t, func(o *oauth.Options) { o.MaxAge = time.Hour })
	ctx := context.Background()
	if _, err := f.v.Verify(ctx, f.is.Sign(t, "ec-1", f.claims())); err != nil {
		t.Fatal(err)
	}
	f.is.Publish("rsa-1") // ec-1 withdrawn
	f.clock.Advance(59 * time.Minute)
	c := f.is.Claims(resource, "alice", f.clock.Now(), "")
	if _, err := f.v.Verify(ctx, f.is.Sign(t, "ec-1", c)); err != nil {
		t.Errorf("within MaxAge the cached key still verifies: %v", err)
	}
	f.clock.Advance(time.Minute)
	c = f.is.Claims(resource, "alice", f.clock.Now(), "")
	f.refused(t, f.is.Sign(t, "ec-1", c), "the access token's signing key (kid) is unknown")
	if got := f.is.Hits(); got != 2 {
		t.Errorf("%d fetches, want 2", got)
	}
}

// TestFetchBounds: a JWK Set that is too large, too slow, redirected,
// not found or without a usable key makes tokens fail as unavailable,
// and the failure is retried no more often than RefreshMin.
func TestFetchBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		detail  string
	}{
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"keys":[` + strings.Repeat(" ", 2<<10) + `]}`))
		}, "larger than 1024 bytes"},
		{"too slow", func(w http.ResponseWriter, r *http.Request) {
			// Answers only when the verifier gave up: the error then names
			// the fetch's deadline. The minute keeps a verifier without one
			// from hanging the test (it then fails on the detail).
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		}, "context deadline exceeded"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://127.0.0.1:1/jwks", http.StatusFound)
		}, "redirects are not followed"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, "HTTP 404"},
		{"no usable key", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"keys":[{"kty":"oct","kid":"k","k":"c2VjcmV0"}]}`))
		}, "no usable signing key"},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) }, "not JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Only the fetch that must time out gets a short bound: a
			// loaded machine may take longer than that for one that must
			// succeed, so those keep the default.
			slow := tc.name == "too slow"
			f := newFixture(t, func(o *oauth.Options) {
				o.MaxJWKSBytes = 1 << 10
				if slow {
					o.FetchTimeout = 300 * time.Millisecond
				}
			})
			f.is.Handle(tc.handler)
			_, err := f.v.Verify(context.Background(), f.is.Sign(t, "rsa-1", f.claims()))
			var e *oauth.Error
			if !errors.As(err, &e) || !e.Unavailable || !strings.Contains(e.Detail, tc.detail) {
				t.Fatalf("error %v, want unavailable with %q", err, tc.detail)
			}
			if e.Description != "the issuer's signing keys could not be fetched; try again later" {
				t.Errorf("description %q", e.Description)
			}
			// Retried only after RefreshMin.
			f.v.Verify(context.Background(), f.is.Sign(t, "rsa-1", f.claims()))
			if got := f.is.Hits(); got != 1 {
				t.Errorf("%d fetches within RefreshMin of a failure, want 1", got)
			}
			if slow {
				return // recovery would be a fetch that must succeed within 300 ms; the other cases show it
			}
			f.is.Handle(nil)
			f.clock.Advance(time.Minute)
			if _, err := f.v.Verify(context.Background(), f.is.Sign(t, "rsa-1", f.claims())); err != nil {
				t.Errorf("after the issuer recovered: %v", err)
			}
		})
	}
}

// TestFailedRefetchKeepsKeys: when a refetch fails, the keys fetched before
// keep verifying.
func TestFailedRefetchKeepsKeys(t *testing.T) {
	f := newFixture(t, func(o *oauth.Options) { o.MaxAge = time.Minute })
	ctx := context.Background()
	if _, err := f.v.Verify(ctx, f.is.Sign(t, "rsa-1", f.claims())); err != nil {
		t.Fatal(err)
	}
	f.is.Handle(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	f.clock.Advance(2 * time.Minute)
	c := f.is.Claims(resource, "alice", f.clock.Now(), "")
	if _, err := f.v.Verify(ctx, f.is.Sign(t, "rsa-1", c)); err != nil {
		t.Errorf("stale keys while the issuer is down: %v", err)
	}
	if got := f.is.Hits(); got != 2 {
		t.Errorf("%d fetches, want 2", got)
	}
}

func TestScopesSubjectAndType(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	c := f.claims()
	delete(c, "scope")
	c["scp"] = []string{"a", "b"}
	tok, err := f.v.Verify(ctx, f.is.Sign(t, "rsa-1", c))
	if err != nil || !slices.Equal(tok.Scopes, []string{"a", "b"}) {
		t.Errorf("scp list: %+v %v", tok, err)
	}

	c = f.claims()
	c["scope"] = "a  b a"
	c["scp"] = "c"
	tok, err = f.v.Verify(ctx, f.is.Sign(t, "rsa-1", c))
	if err != nil || !slices.Equal(tok.Scopes, []string{"a", "b", "c"}) {
		t.Errorf("scope string and scp string: %+v %v", tok, err)
	}

	c = f.claims()
	delete(c, "sub")
	c["client_id"] = "ci-bot"
	tok, err = f.v.Verify(ctx, f.is.Sign(t, "rsa-1", c))
	if err != nil || tok.Subject != "ci-bot" {
		t.Errorf("client_id as subject: %+v %v", tok, err)
	}

	// typ: an access token's, JWT, or none; not another kind of JWT.
	for _, typ := range []string{"", "JWT", "at+jwt", "application/at+jwt"} {
		if _, err := f.v.Verify(ctx, f.is.SignTyped(t, "rsa-1", typ, f.claims())); err != nil {
			t.Errorf("typ %q: %v", typ, err)
		}
	}
	for _, typ := range []string{"dpop+jwt", "logout+jwt", "secevent+jwt"} {
		f.refused(t, f.is.SignTyped(t, "rsa-1", typ, f.claims()), "the access token's type (typ) is not an access token's")
	}
}

func TestTokenShape(t *testing.T) {
	f := newFixture(t)
	for _, token := range []string{"", "a", "a.b", "a.b.c", "a.b.c.d.e", strings.Repeat("a", oauth.MaxTokenBytes+1)} {
		tok, err := f.v.Verify(context.Background(), token)
		if err == nil {
			t.Errorf("%.20q accepted: %+v", token, tok)
		}
	}
	f.refused(t, strings.Repeat("a", oauth.MaxTokenBytes+1), "the access token is too long")
	if got := f.is.Hits(); got != 0 {
		t.Errorf("malformed tokens fetched keys %d times", got)
	}
}

// TestKeyWithoutKid: a token naming no kid is checked with the set's only
// key usable for its algorithm.
func TestKeyWithoutKid(t *testing.T) {
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.EdDSA, "")
	clock := oauthtest.NewClock(t0)
	v, err := oauth.New(oauth.Options{Resource: resource, Issuers: []oauth.Issuer{{Issuer: is.URL, JWKSURL: is.JWKSURL()}}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), is.Sign(t, "", is.Claims(resource, "bob", t0, ""))); err != nil {
		t.Errorf("a kid-less token with a single key: %v", err)
	}
}

func TestNewRefusesPlainHTTP(t *testing.T) {
	for _, u := range []string{"http://idp.example.com/jwks", "ftp://127.0.0.1/jwks", "https:///jwks"} {
		_, err := oauth.New(oauth.Options{Resource: resource, Issuers: []oauth.Issuer{{Issuer: "https://idp.example.com", JWKSURL: u}}})
		if err == nil {
			t.Errorf("jwks_url %s accepted", u)
		}
	}
}
