package mcpserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/termsafe"
)

// guardMessages checks every POST body before the go-sdk reads it, as
// [GuardedTransport] checks stdio lines: a body that is not one valid
// JSON-RPC message (or batch) gets a JSON-RPC error with the client's id as
// written, a body over maxBytes gets 413, and a call whose id is already in
// flight in the same session gets 409. When authz is set, it may refuse the
// calls (an OAuth token lacking a tool's scope: 403, its headers set by the
// returned function). The go-sdk then reads the same bytes.
func guardMessages(next http.Handler, maxBytes int64, log *slog.Logger,
	authz func(*http.Request, []call) (*refusal, func(http.ResponseWriter))) http.Handler {
	var inFlight sessionCalls
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe):
				refuseHTTP(w, log, http.StatusRequestEntityTooLarge, &refusal{code: jsonrpc.CodeInvalidRequest,
					message: fmt.Sprintf("invalid request: body exceeds the %d-byte bound (server.max_message); it was not read", maxBytes),
					id:      salvageID(body)})
			case errors.Is(err, os.ErrDeadlineExceeded):
				refuseHTTP(w, log, http.StatusRequestTimeout, &refusal{code: jsonrpc.CodeInvalidRequest,
					message: fmt.Sprintf("invalid request: body not received in time (server.body_timeout); %d bytes arrived", len(body)),
					id:      salvageID(body)})
			default:
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			}
			return
		}
		calls, ref := inspect(body)
		if ref != nil {
			refuseHTTP(w, log, http.StatusBadRequest, ref)
			return
		}
		if authz != nil {
			if ref, headers := authz(r, calls); ref != nil {
				headers(w)
				refuseHTTP(w, log, http.StatusForbidden, ref)
				return
			}
		}
		// Stateless requests have no session, and so no other request their
		// ids could be confused with.
		if session := r.Header.Get("Mcp-Session-Id"); session != "" && len(calls) > 0 {
			if dup := inFlight.begin(session, calls); dup != nil {
				refuseHTTP(w, log, http.StatusConflict, dup)
				return
			}
			a := &answering{ResponseWriter: w, inFlight: &inFlight, session: session, calls: calls,
				freed: make([]bool, len(calls)), pending: len(calls)}
			// Only the ids the POST still holds: one its reply freed may be
			// another POST's by now.
			defer func() { inFlight.end(session, a.held()) }()
			w = a
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func refuseHTTP(w http.ResponseWriter, log *slog.Logger, status int, r *refusal) {
	log.Warn("refused a client message", "status", status, "code", r.code, "id", string(orNull(r.id)), "reason", r.message)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(r.response())
}

// sessionCalls holds the ids in flight in each session; a session's entry
// exists while one of its POSTs is being served.
type sessionCalls struct {
	mu   sync.Mutex
	byID map[string]map[string]bool
}

func (s *sessionCalls) begin(session string, calls []call) *refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byID[session]
	for _, c := range calls {
		if ids[c.key] {
			id := c.raw
			if len(calls) > 1 {
				id = nil
			}
			return invalidRequest(id, "id %s is already in use by a request of this session that has not been answered yet", clip(c.raw))
		}
	}
	if ids == nil {
		if s.byID == nil {
			s.byID = make(map[string]map[string]bool)
		}
		ids = make(map[string]bool)
		s.byID[session] = ids
	}
	for _, c := range calls {
		ids[c.key] = true
	}
	return nil
}

func (s *sessionCalls) end(session string, calls []call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byID[session]
	for _, c := range calls {
		delete(ids, c.key)
	}
	if len(ids) == 0 {
		delete(s.byID, session)
	}
}

// answered ends the call with key in session if it is in flight, and
// reports whether it was.
func (s *sessionCalls) answered(session, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.byID[session]
	if !ids[key] {
		return false
	}
	delete(ids, key)
	if len(ids) == 0 {
		delete(s.byID, session)
	}
	return true
}

// answering ends each call of a POST in flight as its reply is written,
// before the client can read it, as the stdio guard does: the POST's
// handler returns only after the reply is written and flushed, and a
// client that reuses the id as soon as it has read the reply would
// otherwise be refused (409) in that window. Every event the go-sdk writes
// (an SSE event, or a JSON body) is one Write; the deferred end of the
// POST's calls still covers a reply this does not recognise.
type answering struct {
	http.ResponseWriter
	inFlight *sessionCalls
	session  string
	calls    []call // the POST's
	freed    []bool // calls[i]'s id was freed by its reply: no longer the POST's
	pending  int    // calls of the POST not seen answered
}

