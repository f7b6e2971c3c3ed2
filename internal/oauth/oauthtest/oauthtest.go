// Package oauthtest is an authorization server for tests: it publishes a
// JWK Set on a loopback httptest server, counts the requests for it, and
// signs access tokens with keys generated on the spot (go-jose), including
// the kinds a resource server must refuse ("none", HS256).
package oauthtest

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is a test authorization server. Its identifier is its URL.
type Issuer struct {
	URL    string
	server *httptest.Server
	hits   atomic.Int64

	mu        sync.Mutex
	keys      map[string]key // by kid
	published []string       // kids in the JWK Set, in order
	extra     []json.RawMessage
	handler   http.HandlerFunc // replaces the JWK Set handler when set
}

type key struct {
	alg     jose.SignatureAlgorithm
	private any
	public  any
}

// NewIssuer starts an issuer; it stops at the end of the test.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{keys: map[string]key{}}
	is.server = httptest.NewServer(http.HandlerFunc(is.serve))
	t.Cleanup(is.server.Close)
	is.URL = is.server.URL
	return is
}

// JWKSURL is where the issuer publishes its keys.
func (is *Issuer) JWKSURL() string { return is.URL + "/jwks" }

// Hits counts the requests for the JWK Set so far.
func (is *Issuer) Hits() int64 { return is.hits.Load() }

// Handle replaces what the JWK Set URL answers (nil restores the set).
func (is *Issuer) Handle(h http.HandlerFunc) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.handler = h
}

func (is *Issuer) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/jwks" {
		http.NotFound(w, r)
		return
	}
	is.hits.Add(1)
	is.mu.Lock()
	h := is.handler
	set := is.setLocked()
	is.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/jwk-set+json")
	w.Write(set)
}

func (is *Issuer) setLocked() []byte {
	keys := append([]json.RawMessage(nil), is.extra...)
	for _, kid := range is.published {
		k := is.keys[kid]
		b, err := json.Marshal(jose.JSONWebKey{Key: k.public, KeyID: kid, Algorithm: string(k.alg), Use: "sig"})
		if err != nil {
			panic(err)
		}
		keys = append(keys, b)
	}
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// AddKey generates a key for alg (RS256, ES256 or EdDSA) named kid and
// publishes it.
func (is *Issuer) AddKey(t testing.TB, alg jose.SignatureAlgorithm, kid string) {
	t.Helper()
	is.addKey(t, alg, kid, true)
}

// AddUnpublishedKey generates a key the JWK Set does not carry (yet).
func (is *Issuer) AddUnpublishedKey(t testing.TB, alg jose.SignatureAlgorithm, kid string) {
	t.Helper()
	is.addKey(t, alg, kid, false)
}

func (is *Issuer) addKey(t testing.TB, alg jose.SignatureAlgorithm, kid string, publish bool) {
	t.Helper()
	var k key
	k.alg = alg
	switch alg {
	case jose.RS256:
		pk, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		k.private, k.public = pk, &pk.PublicKey
	case jose.ES256:
		pk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k.private, k.public = pk, &pk.PublicKey
	case jose.EdDSA:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		k.private, k.public = priv, pub
	default:
		t.Fatalf("oauthtest: no key generation for %s", alg)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid] = k
	if publish {
		is.published = append(is.published, kid)
	}
}

// Publish makes the JWK Set carry the keys named, in that order, and no
// others.
func (is *Issuer) Publish(kids ...string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.published = append([]string(nil), kids...)
}

// PublishRaw adds JWK objects to the set as they are.
func (is *Issuer) PublishRaw(jwks ...string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	for _, j := range jwks {
		is.extra = append(is.extra, json.RawMessage(j))
	}
}

// Public returns the public key of kid.
func (is *Issuer) Public(kid string) any {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[kid].public
}

// Claims returns the claims of a valid token of this issuer for resource,
// issued at now and valid for five minutes.
func (is *Issuer) Claims(resource, subject string, now time.Time, scopes string) map[string]any {
	c := map[string]any{
		"iss": is.URL,
		"sub": subject,
		"aud": resource,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(5 * time.Minute).Unix(),
	}
	if scopes != "" {
		c["scope"] = scopes
	}
	return c
}

// Sign signs claims with the key kid (which need not be published), with
// typ "at+jwt". The key added with kid "" signs naming no kid.
func (is *Issuer) Sign(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	return is.SignTyped(t, kid, "at+jwt", claims)
}

// SignTyped is Sign with the typ header typ ("" for none).
func (is *Issuer) SignTyped(t testing.TB, kid, typ string, claims map[string]any) string {
	t.Helper()
	is.mu.Lock()
	k, ok := is.keys[kid]
	is.mu.Unlock()
	if !ok {
		t.Fatalf("oauthtest: no key %q", kid)
	}
	opts := &jose.SignerOptions{}
	if typ != "" {
		opts = opts.WithType(jose.ContentType(typ))
	}
	if kid != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), kid)
	}
	return sign(t, jose.SigningKey{Algorithm: k.alg, Key: k.private}, opts, claims)
}

// SignHS256 signs claims with HMAC-SHA256 under secret, naming kid: a
// token a resource server must refuse whatever the secret (for example
// the bytes of a published public key).
func SignHS256(t testing.TB, secret []byte, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid)
	return sign(t, jose.SigningKey{Algorithm: jose.HS256, Key: secret}, opts, claims)
}

// Unsigned returns claims as an unsecured JWT (alg "none", RFC 7519 §6),
// which go-jose will not make: header and payload encoded, no signature.
func Unsigned(t testing.TB, kid string, claims map[string]any) string {
	t.Helper()
	header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": kid})
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc(header) + "." + enc(payload) + "."
}

func sign(t testing.TB, key jose.SigningKey, opts *jose.SignerOptions, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(key, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// Clock is a clock tests move by hand.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
