package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/warden-run/warden/internal/principal"
)

// OAuthOptions make HTTP mode an OAuth 2.1 resource server, as the MCP
// authorization spec (2025-11-25) describes: /mcp takes the access tokens
// Verify accepts, and the protected resource metadata (RFC 9728) tells
// clients where to get them.
type OAuthOptions struct {
	// Resource is this server's canonical URL as clients reach it (e.g.
	// https://warden.example.com/mcp); Verify must check that tokens'
	// audience contains it.
	Resource string
	// AuthorizationServers are the issuer identifiers of the authorization
	// servers whose tokens Verify accepts.
	AuthorizationServers []string
	// Scopes are required of every request to /mcp; a token lacking one
	// gets 403 insufficient_scope.
	Scopes []string
	// Verify checks an access token and returns whom it speaks for. An
	// error with an ErrorDescription() string method has that text sent to
	// the client; one whose ServerFault() reports true (the issuer's keys
	// could not be fetched) is answered 503 rather than 401.
	Verify func(ctx context.Context, token string) (principal.Principal, error)
}

// ScopePolicy is what Options.Scopes holds: the OAuth scopes tools need
// (config tools.scopes). A call of a tool by an OAuth principal lacking one
// of the tool's scopes is refused: over HTTP with 403 insufficient_scope
// (the MCP spec's scope challenge) carrying a JSON-RPC error, and in any
// case by the server itself before the tool runs.
type ScopePolicy interface {
	// ToolScopes returns the scopes a call of the tool needs (all of them)
	// and where that is configured, for messages (e.g. "tools.scopes.fs_*
	// in /etc/warden/config.yaml"); nil when the tool needs none.
	ToolScopes(name string) (scopes []string, source string)
	// SupportedScopes lists every scope ToolScopes may name, for the
	// metadata's scopes_supported.
	SupportedScopes() []string
}

// CodeInsufficientScope is the JSON-RPC error code of a tools/call (or a
// resources/read, prompts/get or completion/complete running as a tool)
// refused because the access token lacks a scope the tool needs: an
// implementation-defined server error (-32000 to -32099) that neither MCP
// nor the go-sdk uses (the go-sdk's client reads -32003, for one, as "client
// is closing").
const CodeInsufficientScope = -32043

// PathProtectedResource is where the protected resource metadata is served
// (RFC 9728 §3), also with the resource URL's path appended.
const PathProtectedResource = "/.well-known/oauth-protected-resource"

// extraPrincipal is the auth.TokenInfo.Extra key of the request's
// principal.
const extraPrincipal = "warden/principal"

// ProtectedResourceMetadataURL returns the URL of the metadata of the
// resource at resource: the well-known path, followed by the resource's
// own path (RFC 9728 §3.1).
func ProtectedResourceMetadataURL(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("%q is not an absolute URL", resource)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String() + PathProtectedResource + path, nil
}

func (o *OAuthOptions) check() error {
	if o.Verify == nil {
		return errors.New("oauth: no token verifier")
	}
	if len(o.AuthorizationServers) == 0 {
		return errors.New("oauth: no authorization server")
	}
	_, err := ProtectedResourceMetadataURL(o.Resource)
	return err
}

// oauthState is what the handlers of one OAuth-protected Handler share.
type oauthState struct {
	opts     *OAuthOptions
	metaURL  string
	metaPath string // the path-suffixed metadata path; "" when the resource has none
	policy   ScopePolicy
}

func newOAuthState(o *OAuthOptions, policy ScopePolicy) (*oauthState, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	metaURL, _ := ProtectedResourceMetadataURL(o.Resource)
	st := &oauthState{opts: o, metaURL: metaURL, policy: policy}
	if u, _ := url.Parse(metaURL); u.Path != PathProtectedResource {
		st.metaPath = u.Path
	}
	return st, nil
}

// metadata is the protected resource metadata: tools.scopes may change
// while serving, so it is built per request.
func (st *oauthState) metadata() *oauthex.ProtectedResourceMetadata {
	scopes := slices.Clone(st.opts.Scopes)
	if st.policy != nil {
		scopes = append(scopes, st.policy.SupportedScopes()...)
	}
	slices.Sort(scopes)
	return &oauthex.ProtectedResourceMetadata{
		Resource:               st.opts.Resource,
		AuthorizationServers:   st.opts.AuthorizationServers,
		ScopesSupported:        slices.Compact(scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "warden",
	}
}

// serveMetadata serves the metadata at the well-known path and at the
// path-suffixed one; every other /.well-known/ path is not found.
func (st *oauthState) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != PathProtectedResource && (st.metaPath == "" || r.URL.Path != st.metaPath) {
		http.NotFound(w, r)
		return
	}
	auth.ProtectedResourceMetadataHandler(st.metadata()).ServeHTTP(w, r)
}