func (a *answering) Write(p []byte) (int, error) {
	if a.pending > 0 {
		for _, msg := range sentMessages(p) {
			env := scanEnvelope(msg)
			if env.method || env.ids != 1 {
				continue // a request or notification of the server's, or no reply
			}
			key, ref := idKey(env.id)
			if ref != nil {
				continue
			}
			i := slices.IndexFunc(a.calls, func(c call) bool { return c.key == key })
			if i >= 0 && !a.freed[i] && a.inFlight.answered(a.session, key) {
				a.freed[i] = true
				a.pending--
			}
		}
	}
	return a.ResponseWriter.Write(p)
}

// held returns the calls whose ids the POST still holds.
func (a *answering) held() []call {
	if a.pending == len(a.calls) {
		return a.calls
	}
	held := make([]call, 0, a.pending)
	for i, c := range a.calls {
		if !a.freed[i] {
			held = append(held, c)
		}
	}
	return held
}

// Unwrap lets http.ResponseController reach the connection's flusher.
func (a *answering) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// sentMessages returns the JSON-RPC objects in one write of a response: the
// data of each SSE event in it, or the body itself when it is a JSON
// object. (A batch's replies are left to the POST's end.)
func sentMessages(p []byte) [][]byte {
	if b := bytes.TrimSpace(p); len(b) > 0 && b[0] == '{' {
		return [][]byte{b}
	}
	var out [][]byte
	for line := range bytes.Lines(p) {
		if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data = bytes.TrimSpace(data); len(data) > 0 && data[0] == '{' {
				out = append(out, data)
			}
		}
	}
	return out
}

// connCap caps the open connections of a listener. At the cap, a new
// connection evicts the connection that has been waiting longest without a
// complete request in progress (one still sending its headers or body, or
// idle between requests); connections running a call are never evicted.
// When none is left to evict, the connection whose only requests are event
// streams (GET) that opened first goes: a client re-opens its stream (with
// Last-Event-ID), while an unbounded set of streams would let a client hold
// every slot. Only when every connection runs a call is the new connection
// closed instead.
//
// Evicting rather than refusing keeps the server reachable under a flood of
// slow or idle connections: each new client takes the place of the stalest
// one, and /healthz and live sessions keep being served.
type connCap struct {
	net.Listener
	max int
	log *slog.Logger

	mu      sync.Mutex
	conns   map[*cappedConn]struct{}
	seq     uint64 // orders connections by when they last became evictable
	evicted atomic.Int64
	refused atomic.Int64
}

func newConnCap(ln net.Listener, max int, log *slog.Logger) *connCap {
	return &connCap{Listener: ln, max: max, log: log, conns: make(map[*cappedConn]struct{})}
}

func (l *connCap) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if len(l.conns) >= l.max {
			victim := l.stalest()
			if victim == nil {
				victim = l.oldestStream()
			}
			if victim == nil {
				l.mu.Unlock()
				n := l.refused.Add(1)
				l.log.Warn("connection refused: every connection is serving a request", "max_connections", l.max, "refused_total", n)
				c.Close()
				continue
			}
			delete(l.conns, victim)
			n := l.evicted.Add(1)
			l.log.Warn("connection evicted to make room: it had no complete request in progress",
				"remote", victim.RemoteAddr().String(), "max_connections", l.max, "evicted_total", n)
			victim.Conn.Close()
		}
		tc := &cappedConn{Conn: c, cap: l, since: l.nextSeq()}
		l.conns[tc] = struct{}{}
		l.mu.Unlock()
		return tc, nil
	}
}

// stalest returns the evictable connection that became so first; l.mu held.
func (l *connCap) stalest() *cappedConn {
	var victim *cappedConn
	for c := range l.conns {
		if c.serving == 0 && (victim == nil || c.since < victim.since) {
			victim = c
		}
	}
	return victim
}

// oldestStream returns the connection serving only event streams whose
// stream opened first; l.mu held.
func (l *connCap) oldestStream() *cappedConn {
	var victim *cappedConn
	for c := range l.conns {
		if c.serving > 0 && c.serving == c.streams && (victim == nil || c.streamSince < victim.streamSince) {
			victim = c
		}
	}
	return victim
}

func (l *connCap) nextSeq() uint64 {
	l.seq++
	return l.seq
}

// cappedConn is one connection counted by a connCap.
type cappedConn struct {
	net.Conn
	cap     *connCap
	serving int    // complete requests being served; guarded by cap.mu
	since   uint64 // when it last became evictable; guarded by cap.mu
	// streams counts the requests among serving that are event streams,
	// streamSince when the first of them opened; guarded by cap.mu.
	streams     int
	streamSince uint64
	once        sync.Once
}

