package mcpserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configures serving over streamable HTTP.
type HTTPOptions struct {
	// Token, when set, must accompany every request to /mcp as
	// "Authorization: Bearer <Token>". It is required for any listener that
	// is not on a loopback address.
	Token string
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
}

// Defaults of HTTPOptions.
const (
	DefaultSessionTimeout = time.Hour
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultBodyTimeout    = 30 * time.Second
	DefaultIdleTimeout    = 2 * time.Minute
	DefaultMaxConnections = 256
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
// without a bearer token.
var ErrTokenRequired = errors.New("a bearer token is required to serve MCP on a non-loopback address")

// Handler returns the HTTP handler for /mcp (streamable HTTP) and /healthz.
//
// Requests at protocol 2026-07-28 or later are served statelessly, as that
// protocol requires; older ones get 2025-11-25-style sessions (Mcp-Session-Id).
// The go-sdk serves either kind but not both from one handler, so the request's
// Mcp-Protocol-Version header picks one of two handlers over the same server.
// DNS-rebinding protection is on: a request that reached a loopback address
// with a Host header naming anything but a loopback host is refused (403).
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	opts.setDefaults()
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
	mcpHandler = guardMessages(mcpHandler, opts.MaxRequestBytes, s.log)
	// Browsers are the one client that can be made to send requests it was
	// not asked to; a cross-site browser request to a local server is refused.
	mcpHandler = http.NewCrossOriginProtection().Handler(mcpHandler)
	if opts.Token != "" {
		mcpHandler = requireBearer(opts.Token, mcpHandler)
	}

	mux := http.NewServeMux()
	mux.Handle(PathMCP, mcpHandler)
	mux.HandleFunc(PathHealthz, s.healthz)
	for path, h := range opts.Extra {
		if opts.Token != "" {
			h = requireBearer(opts.Token, h)
		}
		mux.Handle(path, h)
	}
	return paceRequests(mux, opts.BodyTimeout)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.syncMu.Lock()
	n := len(s.registered)
	s.syncMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	// refused: tools not served because several modules describe the name.
	health := map[string]any{"status": "ok", "tools": n, "refused": nonNil(s.refused())}
	if r, ok := s.tools.(StatsReporter); ok {
		for k, v := range r.Stats() {
			if _, taken := health[k]; !taken {
				health[k] = v
			}
		}
	}
	json.NewEncoder(w).Encode(health)
}

// requireBearer refuses requests without the token. The comparison takes the
// same time whatever the presented token, so the token cannot be guessed
// byte by byte from response times.
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
		next.ServeHTTP(w, r)
	})
}

// ListenAndServe listens on addr (host:port) and serves Handler(opts) until
// ctx ends. It refuses to start, with ErrTokenRequired, when addr is not a
// loopback address and opts.Token is empty.
func (s *Server) ListenAndServe(ctx context.Context, addr string, opts HTTPOptions) error {
	if err := checkExposure(addr, opts.Token); err != nil {
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
	if err := checkExposure(ln.Addr().String(), opts.Token); err != nil {
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
		"auth", opts.Token != "")
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

// checkExposure enforces the token rule: without a token, only a loopback
// listener is allowed. An empty or unspecified host listens on every
// interface, which is not loopback.
func checkExposure(addr, token string) error {
	if token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("http address %q: %w", addr, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%w: %s is reachable from other machines; set a token (serve --token, or the environment), or bind to 127.0.0.1", ErrTokenRequired, addr)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
