package net

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	stdnet "net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/tool"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxResponseBytes = limits.DefaultNetMaxResponse
	DefaultTimeout          = limits.DefaultNetTimeout
	DefaultMaxRedirects     = 10
)

// Config is the net capability's configuration.
type Config struct {
	// MaxResponseBytes bounds a response body; the rest is dropped and the
	// reply says truncated. 0 means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// Timeout bounds one request, redirects and body included; a request's
	// timeoutMs and the call's deadline may only shorten it. 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxRedirects bounds the redirects followed. 0 means DefaultMaxRedirects.
	MaxRedirects int
}

func (c Config) withDefaults() (Config, error) {
	if c.MaxResponseBytes < 0 || c.Timeout < 0 || c.MaxRedirects < 0 {
		return c, fmt.Errorf("net: limits must not be negative: %+v", c)
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRedirects == 0 {
		c.MaxRedirects = DefaultMaxRedirects
	}
	return c, nil
}

// Net is the warden.net capability.
type Net struct {
	config atomic.Pointer[Config]
	logger *slog.Logger
	// lookup resolves a host name; tests replace it to play DNS.
	lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// connecting, when set, is told of every connection about to be made,
	// after the guard allowed it; tests use it to prove refused addresses
	// were never dialed.
	connecting func(netip.AddrPort)
}

// New returns the capability for cfg. logger receives a debug line per
// request (tool, method, URL without its query, status) and an info line
// per denial; nil discards them.
func New(cfg Config, logger *slog.Logger) (*Net, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	n := &Net{logger: logger, lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		return stdnet.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}}
	if err := n.SetConfig(cfg); err != nil {
		return nil, err
	}
	return n, nil
}

// SetConfig replaces the configuration. Requests already running finish
// under the old one. An invalid cfg changes nothing.
func (n *Net) SetConfig(cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	n.config.Store(&cfg)
	return nil
}

// Name returns "net".
func (n *Net) Name() string { return "net" }

type request struct {
	Op         string            `json:"op"`
	Method     string            `json:"method"`
	URL        string            `json:"url"`
	Headers    map[string]string `json:"headers"`
	Body       *string           `json:"body"`
	BodyBase64 *string           `json:"bodyBase64"`
	TimeoutMs  int64             `json:"timeoutMs"`

	target target
	url    *url.URL
	body   []byte
}

type reply struct {
	Status     int                 `json:"status"`
	StatusText string              `json:"statusText"`
	URL        string              `json:"url"`
	Headers    map[string][]string `json:"headers"`
	Body       *string             `json:"body,omitempty"`
	BodyBase64 *string             `json:"bodyBase64,omitempty"`
	Truncated  bool                `json:"truncated,omitempty"`
}

// Serve handles one warden.net request.
func (n *Net) Serve(ctx context.Context, call *hostfuncs.Call, raw []byte) (any, error) {
	req, decodeErr := decode(raw)
	grants, err := gate(call, req)
	if err != nil {
		n.logger.Info("net denied", "tool", call.Tool, "reason", err)
		return nil, err
	}
	if decodeErr != nil {
		return nil, decodeErr
	}
	cfg := n.config.Load()
	timeout := cfg.Timeout
	if req.TimeoutMs > 0 {
		timeout = min(timeout, time.Duration(req.TimeoutMs)*time.Millisecond)
	}
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	out, err := n.do(reqCtx, call, grants, cfg, req)
	if err != nil {
		err = classify(ctx, reqCtx, req, timeout, err)
		if tool.KindOf(err) == tool.KindDenied {
			n.logger.Info("net denied", "tool", call.Tool, "reason", err)
		}
		return nil, err
	}
	n.logger.Debug("net", "tool", call.Tool, "method", req.Method, "url", redact(req.url), "status", out.Status, "truncated", out.Truncated)
	return out, nil
}

// do performs the request on a transport of its own: connections are never
// shared between calls, because whether a connection may exist depends on
// the calling tool's grants.
func (n *Net) do(ctx context.Context, call *hostfuncs.Call, grants []grant, cfg *Config, req *request) (*reply, error) {
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would make the guard check the proxy's address
		DialContext:            n.dialer(call, grants),
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) > cfg.MaxRedirects {
				return tool.Errorf(tool.KindFailed, "net: stopped after %d redirects", cfg.MaxRedirects)
			}
			t, err := parseTarget(next.URL)
			if err != nil {
				return tool.Errorf(tool.KindFailed, "net: redirect to an unusable URL: %v", err)
			}
			if !allowed(grants, t) {
				return denyTarget(call.Tool, t, "redirect")
			}
			return nil
		},
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, req.url.String(), bytes.NewReader(req.body))
	if err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "net: %v", err)
	}
	for k, v := range req.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, cfg.MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	out := &reply{
		Status:     resp.StatusCode,
		StatusText: http.StatusText(resp.StatusCode),
		URL:        resp.Request.URL.String(),
		Headers:    resp.Header,
	}
	if int64(len(body)) > cfg.MaxResponseBytes {
		body, out.Truncated = body[:cfg.MaxResponseBytes], true
		// Do not let the cut turn text into binary.
		if !utf8.Valid(body) {
			if trimmed := trimPartialRune(body); utf8.Valid(trimmed) {
				body = trimmed
			}
		}
	}
	if utf8.Valid(body) {
		s := string(body)
		out.Body = &s
	} else {
		s := base64.StdEncoding.EncodeToString(body)
		out.BodyBase64 = &s
	}
	return out, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

