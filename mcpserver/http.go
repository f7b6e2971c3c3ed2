package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/principal"
)

// HTTPOptions configures serving over streamable HTTP.
type HTTPOptions struct {
	// Token, when set, must accompany every request to /mcp as
	// "Authorization: Bearer <Token>". A listener that is not on a loopback
	// address requires Token or OAuth.
	Token string
	// OAuth, when set, makes /mcp an OAuth 2.1 resource server instead
	// (Token must then be empty).
	OAuth *OAuthOptions
	// SessionTimeout closes a 2025-11-25 session after this long without a
	// request; 0 means one hour. Stateless (2026-07-28) requests have none.
	SessionTimeout time.Duration
	// MaxRequestBytes bounds a request body; 0 means DefaultMaxMessage.
	MaxRequestBytes int64
	// HeaderTimeout bounds how long a client may take to send a request's
	// headers; 0 means DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// BodyTimeout bounds how long a client may take to send a request's
	// body, from the end of its headers; 0 means DefaultBodyTimeout. It
	// does not bound responses: an event stream stays open.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection after this long without a
	// request; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConnections caps the open connections; 0 means
	// DefaultMaxConnections. At the cap a new connection evicts the one
	// that has waited longest without a complete request in progress.
	MaxConnections int
	// Extra are more handlers by path, such as /metrics; they require the
	// bearer token like /mcp when Token is set (a scraper can send one).
	Extra map[string]http.Handler
	// Discovery, when set, serves the Server Card and AI Catalog
	// (discovery.go), without authentication.
	Discovery *Discovery
	// Console, when set, is served under ConsolePath (a subtree pattern,
	// "/console/") with its own authentication: the web console's browser
	// sessions (internal/console), not the bearer token or OAuth of /mcp.
	Console     http.Handler
	ConsolePath string
}

// Defaults of HTTPOptions.
const (
	DefaultSessionTimeout = time.Hour
	DefaultHeaderTimeout  = limits.DefaultHeaderTimeout
	DefaultBodyTimeout    = limits.DefaultBodyTimeout
	DefaultIdleTimeout    = limits.DefaultIdleTimeout
	DefaultMaxConnections = limits.DefaultMaxConnections
)

func (o *HTTPOptions) setDefaults() {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxMessage
	}
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
}

// Paths served by Handler.
const (
	PathMCP     = "/mcp"
	PathHealthz = "/healthz"
)

// firstStatelessVersion is the first protocol version without sessions
// (SEP-2575). Dated versions compare correctly as strings.
const firstStatelessVersion = "2026-07-28"

// ErrTokenRequired is returned when serving HTTP on a non-loopback address
// without authentication (a bearer token or OAuth).
var ErrTokenRequired = errors.New("a bearer token or OAuth is required to serve MCP on a non-loopback address")

// Handler returns the HTTP handler for /mcp (streamable HTTP) and /healthz.
//
// Requests at protocol 2026-07-28 or later are served statelessly, as that
// protocol requires; older ones get 2025-11-25-style sessions (Mcp-Session-Id).
// The go-sdk serves either kind but not both from one handler, so the request's
// Mcp-Protocol-Version header picks one of two handlers over the same server.
// Every endpoint (/mcp, /healthz, the OAuth metadata, opts.Extra and any
// path not served) is behind GuardOrigin: a request that reached a loopback
// address with a Host header naming anything but a loopback host (DNS
// rebinding), and a cross-origin browser request, are refused (403) before
// any handler runs.
//
// With opts.OAuth, /mcp requires an access token (RFC 6750: 401 with a
// WWW-Authenticate challenge naming the metadata, 403 insufficient_scope)
// and the protected resource metadata (RFC 9728) is served at
// PathProtectedResource. OAuth options that do not check (no verifier,
// no authorization server, a resource that is not an absolute URL) make
// /mcp answer 500: ServeListener refuses them up front.
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	opts.setDefaults()
	// Every endpoint is behind one guard (Host and Origin, GuardOrigin):
	// it wraps the whole mux, so an endpoint added to routes cannot skip it.
	return paceRequests(GuardOrigin(s.routes(opts), s.log), opts.BodyTimeout)
}

