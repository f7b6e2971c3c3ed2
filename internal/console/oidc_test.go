package console

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/principal"
)

// provider is a small but real OpenID provider: discovery, JWKS, an
// authorization endpoint that logs in whoever the test names (and insists
// on PKCE S256), and a token endpoint that checks the client, the code
// (once), the redirect URI and the PKCE verifier before it signs an ID
// token.
type provider struct {
	t   *testing.T
	srv *httptest.Server
	// issuer is the provider's URL as the console reaches it: srv.URL, or
	// the same server named localhost (another site than 127.0.0.1).
	issuer string
	key    *rsa.PrivateKey
	signer jose.Signer

	mu    sync.Mutex
	next  map[string]any // the claims of the next login (sub, groups, ...)
	codes map[string]grant
	// badNonce makes the next ID token carry another nonce.
	badNonce bool
	// seen records what the console sent, for the test to check.
	seenChallengeMethod, seenVerifier string
}

type grant struct {
	challenge, nonce, redirect, clientID string
	claims                               map[string]any
}

const (
	testClientID     = "warden-console"
	testClientSecret = "s3cret-of-the-console"
)

func newProvider(t *testing.T) *provider {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	p := &provider{t: t, key: key, signer: signer, codes: map[string]grant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /keys", p.keys)
	mux.HandleFunc("GET /authorize", p.authorize)
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	p.issuer = p.srv.URL
	return p
}

func (p *provider) loginAs(claims map[string]any) {
	p.mu.Lock()
	p.next = claims
	p.mu.Unlock()
}

func (p *provider) discovery(w http.ResponseWriter, _ *http.Request) {
	json.NewEncoder(w).Encode(map[string]any{
		"issuer":                                p.issuer,
		"authorization_endpoint":                p.issuer + "/authorize",
		"token_endpoint":                        p.issuer + "/token",
		"jwks_uri":                              p.issuer + "/keys",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"code_challenge_methods_supported":      []string{"S256"},
	})
}

func (p *provider) keys(w http.ResponseWriter, _ *http.Request) {
	json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
}

func (p *provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seenChallengeMethod = q.Get("code_challenge_method")
	if q.Get("response_type") != "code" || q.Get("client_id") != testClientID || q.Get("code_challenge") == "" ||
		q.Get("code_challenge_method") != "S256" || !strings.Contains(q.Get("scope"), "openid") || q.Get("state") == "" || q.Get("nonce") == "" {
		http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
		return
	}
	code := newSecret()
	p.codes[code] = grant{challenge: q.Get("code_challenge"), nonce: q.Get("nonce"), redirect: q.Get("redirect_uri"), clientID: q.Get("client_id"), claims: p.next}
	to, _ := url.Parse(q.Get("redirect_uri"))
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func (p *provider) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	fail := func(why string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant", "error_description": why})
	}
	if id != testClientID || secret != testClientSecret {
		fail("client authentication")
		return
	}
	p.mu.Lock()
	g, ok := p.codes[r.PostFormValue("code")]
	delete(p.codes, r.PostFormValue("code")) // a code works once
	p.seenVerifier = r.PostFormValue("code_verifier")
	badNonce := p.badNonce
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
	switch {
	case !ok:
		fail("unknown or used code")
		return
	case r.PostFormValue("grant_type") != "authorization_code" || r.PostFormValue("redirect_uri") != g.redirect:
		fail("grant type or redirect")
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		fail("PKCE verifier does not match the challenge")
		return
	}
	claims := map[string]any{"iss": p.issuer, "aud": testClientID, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "nonce": g.nonce}
	if badNonce {
		claims["nonce"] = "not-this-login"
	}
	for k, v := range g.claims {
		claims[k] = v
	}
	idToken, err := jwt.Signed(p.signer).Claims(claims).Serialize()
	if err != nil {
		p.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + newSecret(), "token_type": "Bearer", "expires_in": 3600, "id_token": idToken})
}