// dialer returns the transport's DialContext: the SSRF guard. It resolves
// the host itself and connects to the resolved addresses one by one; each
// address is checked before the socket is made, and again in the dialer's
// Control hook, which sees the exact address the socket is about to connect
// to. Checking at dial time, not when the URL is checked, is what keeps
// DNS rebinding from turning a granted name into a private address.
func (n *Net) dialer(call *hostfuncs.Call, grants []grant) func(ctx context.Context, network, address string) (stdnet.Conn, error) {
	return func(ctx context.Context, network, address string) (stdnet.Conn, error) {
		host, portText, err := stdnet.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		port64, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("bad port in %q: %w", address, err)
		}
		port := uint16(port64)
		host = normalizeHost(host)
		var addrs []netip.Addr
		if addr, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{addr}
		} else if addrs, err = n.lookup(ctx, host); err != nil {
			return nil, err
		}
		var firstErr error
		for _, addr := range addrs {
			if err := checkAddr(call.Tool, grants, host, port, addr); err != nil {
				firstErr = cmpErr(firstErr, err)
				continue
			}
			d := stdnet.Dialer{Control: func(_, address string, _ syscall.RawConn) error {
				ap, err := netip.ParseAddrPort(address)
				if err != nil {
					return fmt.Errorf("bad dial address %q: %w", address, err)
				}
				if err := checkAddr(call.Tool, grants, host, ap.Port(), ap.Addr()); err != nil {
					return err
				}
				if n.connecting != nil {
					n.connecting(ap)
				}
				return nil
			}}
			conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(addr.Unmap(), port).String())
			if err == nil {
				return conn, nil
			}
			firstErr = cmpErr(firstErr, err)
			if ctx.Err() != nil {
				break
			}
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("no addresses for %s", host)
		}
		return nil, firstErr
	}
}

// cmpErr keeps the first error, except that a denial wins over anything
// else: "private address" explains a failure better than the connection
// error of the next address.
func cmpErr(first, next error) error {
	if first == nil || tool.KindOf(next) == tool.KindDenied && tool.KindOf(first) != tool.KindDenied {
		return next
	}
	return first
}

// checkAddr is the SSRF guard: public addresses are allowed; any other
// only when a grant for this host and port says so explicitly.
func checkAddr(toolName string, grants []grant, host string, port uint16, addr netip.Addr) error {
	addr = addr.Unmap()
	if public(addr) {
		return nil
	}
	for i := range grants {
		g := &grants[i]
		if !g.private || orDefault(g.port, defaultPort(g.scheme)) != port {
			continue
		}
		switch {
		case g.addr.IsValid():
			// Only for the literal itself: a name that resolves to the
			// address would reach it with another Host header, which a
			// local reverse proxy may route elsewhere.
			if h, err := netip.ParseAddr(host); err == nil && h.Unmap() == g.addr && addr == g.addr {
				return nil
			}
		case g.host == "localhost":
			if host == "localhost" && addr.IsLoopback() {
				return nil
			}
		case g.host == host:
			return nil
		}
	}
	suggest := strconv.Quote(host + " private")
	if h, err := netip.ParseAddr(host); err == nil {
		suggest = strconv.Quote(stdnet.JoinHostPort(h.String(), strconv.Itoa(int(port))))
	}
	return tool.Errorf(tool.KindDenied,
		"net: tool %q may not connect to %s for host %q: not a public address (config key tools.grants.%s.net, e.g. %s)",
		toolName, addr, host, toolName, suggest)
}

func allowed(grants []grant, t target) bool {
	for i := range grants {
		if grants[i].matches(t) {
			return true
		}
	}
	return false
}

// targetEntry is the grant entry that allows exactly t's scheme, host
// and port. An IP literal is written in its canonical form, so that a URL
// host such as [::ffff:10.0.0.7] yields an entry config accepts (10.0.0.7).
func targetEntry(t target) string {
	host := t.host
	switch {
	case t.addr.Is6():
		host = "[" + t.addr.String() + "]"
	case t.addr.IsValid():
		host = t.addr.String()
	}
	entry := t.scheme + "://" + host
	if t.port != defaultPort(t.scheme) {
		entry += ":" + strconv.Itoa(int(t.port))
	}
	return entry
}

