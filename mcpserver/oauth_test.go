package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/tool"
)

// scopedTools is a fakeTools with tools.scopes.
type scopedTools struct {
	*fakeTools
	scopes map[string][]string
}

func (s *scopedTools) options(opts Options) Options {
	opts.Scopes = s
	return opts
}

func (s *scopedTools) ToolScopes(name string) ([]string, string) {
	if sc, ok := s.scopes[name]; ok {
		return sc, "tools.scopes." + name + " in config.yaml"
	}
	return nil, ""
}

func (s *scopedTools) SupportedScopes() []string {
	var all []string
	for _, sc := range s.scopes {
		all = append(all, sc...)
	}
	return all
}

// oauthServer is warden serving fake tools over HTTP as a resource server
// of a test issuer, on loopback.
type oauthServer struct {
	is       *oauthtest.Issuer
	clock    *oauthtest.Clock
	tools    *scopedTools
	s        *Server
	url      string // http://127.0.0.1:PORT
	resource string // url + /mcp
	metaURL  string

	mu    sync.Mutex
	calls []recordedCall
	// headers are the Authorization headers the go-sdk's requests carried.
	headers []string
}

type recordedCall struct {
	call Call
	who  principal.Principal
	ctx  string
}

const (
	scopeBase  = "mcp"
	scopeAlpha = "tools:alpha"
)

func newOAuthServer(t *testing.T, baseline ...string) *oauthServer {
	t.Helper()
	o := &oauthServer{is: oauthtest.NewIssuer(t), clock: oauthtest.NewClock(time.Now())}
	o.is.AddKey(t, jose.RS256, "rsa-1")
	o.is.AddKey(t, jose.ES256, "ec-1")
	o.tools = &scopedTools{fakeTools: newFakeTools(desc("alpha"), desc("beta")),
		scopes: map[string][]string{"alpha": {scopeAlpha}}}
	o.tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		o.mu.Lock()
		o.calls = append(o.calls, recordedCall{call: c, who: principal.From(ctx), ctx: fmt.Sprint(ctx)})
		o.mu.Unlock()
		return &tool.Result{Content: []tool.Content{tool.TextContent("called " + c.Name)}}, nil
	})
	o.s, _ = newServer(t, o.tools, Options{})
	// Every request the go-sdk handles: its Authorization header, if any.
	o.s.sdk.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if extra := req.GetExtra(); extra != nil && extra.Header != nil {
				o.mu.Lock()
				o.headers = append(o.headers, extra.Header.Get("Authorization"))
				o.mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.url = "http://" + ln.Addr().String()
	o.resource = o.url + PathMCP
	o.metaURL = o.url + PathProtectedResource + PathMCP
	v, err := oauth.New(oauth.Options{
		Resource:   o.resource,
		Issuers:    []oauth.Issuer{{Issuer: o.is.URL, JWKSURL: o.is.JWKSURL()}},
		ClockSkew:  time.Minute,
		RefreshMin: time.Minute,
		Now:        o.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- o.s.ServeListener(ctx, ln, HTTPOptions{OAuth: &OAuthOptions{
			Resource:             o.resource,
			AuthorizationServers: []string{o.is.URL},
			Scopes:               baseline,
			Verify:               v.VerifyPrincipal,
		}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	})
	return o
}

// token is a valid token for o of subject with scopes.
func (o *oauthServer) token(t *testing.T, subject, scopes string) string {
	t.Helper()
	return o.is.Sign(t, "rsa-1", o.is.Claims(o.resource, subject, o.clock.Now(), scopes))
}

// switchable is a RoundTripper adding the bearer token it currently holds.
type switchable struct{ token atomic.Value }

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token.Load().(string))
	return http.DefaultTransport.RoundTrip(r)
}

// connect connects the go-sdk client with token, at protocol.
func (o *oauthServer) connect(t *testing.T, protocol, token string) (*mcp.ClientSession, *switchable) {
	t.Helper()
	rt := &switchable{}
	rt.token.Store(token)
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   o.resource,
		HTTPClient: &http.Client{Transport: rt},
	}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect at %q: %v", protocol, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, rt
}