// challenge writes a Bearer WWW-Authenticate header (RFC 6750 §3, with
// RFC 9728's resource_metadata): code and description are omitted when
// empty, and so is scope.
func (st *oauthState) challenge(w http.ResponseWriter, code, description string, scopes []string) {
	params := []string{"resource_metadata=" + quote(st.metaURL)}
	if code != "" {
		params = append(params, "error="+quote(code))
	}
	if description != "" {
		params = append(params, "error_description="+quote(description))
	}
	if len(scopes) > 0 {
		params = append(params, "scope="+quote(strings.Join(scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
}

// quote makes a quoted-string of s holding only the characters RFC 6750
// allows in its attributes (printable ASCII but '"' and '\'): the rest are
// dropped, so nothing in s can end the value or the header.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e && c != '"' && c != '\\' {
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// requireOAuth lets through only requests bearing an access token Verify
// accepts that grants every baseline scope. The Authorization header does
// not go further: neither the go-sdk's request (whose headers handlers
// could read) nor any tool sees the token.
func (s *Server) requireOAuth(st *oauthState, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values("Authorization")
		var fields []string
		if len(values) == 1 {
			fields = strings.Fields(values[0])
		}
		switch {
		case len(values) > 1:
			st.refuse(w, "send one Authorization header")
			return
		case len(fields) == 0 || !strings.EqualFold(fields[0], "Bearer"):
			// No bearer token at all: no error code (RFC 6750 §3.1), the
			// start of the client's authorization.
			st.challenge(w, "", "", st.opts.Scopes)
			http.Error(w, "authorization required: send an OAuth access token (Authorization: Bearer ...); "+
				"the metadata at "+st.metaURL+" says where to get one", http.StatusUnauthorized)
			return
		case len(fields) != 2:
			st.refuse(w, `the Authorization header is not "Bearer <token>"`)
			return
		}
		p, err := st.opts.Verify(r.Context(), fields[1])
		if err != nil {
			var fault interface{ ServerFault() bool }
			if errors.As(err, &fault) && fault.ServerFault() {
				http.Error(w, "cannot verify access tokens right now: "+describe(err), http.StatusServiceUnavailable)
				return
			}
			st.refuse(w, describe(err))
			return
		}
		if missing := lacking(p.Scopes, st.opts.Scopes); len(missing) > 0 {
			desc := fmt.Sprintf("the access token lacks %s, which every request needs (server.oauth.scopes)", scopeWords(missing))
			st.challenge(w, "insufficient_scope", desc, st.opts.Scopes)
			http.Error(w, desc, http.StatusForbidden)
			return
		}
		serveAs(w, r, p, next)
	})
}

// refuse answers 401 invalid_token.
func (st *oauthState) refuse(w http.ResponseWriter, description string) {
	st.challenge(w, "invalid_token", description, nil)
	http.Error(w, description, http.StatusUnauthorized)
}

// describe is the client's view of a token's refusal.
func describe(err error) string {
	var d interface{ ErrorDescription() string }
	if errors.As(err, &d) {
		return d.ErrorDescription()
	}
	return "the access token is invalid"
}

// serveAs serves r as p: the go-sdk learns the caller through the one
// channel it has, auth.RequireBearerToken's TokenInfo (which also binds a
// session to the user who opened it: another token's user is refused the
// session), and the Authorization header is removed before the go-sdk sees
// the request.
func serveAs(w http.ResponseWriter, r *http.Request, p principal.Principal, next http.Handler) {
	info := &auth.TokenInfo{
		Scopes: p.Scopes,
		// Distinct issuers may reuse subjects: the pair identifies a user.
		UserID: p.Via + "\x00" + p.Issuer + "\x00" + p.Subject,
		Extra:  map[string]any{extraPrincipal: p},
	}
	// RequireBearerToken reads a token from the header again; the real one
	// was checked above and must not travel further, so it is replaced by
	// a stand-in on a copy of the headers, which is removed in turn.
	r = r.WithContext(r.Context())
	r.Header = r.Header.Clone()
	r.Header.Set("Authorization", "Bearer verified")
	verified := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, nil }
	auth.RequireBearerToken(verified, &auth.RequireBearerTokenOptions{
		// Verify checked the expiry, with the configured clock and skew.
		AllowMissingExpiration: true,
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})).ServeHTTP(w, r)
}