func denyTarget(toolName string, t target, what string) error {
	host := t.host
	if t.addr.Is6() {
		host = "[" + host + "]"
	}
	entry := targetEntry(t)
	return tool.DeniedFor(tool.Need{Key: "net", Value: entry}, "net: %s to host %q is not granted to tool %q (config key tools.grants.%s.net, e.g. %q)",
		what, host, toolName, toolName, entry)
}

// decode parses and checks a request without touching anything.
func decode(raw []byte) (*request, error) {
	var req request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "net: bad request: %v", err)
	}
	if dec.More() {
		return nil, tool.Errorf(tool.KindInvalidArguments, "net: bad request: trailing data after the JSON object")
	}
	invalid := func(format string, args ...any) (*request, error) {
		return nil, tool.Errorf(tool.KindInvalidArguments, "net: "+format, args...)
	}
	if req.Op != "request" {
		return invalid("unknown op %q (want request)", req.Op)
	}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		return invalid("method %q: want GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS", req.Method)
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return invalid("url: %v", err)
	}
	if req.target, err = parseTarget(u); err != nil {
		return invalid("url: %v", err)
	}
	u.Fragment, u.RawFragment = "", ""
	req.url = u
	if req.TimeoutMs < 0 {
		return invalid("timeoutMs must not be negative")
	}
	switch {
	case req.Body != nil && req.BodyBase64 != nil:
		return invalid("set body or bodyBase64, not both")
	case req.Body != nil:
		req.body = []byte(*req.Body)
	case req.BodyBase64 != nil:
		if req.body, err = base64.StdEncoding.DecodeString(*req.BodyBase64); err != nil {
			return invalid("bodyBase64: %v", err)
		}
	}
	for k, v := range req.Headers {
		if err := checkHeader(k, v); err != nil {
			return invalid("header %q: %v", k, err)
		}
	}
	return &req, nil
}

// reservedHeaders are set by the transport from the request itself; a
// guest setting them could desynchronize the request (smuggling) or talk
// to a proxy.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true,
	"Proxy-Authorization": true, "Proxy-Connection": true,
}

func checkHeader(name, value string) error {
	if name == "" {
		return errors.New("empty name")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return errors.New("not a valid header name")
		}
	}
	if reservedHeaders[http.CanonicalHeaderKey(name)] {
		return errors.New("is set by warden")
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return errors.New("value contains CR, LF or NUL")
	}
	return nil
}

// gate is the capability's one permission check, run before anything is
// touched: the tool must have a net grant, and the request's URL must match
// one of its entries. It returns the parsed grants, which the redirect
// check and the dial-time guard go on enforcing. req is nil when the
// request did not decode; then only the presence of a grant is checked.
func gate(call *hostfuncs.Call, req *request) ([]grant, error) {
	var grants []grant
	for _, entry := range call.Grants.Net {
		if g, err := parseGrant(entry); err == nil {
			grants = append(grants, g)
		}
	}
	if len(grants) == 0 {
		if req != nil {
			entry := targetEntry(req.target)
			host := req.target.host
			if req.target.addr.Is6() {
				host = "[" + host + "]"
			}
			return nil, tool.DeniedFor(tool.Need{Key: "net", Value: entry},
				"net: request to host %q is not granted to tool %q: it has no net grant (config key tools.grants.%[2]s.net, e.g. %[3]q)", host, call.Tool, entry)
		}
		return nil, tool.Errorf(tool.KindDenied, "net: tool %q has no net grant (config key tools.grants.%[1]s.net)", call.Tool)
	}
	if req != nil && !allowed(grants, req.target) {
		return nil, denyTarget(call.Tool, req.target, "request")
	}
	return grants, nil
}

// classify turns a failed request into a tool error. Denials from the
// redirect check and the dial guard arrive wrapped by net/http; they are
// passed on as they are.
func classify(callCtx, reqCtx context.Context, req *request, timeout time.Duration, err error) error {
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(callCtx.Err(), context.Canceled):
		return tool.Errorf(tool.KindCancelled, "net: %s %s: call cancelled", req.Method, req.target.host)
	case callCtx.Err() != nil:
		return tool.Errorf(tool.KindTimeout, "net: %s %s: call deadline passed", req.Method, req.target.host)
	case reqCtx.Err() != nil:
		return tool.Errorf(tool.KindTimeout, "net: %s %s: no complete response within %v", req.Method, req.target.host, timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its message repeats the URL, query and all
	}
	return tool.Errorf(tool.KindFailed, "net: %s %s: %v", req.Method, req.target.host, err)
}

// redact renders u for logs without its query, which often carries tokens.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.ForceQuery = "", false
	c.User = nil
	return c.String()
}