// post sends one raw JSON-RPC POST to /mcp with the given Authorization
// header values, and returns the response with its body read.
func (o *oauthServer) post(t *testing.T, body string, authorization ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", o.resource, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	if strings.Contains(body, `"tools/call"`) {
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", callName(json.RawMessage(body[strings.Index(body, `"params":`)+9:len(body)-1])))
	} else {
		req.Header.Set("Mcp-Method", "tools/list")
	}
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// rawMeta is the _meta a stateless (2026-07-28) request carries.
const rawMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + rawMeta + `}}`

func callBody(name string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":{},` + rawMeta + `}}`
}

// TestOAuthValidToken: the go-sdk client with a valid token lists and
// calls tools at both protocol generations; the tool's context carries the
// token's principal, and neither the go-sdk's request nor the call carries
// the token or the Authorization header.
func TestOAuthValidToken(t *testing.T) {
	o := newOAuthServer(t)
	token := o.token(t, "alice", "mcp tools:alpha")
	for _, protocol := range []string{"2025-11-25", ""} {
		cs, _ := o.connect(t, protocol, token)
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(list.Tools) != 2 {
			t.Fatalf("list at %q: %+v %v", protocol, list, err)
		}
		for _, name := range []string{"alpha", "beta"} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
			if err != nil || res.IsError {
				t.Fatalf("call %s at %q: %+v %v", name, protocol, res, err)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.calls) != 4 {
		t.Fatalf("%d calls reached the tools, want 4", len(o.calls))
	}
	want := principal.Principal{Subject: "alice", Via: principal.ViaOAuth, Scopes: []string{"mcp", "tools:alpha"}, Issuer: o.is.URL}
	for _, c := range o.calls {
		if c.who.Subject != want.Subject || c.who.Via != want.Via || c.who.Issuer != want.Issuer || !slices.Equal(c.who.Scopes, want.Scopes) {
			t.Errorf("principal in the call's context: %+v, want %+v", c.who, want)
		}
		if dump := fmt.Sprintf("%#v %s", c.call, c.ctx); strings.Contains(dump, token) || strings.Contains(dump, "Bearer") {
			t.Errorf("the call or its context carries the token: %s", dump)
		}
	}
	if len(o.headers) == 0 {
		t.Fatal("no request seen by the go-sdk")
	}
	for _, h := range o.headers {
		if h != "" {
			t.Errorf("the go-sdk's request carried Authorization %q", h)
		}
	}
}

// TestOAuthChallenge: exact 401 headers, without a token and with tokens
// that fail for each reason; a malformed header is a 401 too.
func TestOAuthChallenge(t *testing.T) {
	o := newOAuthServer(t)
	resp, body := o.post(t, listBody)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s", resp.StatusCode, body)
	}
	want := `Bearer resource_metadata="` + o.url + `/.well-known/oauth-protected-resource/mcp"`
	if got := resp.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != want {
		t.Errorf("no token: WWW-Authenticate %q\nwant %q", got, want)
	}

	now := o.clock.Now()
	claims := func(edit func(map[string]any)) map[string]any {
		c := o.is.Claims(o.resource, "alice", now, "mcp")
		edit(c)
		return c
	}
	other := oauthtest.NewIssuer(t)
	other.AddKey(t, jose.RS256, "rsa-1")
	o.is.AddUnpublishedKey(t, jose.RS256, "unknown")
	for _, tc := range []struct {
		name, token, description string
	}{
		{"expired", o.is.Sign(t, "rsa-1", claims(func(c map[string]any) { c["exp"] = now.Add(-2 * time.Minute).Unix() })),
			"the access token has expired"},
		{"not yet valid", o.is.Sign(t, "ec-1", claims(func(c map[string]any) { c["nbf"] = now.Add(2 * time.Minute).Unix() })),
			"the access token is not valid yet"},
		{"wrong audience", o.is.Sign(t, "rsa-1", claims(func(c map[string]any) { c["aud"] = "https://elsewhere.example.com/mcp" })),
			"the access token is not meant for this resource (its audience does not include " + o.resource + ")"},
		{"wrong issuer", other.Sign(t, "rsa-1", other.Claims(o.resource, "alice", now, "mcp")),
			"the access token's issuer is not trusted here"},
		{"unknown key", o.is.Sign(t, "unknown", claims(func(map[string]any) {})),
			"the access token's signing key (kid) is unknown"},
		{"alg none", oauthtest.Unsigned(t, "rsa-1", claims(func(map[string]any) {})),
			"the access token is not a JWT signed with RS256, ES256 or EdDSA"},
		{"HS256", oauthtest.SignHS256(t, []byte("0123456789abcdef0123456789abcdef"), "rsa-1", claims(func(map[string]any) {})),
			"the access token is not a JWT signed with RS256, ES256 or EdDSA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := o.post(t, listBody, "Bearer "+tc.token)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			want := `Bearer resource_metadata="` + o.metaURL + `", error="invalid_token", error_description="` + tc.description + `"`
			if got := resp.Header.Get("WWW-Authenticate"); got != want {
				t.Errorf("WWW-Authenticate %q\nwant %q", got, want)
			}
		})
	}

	for _, h := range [][]string{{"Bearer"}, {"Bearer a b"}, {"Bearer " + o.token(t, "a", ""), "Bearer x"}, {"bearer\t"}} {
		resp, _ := o.post(t, listBody, h...)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("Authorization %q: %d %q", h, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	for _, h := range []string{"Basic YTpi", "Token x", "  "} {
		resp, _ := o.post(t, listBody, h)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
			t.Errorf("Authorization %q (no bearer token): %d %q", h, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// The valid token works over the same raw path.
	if resp, body := o.post(t, listBody, "Bearer "+o.token(t, "alice", "")); resp.StatusCode != http.StatusOK {
		t.Errorf("valid token: %d %s", resp.StatusCode, body)
	}
}

// TestOAuthUnknownKeyRefetchLimit: tokens naming unknown keys make warden
// fetch the issuer's keys at most once per jwks_refresh_min, counted at the
// issuer.
func TestOAuthUnknownKeyRefetchLimit(t *testing.T) {
	o := newOAuthServer(t)
	if resp, body := o.post(t, listBody, "Bearer "+o.token(t, "alice", "")); resp.StatusCode != http.StatusOK {
		t.Fatalf("valid token: %d %s", resp.StatusCode, body)
	}
	if got := o.is.Hits(); got != 1 {
		t.Fatalf("%d fetches after the first token, want 1", got)
	}
	for i := range 30 {
		kid := fmt.Sprintf("bogus-%d", i)
		o.is.AddUnpublishedKey(t, jose.ES256, kid)
		resp, _ := o.post(t, listBody, "Bearer "+o.is.Sign(t, kid, o.is.Claims(o.resource, "m", o.clock.Now(), "")))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bogus kid: %d", resp.StatusCode)
		}
		if i == 9 {
			o.clock.Advance(time.Minute) // one more fetch is allowed from here
		}
	}
	if got := o.is.Hits(); got != 2 {
		t.Errorf("30 unknown kids over two refresh windows: %d fetches in all, want 2", got)
	}
}

// TestOAuthScopes: a tool whose scope the token lacks is refused, over HTTP
// with 403 insufficient_scope and a JSON-RPC error naming the tool, the
// scope and the config line; the go-sdk client sees that error and goes on
// calling the other tools in the same session. tools/list lists both.
func TestOAuthScopes(t *testing.T) {
	o := newOAuthServer(t)
	token := o.token(t, "bob", "mcp")
	const wantMsg = `tool "alpha" needs the scope tools:alpha, which the access token does not grant (tools.scopes.alpha in config.yaml)`
	for _, protocol := range []string{"2025-11-25", ""} {
		cs, _ := o.connect(t, protocol, token)
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil || len(list.Tools) != 2 {
			t.Errorf("tools/list at %q lists every tool: %+v %v", protocol, list, err)
		}
		_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "alpha"})
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInsufficientScope || rpcErr.Message != wantMsg {
			t.Errorf("call alpha at %q: %v, want error %d %q", protocol, err, CodeInsufficientScope, wantMsg)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "beta"})
		if err != nil || res.IsError {
			t.Errorf("call beta after the refusal at %q: %+v %v", protocol, res, err)
		}
	}
	o.mu.Lock()
	for _, c := range o.calls {
		if c.call.Name == "alpha" {
			t.Error("the refused tool ran")
		}
	}
	o.mu.Unlock()

	resp, body := o.post(t, callBody("alpha"), "Bearer "+token)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("raw call of alpha: %d %s", resp.StatusCode, body)
	}
	wantHeader := `Bearer resource_metadata="` + o.metaURL + `", error="insufficient_scope", ` +
		`error_description="tool alpha needs the scope tools:alpha, which the access token does not grant (tools.scopes.alpha in config.yaml)", ` +
		`scope="tools:alpha"`
	if got := resp.Header.Get("WWW-Authenticate"); got != wantHeader {
		t.Errorf("WWW-Authenticate %q\nwant %q", got, wantHeader)
	}
	wantBody := `{"jsonrpc":"2.0","id":7,"error":{"code":-32043,"message":"tool \"alpha\" needs the scope tools:alpha, which the access token does not grant (tools.scopes.alpha in config.yaml)"}}`
	if body != wantBody {
		t.Errorf("body %s\nwant %s", body, wantBody)
	}
	// With the scope, the call goes through.
	if resp, body := o.post(t, callBody("alpha"), "Bearer "+o.token(t, "bob", "mcp tools:alpha")); resp.StatusCode != http.StatusOK {
		t.Errorf("with the scope: %d %s", resp.StatusCode, body)
	}
}