// routes builds the mux of every endpoint Handler serves, remembering the
// patterns so that a test can reach each one.
func (s *Server) routes(opts HTTPOptions) *routes {
	mux := &routes{ServeMux: http.NewServeMux()}
	mux.HandleFunc(PathHealthz, s.healthz)
	var st *oauthState
	if opts.OAuth != nil {
		var err error
		if st, err = newOAuthState(opts.OAuth, s.opts.Scopes); err != nil {
			s.log.Error("OAuth is misconfigured; /mcp refuses every request", "error", err)
			mux.HandleFunc(PathMCP, func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "OAuth is misconfigured on this server", http.StatusInternalServerError)
			})
			return mux
		}
		mux.HandleFunc("/.well-known/", st.serveMetadata)
	}
	getServer := func(*http.Request) *mcp.Server { return s.sdk }
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		Logger:                       s.log,
		MaxRequestBodyBytes:          opts.MaxRequestBytes,
		PropagateRequestCancellation: true, // a closed stream cancels the call
	})
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		// A 2025-11-25 client whose stream drops mid-call resumes it with
		// Last-Event-ID instead of losing the result; the store keeps at
		// most 10 MiB across sessions and forgets a session when it ends.
		EventStore:          mcp.NewMemoryEventStore(nil),
		Logger:              s.log,
		SessionTimeout:      opts.SessionTimeout,
		MaxRequestBodyBytes: opts.MaxRequestBytes,
	})
	var mcpHandler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= firstStatelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
	// Every message is checked before the go-sdk reads it: see guardMessages.
	var authz func(*http.Request, []call) (*refusal, func(http.ResponseWriter))
	if st != nil {
		authz = s.httpScopeCheck(st)
	}
	mcpHandler = guardMessages(s.routeTasks(mcpHandler), opts.MaxRequestBytes, s.log, authz)
	switch {
	case st != nil:
		mcpHandler = s.requireOAuth(st, mcpHandler)
	case opts.Token != "":
		mcpHandler = requireBearer(opts.Token, mcpHandler)
	}
	mux.Handle(PathMCP, mcpHandler)
	if opts.Discovery != nil {
		mountDiscovery(mux, opts.Discovery)
	}
	// Extra handlers (/metrics) hold information about the tools and
	// their use: they take the same authentication as /mcp.
	for path, h := range opts.Extra {
		switch {
		case st != nil:
			h = s.requireOAuth(st, h)
		case opts.Token != "":
			h = requireBearer(opts.Token, h)
		}
		mux.Handle(path, h)
	}
	if opts.Console != nil {
		mux.Handle(opts.ConsolePath, opts.Console)
	}
	return mux
}

// routes is a mux that remembers its patterns.
type routes struct {
	*http.ServeMux
	patterns []string
}

func (m *routes) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m *routes) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// tokenPrincipal is the caller of a request bearing the static token.
var tokenPrincipal = principal.Principal{Subject: "token", Via: principal.ViaToken}

// requireBearer refuses requests without the token. The comparison takes the
// same time whatever the presented token, so the token cannot be guessed
// byte by byte from response times. The header goes no further (serveAs).
func requireBearer(token string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") ||
			subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="warden"`)
			http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
			return
		}
		serveAs(w, r, tokenPrincipal, next)
	})
}

// ListenAndServe listens on addr (host:port) and serves Handler(opts) until
// ctx ends. It refuses to start, with ErrTokenRequired, when addr is not a
// loopback address and neither opts.Token nor opts.OAuth is set, and when
// both are.
func (s *Server) ListenAndServe(ctx context.Context, addr string, opts HTTPOptions) error {
	if err := opts.checkAuth(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.ServeListener(ctx, ln, opts)
}

// ServeListener is ListenAndServe on an existing listener, which it closes.
// The same token rule applies, to the listener's actual address.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, opts HTTPOptions) error {
	if err := opts.checkAuth(ln.Addr().String()); err != nil {
		ln.Close()
		return err
	}
	opts.setDefaults()
	// Slow or idle clients cannot hold connections forever (header, body and
	// idle timeouts) nor crowd others out (the connection cap evicts them).
	// There is no overall read or write timeout: calls and event streams
	// take as long as they take.
	ln = newConnCap(ln, opts.MaxConnections, s.log)
	srv := &http.Server{
		Handler:           s.Handler(opts),
		ReadHeaderTimeout: opts.HeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		ConnContext:       connContext,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	s.log.Info("serving MCP over HTTP", "url", "http://"+ln.Addr().String()+PathMCP,
		"auth", opts.authName())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	// Streams stay open while calls run; give them a moment, then cut them.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	<-errc
	// Sessions outlive their connections; end those HTTP created (stdio's
	// session has no ID and is left alone).
	for ss := range s.sdk.Sessions() {
		if ss.ID() != "" {
			ss.Close()
		}
	}
	return nil
}

// checkAuth checks the authentication options for a listener on addr.
func (o *HTTPOptions) checkAuth(addr string) error {
	if o.OAuth != nil {
		if o.Token != "" {
			return errors.New("a bearer token and OAuth are both set: use one")
		}
		if err := o.OAuth.check(); err != nil {
			return err
		}
	}
	return checkExposure(addr, o.Token != "" || o.OAuth != nil)
}

func (o *HTTPOptions) authName() string {
	switch {
	case o.OAuth != nil:
		return "oauth"
	case o.Token != "":
		return "token"
	}
	return "none"
}

// checkExposure enforces the authentication rule: without authentication,
// only a loopback listener is allowed. An empty or unspecified host listens
// on every interface, which is not loopback.
func checkExposure(addr string, authenticated bool) error {
	if authenticated {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("http address %q: %w", addr, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%w: %s is reachable from other machines; set a token (serve --token, or the environment) or server.oauth, or bind to 127.0.0.1", ErrTokenRequired, addr)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