func (c *cappedConn) Close() error {
	c.once.Do(func() {
		c.cap.mu.Lock()
		delete(c.cap.conns, c)
		c.cap.mu.Unlock()
	})
	return c.Conn.Close()
}

// serve marks a complete request in progress on c until the returned
// function is called; stream says it is an event stream (GET).
func (c *cappedConn) serve(stream bool) (done func()) {
	c.cap.mu.Lock()
	c.serving++
	if stream {
		if c.streams == 0 {
			c.streamSince = c.cap.nextSeq()
		}
		c.streams++
	}
	c.cap.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.cap.mu.Lock()
			c.serving--
			if stream {
				c.streams--
			}
			if c.serving == 0 {
				c.since = c.cap.nextSeq()
			}
			c.cap.mu.Unlock()
		})
	}
}

type connKey struct{}

// connContext is http.Server.ConnContext: it lets handlers find their
// connection's bookkeeping.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*cappedConn); ok {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// paceRequests bounds how long a request body may take to arrive
// (bodyTimeout, from the end of the headers to the body's last byte) and
// tells the connection cap when a request is complete. A request without a
// body is complete at once; an event stream (GET) then stays open as long as
// it needs.
func paceRequests(next http.Handler, bodyTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc, _ := r.Context().Value(connKey{}).(*cappedConn)
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			if cc != nil {
				defer cc.serve(r.Method == http.MethodGet)()
			}
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		if bodyTimeout > 0 {
			// A connection whose deadline cannot be set is not a TCP one
			// (a test recorder); nothing to time out there.
			_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout))
		}
		body := &completion{ReadCloser: r.Body}
		body.onEOF = func() {
			if bodyTimeout > 0 {
				_ = rc.SetReadDeadline(time.Time{})
			}
			if cc != nil {
				body.done = cc.serve(false)
			}
		}
		r.Body = body
		defer func() {
			if body.done != nil {
				body.done()
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// completion calls onEOF once, when the body has been read to its end.
type completion struct {
	io.ReadCloser
	onEOF func()
	once  sync.Once
	done  func()
}

func (c *completion) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if err == io.EOF {
		c.once.Do(c.onEOF)
	}
	return n, err
}

// GuardOrigin refuses, with 403 and before next runs, the two kinds of
// request a browser can be made to send to a server on this machine:
//
//   - DNS rebinding: a request that reached a loopback address with a Host
//     header naming anything but a loopback host (a page on evil.example
//     whose name now resolves to 127.0.0.1). The go-sdk refuses these on
//     /mcp only; here every endpoint does, /healthz and /metrics included,
//     since they name the tools and count their use.
//   - a cross-site browser request (http.CrossOriginProtection: by
//     Sec-Fetch-Site, else Origin against Host) that is not GET, HEAD or
//     OPTIONS.
//
// Handler wraps its whole mux in it; serve wraps the separate metrics
// listener (server.metrics_addr) in it too. A refusal names the Host or
// Origin refused and what is served instead; it says nothing about the
// tools.
func GuardOrigin(next http.Handler, log *slog.Logger) http.Handler {
	cross := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil &&
			isLoopbackAddr(local.String()) && !isLoopbackAddr(r.Host) {
			msg := fmt.Sprintf("forbidden: Host \"%s\" is not a loopback name, and this request reached the loopback address %s "+
				"(DNS-rebinding protection; no setting turns it off). Ask http://%s%s (or localhost or [::1] with that port); "+
				"a proxy on this machine must send one of these as Host",
				termsafe.Line(r.Host), local, local, termsafe.Line(r.URL.Path))
			log.Warn("refused an HTTP request: DNS-rebinding protection", "path", termsafe.Line(r.URL.Path),
				"host", termsafe.Line(r.Host), "local", local.String())
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		if err := cross.Check(r); err != nil {
			origin := termsafe.Line(r.Header.Get("Origin"))
			msg := fmt.Sprintf("forbidden: a cross-origin browser request (Origin \"%s\", Sec-Fetch-Site \"%s\") to %s: %v; "+
				"warden serves MCP clients, not web pages, and no setting allows this",
				origin, termsafe.Line(r.Header.Get("Sec-Fetch-Site")), termsafe.Line(r.URL.Path), err)
			log.Warn("refused an HTTP request: cross-origin", "path", termsafe.Line(r.URL.Path), "origin", origin)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isLoopbackAddr reports whether addr, a host or host:port, names a
// loopback address or localhost.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr // no port
	}
	return isLoopbackHost(host)
}