// TestOAuthBaselineScopes: server.oauth.scopes are required of every
// request: without them 403 insufficient_scope; the 401 challenge names
// them.
func TestOAuthBaselineScopes(t *testing.T) {
	o := newOAuthServer(t, scopeBase)
	resp, _ := o.post(t, listBody)
	want := `Bearer resource_metadata="` + o.metaURL + `", scope="mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != want {
		t.Errorf("no token: %d %q, want 401 %q", resp.StatusCode, got, want)
	}
	resp, body := o.post(t, listBody, "Bearer "+o.token(t, "carol", "tools:alpha"))
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without the baseline scope: %d %s", resp.StatusCode, body)
	}
	want = `Bearer resource_metadata="` + o.metaURL + `", error="insufficient_scope", ` +
		`error_description="the access token lacks the scope mcp, which every request needs (server.oauth.scopes)", scope="mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); got != want {
		t.Errorf("WWW-Authenticate %q\nwant %q", got, want)
	}
	if resp, body := o.post(t, listBody, "Bearer "+o.token(t, "carol", "mcp")); resp.StatusCode != http.StatusOK {
		t.Errorf("with the baseline scope: %d %s", resp.StatusCode, body)
	}
	// A tool's challenge names the baseline with the tool's scopes.
	resp, _ = o.post(t, callBody("alpha"), "Bearer "+o.token(t, "carol", "mcp"))
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusForbidden || !strings.HasSuffix(got, `scope="mcp tools:alpha"`) {
		t.Errorf("call of alpha: %d %q", resp.StatusCode, got)
	}
}