// lacking returns the scopes of need that have does not hold.
func lacking(have, need []string) []string {
	var missing []string
	for _, s := range need {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

func scopeWords(scopes []string) string {
	if len(scopes) == 1 {
		return "the scope " + scopes[0]
	}
	return "the scopes " + strings.Join(scopes, ", ")
}

// principalOf returns the principal the go-sdk's request carries.
func principalOf(extra *mcp.RequestExtra) (principal.Principal, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return principal.Principal{}, false
	}
	return principalOfInfo(extra.TokenInfo)
}

func principalOfInfo(info *auth.TokenInfo) (principal.Principal, bool) {
	if info == nil {
		return principal.Principal{}, false
	}
	p, ok := info.Extra[extraPrincipal].(principal.Principal)
	return p, ok
}

// scopeDenial is a tools/call refused for a scope its token lacks.
type scopeDenial struct {
	message string   // the JSON-RPC error message
	scopes  []string // the scopes the call needs, for the challenge
}

// toolScopeDenial checks a call of the tool name by p; nil when it may go
// on. Only OAuth principals carry scopes: the static token and local
// clients are not limited by tools.scopes.
func (s *Server) toolScopeDenial(p principal.Principal, name string, baseline []string) *scopeDenial {
	policy := s.opts.Scopes
	if policy == nil || p.Via != principal.ViaOAuth {
		return nil
	}
	need, source := policy.ToolScopes(name)
	missing := lacking(p.Scopes, need)
	if len(missing) == 0 {
		return nil
	}
	scopes := slices.Clone(baseline)
	for _, sc := range need {
		if !slices.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	return &scopeDenial{
		message: fmt.Sprintf("tool %q needs %s, which the access token does not grant (%s)", name, scopeWords(missing), source),
		scopes:  scopes,
	}
}

// httpScopeCheck returns guardMessages' check of the requests of an HTTP
// body that run module code (tools/call and the features: doorTarget)
// against the token's scopes: the check the door makes, made early so
// that the refusal is the HTTP 403 scope challenge.
func (s *Server) httpScopeCheck(st *oauthState) func(r *http.Request, calls []call) (*refusal, func(http.ResponseWriter)) {
	return func(r *http.Request, calls []call) (*refusal, func(http.ResponseWriter)) {
		p, ok := principalOfInfo(auth.TokenInfoFromContext(r.Context()))
		if !ok {
			return nil, nil
		}
		for _, c := range calls {
			if c.req == nil {
				continue
			}
			name, subject, ok := s.doorTarget(c.req.Method, c.req.Params)
			if !ok || subject == "" {
				continue
			}
			d := s.toolScopeDenial(p, subject, st.opts.Scopes)
			if d == nil {
				continue
			}
			id := c.raw
			if len(calls) > 1 {
				id = nil // a batch is answered with one error
			}
			message := scopeMessage(c.req.Method, name, subject, d)
			return &refusal{code: CodeInsufficientScope, message: message, id: id}, func(w http.ResponseWriter) {
				st.challenge(w, "insufficient_scope", message, d.scopes)
			}
		}
		return nil, nil
	}
}

// doorTarget reads, from a request's raw params, what a request of method
// that runs module code names and its policy subject, as the door will
// see them: ok is false for a method that runs no module code, or one
// naming nothing served (which the door never admits).
func (s *Server) doorTarget(method string, params json.RawMessage) (name, subject string, ok bool) {
	switch method {
	case MethodCallTool:
		name = callName(params)
		return name, name, true
	case MethodReadResource:
		name = stringField(params, "uri")
		reg, ok := s.resourceTarget(name)
		return name, reg.subject, ok
	case MethodGetPrompt:
		name = stringField(params, "name")
		s.syncMu.Lock()
		reg, ok := s.feat.prompts[name]
		s.syncMu.Unlock()
		return name, reg.subject, ok
	case MethodComplete:
		var ref mcp.CompleteReference
		var fields map[string]json.RawMessage
		if json.Unmarshal(params, &fields) != nil || json.Unmarshal(fields["ref"], &ref) != nil {
			return "", "", false
		}
		reg, ok := s.completionTarget(&ref)
		return ref.Name + ref.URI, reg.subject, ok
	}
	return "", "", false
}

// callName reads a tools/call's tool name as the go-sdk does (case-
// sensitively; the last of duplicate keys). The door checks the name the
// go-sdk decoded again, so a disagreement could only change which refusal
// a client sees, never let a call through.
func callName(params json.RawMessage) string { return stringField(params, "name") }

// stringField reads the string member key of a params object as the
// go-sdk does; "" when there is none.
func stringField(params json.RawMessage, key string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return ""
	}
	var v string
	json.Unmarshal(fields[key], &v)
	return v
}

// authorize is the receiving middleware that puts the request's
// principal in its context (principal.With; nothing for stdio and
// unauthenticated HTTP). The scopes of the tool a request runs as are
// checked in the door (enter), for every request that runs module code.
func (s *Server) authorize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if p, ok := principalOf(req.GetExtra()); ok {
			ctx = principal.With(ctx, p)
		}
		return next(ctx, method, req)
	}
}