// oidcWorld is a console behind an OpenID login of p, whose admins are
// the members of group "platform".
func oidcWorld(t *testing.T, p *provider, groupsClaim string) *world {
	w := &world{t: t, broker: approvals.NewMemory(0), clock: &testClock{t: time.Now()}}
	var h http.Handler
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { h.ServeHTTP(rw, r) }))
	t.Cleanup(w.srv.Close)
	c, err := New(Options{Prefix: "/console/", Broker: w.broker, OIDC: &OIDC{Issuer: p.issuer, ClientID: testClientID, ClientSecret: testClientSecret,
		RedirectURL: w.srv.URL + "/console/oidc/callback", GroupsClaim: groupsClaim, AdminGroups: []string{"platform"}},
		Tools: recordingTools{}, Installer: fakeInstaller{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	w.c, h = c, c.Handler()
	return w
}

// oidcLogin runs the login in a client that follows redirects, as a
// browser does, and returns the client, the final response's status and
// body.
func oidcLogin(t *testing.T, w *world) (*http.Client, int, string) {
	jar, _ := cookiejar.New(nil)
	cl := &http.Client{Jar: jar}
	resp, err := cl.Get(w.srv.URL + "/console/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return cl, resp.StatusCode, string(b)
}

func csrfOf(t *testing.T, page string) string {
	i := strings.Index(page, `data-csrf="`)
	if i < 0 {
		t.Fatalf("no CSRF token in:\n%s", page)
	}
	return page[i+len(`data-csrf="`):][:64]
}

// TestOIDCLoginAndApproverGroups: two people log in through the provider
// (authorization code with PKCE S256, state and nonce checked); their
// groups come from the configured claim, and only the one in the
// request's approver group may decide it.
func TestOIDCLoginAndApproverGroups(t *testing.T) {
	p := newProvider(t)
	w := oidcWorld(t, p, "roles")

	p.loginAs(map[string]any{"sub": "alice", "roles": []string{"ops", "dev"}, "groups": []string{"ignored"}})
	alice, status, page := oidcLogin(t, w)
	if status != http.StatusOK || !strings.Contains(page, `id="continue"`) {
		t.Fatalf("alice's login: %d\n%s", status, page)
	}
	if p.seenChallengeMethod != "S256" || len(p.seenVerifier) < 43 {
		t.Errorf("PKCE: method %q, verifier %q", p.seenChallengeMethod, p.seenVerifier)
	}
	page = w.get(alice, "/console/approvals")
	if !strings.Contains(page, "alice ("+p.issuer+") · ops, dev") {
		t.Errorf("alice's page does not name her and her groups from the roles claim:\n%s", page)
	}
	aliceToken := csrfOf(t, page)

	p.loginAs(map[string]any{"sub": "bob", "roles": "dev"})
	bob, status, page := oidcLogin(t, w)
	if status != http.StatusOK {
		t.Fatalf("bob's login: %d\n%s", status, page)
	}
	bobToken := csrfOf(t, w.get(bob, "/console/approvals"))

	asked := w.ask(approvals.Request{Kind: approvals.Gate, Tool: "deploy", Approvers: []string{approvals.GroupKey(p.issuer, "ops")}})
	id := w.waitPending(1)[0].ID
	resp, body := w.post(bob, "/console/approvals/"+id, url.Values{"csrf": {bobToken}, "decision": {"approve"}}, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "it names group &#34;ops&#34; of &#34;"+p.issuer+"&#34;, and your groups are dev.") {
		t.Errorf("bob approves: %s\n%s", resp.Status, body)
	}
	resp, _ = w.post(alice, "/console/approvals/"+id, url.Values{"csrf": {aliceToken}, "decision": {"approve"}}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("alice approves: %s", resp.Status)
	}
	if d := <-asked; !d.d.Approved || d.d.By != approvals.SubjectKey(p.issuer, "alice") {
		t.Errorf("decision %+v", d.d)
	}
}

// TestOIDCLoginRefusals: a callback whose state is not the browser's, a
// replayed callback, an ID token with another login's nonce, and a
// provider's error are each refused without a session.
func TestOIDCLoginRefusals(t *testing.T) {
	p := newProvider(t)
	w := oidcWorld(t, p, "")
	p.loginAs(map[string]any{"sub": "mallory"})

	// Stop before the callback: take the provider's redirect by hand.
	jar, _ := cookiejar.New(nil)
	noFollow := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	begin := func() *url.URL {
		resp, err := noFollow.Get(w.srv.URL + "/console/oidc/start")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = noFollow.Get(resp.Header.Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cb, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || cb.Query().Get("code") == "" {
			t.Fatalf("provider redirect %q", resp.Header.Get("Location"))
		}
		return cb
	}
	callback := func(cl *http.Client, u string) (int, string, []*http.Cookie) {
		resp, err := cl.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Cookies()
	}
	sessionCookie := func(cookies []*http.Cookie) bool {
		for _, c := range cookies {
			if c.Name == "warden-console" && c.Value != "" {
				return true
			}
		}
		return false
	}

	// Another browser (no login cookie) brings the victim's callback.
	cb := begin()
	other, _ := cookiejar.New(nil)
	status, body, cookies := callback(&http.Client{Jar: other}, cb.String())
	if status != http.StatusUnauthorized || !strings.Contains(body, "state does not match") || sessionCookie(cookies) {
		t.Errorf("foreign callback: %d %v\n%s", status, cookies, body)
	}
	// A state altered in the URL.
	q := cb.Query()
	q.Set("state", newSecret())
	altered := *cb
	altered.RawQuery = q.Encode()
	status, body, _ = callback(noFollow, altered.String())
	if status != http.StatusUnauthorized || !strings.Contains(body, "state does not match") {
		t.Errorf("altered state: %d\n%s", status, body)
	}

	// The right browser finishes; the same callback again is refused.
	cb = begin()
	status, _, cookies = callback(noFollow, cb.String())
	if status != http.StatusOK || !sessionCookie(cookies) {
		t.Fatalf("good callback: %d %v", status, cookies)
	}
	status, body, _ = callback(noFollow, cb.String())
	if status != http.StatusUnauthorized || (!strings.Contains(body, "state does not match") && !strings.Contains(body, "expired or was already finished")) {
		t.Errorf("replayed callback: %d\n%s", status, body)
	}

	// An ID token carrying another nonce.
	p.mu.Lock()
	p.badNonce = true
	p.mu.Unlock()
	cb = begin()
	status, body, cookies = callback(noFollow, cb.String())
	if status != http.StatusUnauthorized || !strings.Contains(body, "nonce is not this login") || sessionCookie(cookies) {
		t.Errorf("wrong nonce: %d %v\n%s", status, cookies, body)
	}

	// The provider says no.
	status, body, _ = callback(noFollow, w.srv.URL+"/console/oidc/callback?error=access_denied&state=x")
	if status != http.StatusUnauthorized || !strings.Contains(body, "the provider answered access_denied") {
		t.Errorf("provider error: %d\n%s", status, body)
	}
	if n := w.c.sessions.len(); n != 1 {
		t.Errorf("%d sessions, want only the good login's", n)
	}
}

// recordingTools answers every grant with a diff: reaching it means the
// console let the person change grants.
type recordingTools struct{}

func (recordingTools) List(context.Context) (ToolList, error) { return ToolList{}, nil }
func (recordingTools) Grant(_ context.Context, req GrantRequest, _ bool) (GrantResult, error) {
	return GrantResult{Diff: "--- config.yaml\n+++ config.yaml\n+granted " + req.Tool + "\n"}, nil
}

// TestOIDCAdminsOnlyChangeGrantsAndInstall: on a team server, a person
// who logged in may look at Tools and Install, but only a console admin
// (server.console_login.admins) may grant or install; a one-time link's
// session (the machine's owner) may.
func TestOIDCAdminsOnlyChangeGrantsAndInstall(t *testing.T) {
	p := newProvider(t)
	w := oidcWorld(t, p, "")
	p.loginAs(map[string]any{"sub": "dana", "groups": []string{"dev"}})
	dev, _, _ := oidcLogin(t, w)
	page := w.get(dev, "/console/tools")
	if strings.Contains(page, `id="grant-form"`) || !strings.Contains(page, `id="not-admin"`) {
		t.Errorf("a non-admin is offered the grant form:\n%s", page)
	}
	devToken := csrfOf(t, page)
	for _, path := range []string{"/console/tools/grant", "/console/install/review", "/console/install/apply"} {
		resp, body := w.post(dev, path, url.Values{"csrf": {devToken}, "tool": {"x"}, "grants": {"net=a.example"}, "ref": {"oci://r/x:1"}, "review": {"x"}}, nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "for the console&#39;s admins (server.console_login.admin_subjects, admin_groups), and you (dana") || strings.Contains(body, "granted x") {
			t.Errorf("%s by a non-admin: %s\n%s", path, resp.Status, body)
		}
	}
	p.loginAs(map[string]any{"sub": "pat", "groups": []string{"platform"}})
	admin, _, _ := oidcLogin(t, w)
	page = w.get(admin, "/console/tools")
	resp, body := w.post(admin, "/console/tools/grant", url.Values{"csrf": {csrfOf(t, page)}, "tool": {"x"}, "grants": {"net=a.example"}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "granted x") {
		t.Errorf("a grant by an admin: %s\n%s", resp.Status, body)
	}
	// The machine's owner, by a one-time link, is an admin.
	local, token := w.login(principal.Local)
	resp, body = w.post(local, "/console/tools/grant", url.Values{"csrf": {token}, "tool": {"x"}, "grants": {"net=a.example"}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "granted x") {
		t.Errorf("a grant by a link's session: %s\n%s", resp.Status, body)
	}
}