// TestProtectedResourceMetadata: the document, exactly, at the well-known
// path and at the path-suffixed one; other well-known paths are not found.
func TestProtectedResourceMetadata(t *testing.T) {
	o := newOAuthServer(t, scopeBase)
	want := `{"resource":"` + o.resource + `","authorization_servers":["` + o.is.URL + `"],` +
		`"scopes_supported":["mcp","tools:alpha"],"bearer_methods_supported":["header"],"resource_name":"warden"}` + "\n"
	for _, path := range []string{PathProtectedResource, PathProtectedResource + PathMCP} {
		resp, err := http.Get(o.url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != want {
			t.Errorf("GET %s: %d %s\nwant %s", path, resp.StatusCode, b, want)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
	}
	for _, path := range []string{PathProtectedResource + "/other", "/.well-known/oauth-authorization-server"} {
		resp, err := http.Get(o.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	// The metadata URL for a resource at the root, and with a longer path.
	for resource, want := range map[string]string{
		"https://w.example.com":            "https://w.example.com/.well-known/oauth-protected-resource",
		"https://w.example.com/":           "https://w.example.com/.well-known/oauth-protected-resource",
		"https://w.example.com:8443/a/mcp": "https://w.example.com:8443/.well-known/oauth-protected-resource/a/mcp",
	} {
		if got, err := ProtectedResourceMetadataURL(resource); err != nil || got != want {
			t.Errorf("ProtectedResourceMetadataURL(%s) = %s %v, want %s", resource, got, err, want)
		}
	}
}

// TestOAuthSessionBoundToUser: a 2025-11-25 session opened with one user's
// token is refused to another user's token.
func TestOAuthSessionBoundToUser(t *testing.T) {
	o := newOAuthServer(t)
	cs, rt := o.connect(t, "2025-11-25", o.token(t, "alice", ""))
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "beta"}); err != nil {
		t.Fatal(err)
	}
	rt.token.Store(o.token(t, "alice", "")) // a fresh token of the same user: fine
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "beta"}); err != nil {
		t.Errorf("a new token of the same user: %v", err)
	}
	rt.token.Store(o.token(t, "mallory", ""))
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "beta"}); err == nil {
		t.Error("another user's token was let into the session")
	}
}

// TestAuthorizeMiddleware: the server's own check (the door every request
// into module code goes through) refuses a run as a tool by an OAuth
// principal lacking the tool's scope, whatever the transport did, and lets
// the static token and local callers through.
func TestAuthorizeMiddleware(t *testing.T) {
	tools := &scopedTools{fakeTools: newFakeTools(desc("alpha")), scopes: map[string][]string{"alpha": {scopeAlpha}}}
	s, _ := newServer(t, tools, Options{})
	var saw principal.Principal
	ran := false
	next := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		saw = principal.From(ctx)
		d := &door[*mcp.CallToolResult]{method: MethodCallTool, name: "alpha", what: "alpha", subject: "alpha",
			refused: func(r *tool.Result) (*mcp.CallToolResult, error) { return nil, r.Error }}
		return enter(s, ctx, d, func(context.Context, entry) (*mcp.CallToolResult, error) {
			ran = true
			return &mcp.CallToolResult{}, nil
		})
	}
	call := func(p *principal.Principal) error {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "alpha"}, Extra: &mcp.RequestExtra{}}
		if p != nil {
			req.Extra.TokenInfo = &auth.TokenInfo{Extra: map[string]any{extraPrincipal: *p}}
		}
		saw, ran = principal.Principal{}, false
		_, err := s.authorize(next)(context.Background(), "tools/call", req)
		return err
	}
	lacking := principal.Principal{Subject: "bob", Via: principal.ViaOAuth, Scopes: []string{"mcp"}, Issuer: "https://idp"}
	err := call(&lacking)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInsufficientScope || ran ||
		rpcErr.Message != `tool "alpha" needs the scope tools:alpha, which the access token does not grant (tools.scopes.alpha in config.yaml)` {
		t.Errorf("OAuth principal without the scope: %v (ran: %v)", err, ran)
	}
	holding := lacking
	holding.Scopes = []string{scopeAlpha}
	if err := call(&holding); err != nil || saw.Subject != "bob" || !ran {
		t.Errorf("OAuth principal with the scope: %v, principal %+v", err, saw)
	}
	if err := call(&tokenPrincipal); err != nil || !reflect.DeepEqual(saw, tokenPrincipal) || !ran {
		t.Errorf("static token: %v, principal %+v", err, saw)
	}
	if err := call(nil); err != nil || !reflect.DeepEqual(saw, principal.Local) || !ran {
		t.Errorf("no principal: %v, principal %+v", err, saw)
	}
}

// TestPrincipalOfStaticTokenAndStdio: the static token's calls run as
// {token, token}; stdio's as the local principal.
func TestPrincipalOfStaticTokenAndStdio(t *testing.T) {
	tools := newFakeTools(desc("a"))
	var mu sync.Mutex
	var seen []principal.Principal
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		mu.Lock()
		seen = append(seen, principal.From(ctx))
		mu.Unlock()
		return &tool.Result{Content: []tool.Content{tool.TextContent("ok")}}, nil
	})
	s, _ := newServer(t, tools, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ctx, ln, HTTPOptions{Token: "s3cret"}) }()
	defer func() { cancel(); <-served }()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   "http://" + ln.Addr().String() + PathMCP,
		HTTPClient: &http.Client{Transport: bearerTransport{"s3cret"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	stdio := connect(t, s, transports[0], nil)
	if _, err := stdio.CallTool(ctx, &mcp.CallToolParams{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || !reflect.DeepEqual(seen[0], tokenPrincipal) || !reflect.DeepEqual(seen[1], principal.Local) {
		t.Errorf("principals %+v, want [%+v %+v]", seen, tokenPrincipal, principal.Local)
	}
}

func TestOAuthOptionsChecked(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("a")), Options{})
	verify := func(context.Context, string) (principal.Principal, error) {
		return principal.Principal{}, errors.New("no")
	}
	good := &OAuthOptions{Resource: "https://w.example.com/mcp", AuthorizationServers: []string{"https://idp"}, Verify: verify}
	for name, opts := range map[string]HTTPOptions{
		"token and oauth":   {Token: "t", OAuth: good},
		"no verifier":       {OAuth: &OAuthOptions{Resource: good.Resource, AuthorizationServers: good.AuthorizationServers}},
		"no issuer":         {OAuth: &OAuthOptions{Resource: good.Resource, Verify: verify}},
		"relative resource": {OAuth: &OAuthOptions{Resource: "/mcp", AuthorizationServers: good.AuthorizationServers, Verify: verify}},
	} {
		if err := s.ListenAndServe(context.Background(), "127.0.0.1:0", opts); err == nil {
			t.Errorf("%s: served", name)
		}
	}
	// OAuth is authentication enough for a non-loopback listener.
	o := HTTPOptions{OAuth: good}
	if err := o.checkAuth("0.0.0.0:7331"); err != nil {
		t.Errorf("OAuth on every interface: %v", err)
	}
}

// TestOAuthKeysUnavailable: a token that cannot be checked because the
// issuer's keys cannot be had is the server's trouble: 503, no challenge.
func TestOAuthKeysUnavailable(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("a")), Options{})
	verify := func(context.Context, string) (principal.Principal, error) {
		return principal.Principal{}, &oauth.Error{Description: "the issuer's signing keys could not be fetched; try again later", Unavailable: true}
	}
	h := s.Handler(HTTPOptions{OAuth: &OAuthOptions{Resource: "https://w.example.com/mcp",
		AuthorizationServers: []string{"https://idp.example.com"}, Verify: verify}})
	req := httptest.NewRequest("POST", PathMCP, strings.NewReader(listBody))
	req.Header.Set("Authorization", "Bearer x.y.z")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("WWW-Authenticate") != "" ||
		!strings.Contains(rec.Body.String(), "could not be fetched") {
		t.Errorf("%d %q %s", rec.Code, rec.Header().Get("WWW-Authenticate"), rec.Body)
	}
}
