package app

import (
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/mcpserver"
)

// headers is a RoundTripper adding fixed headers to every request.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// serveHTTP serves srv over loopback HTTP with opts until the test ends,
// and returns the /mcp URL.
func serveHTTP(t *testing.T, srv *mcpserver.Server, ln net.Listener, opts mcpserver.HTTPOptions) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeListener(ctx, ln, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	})
	return "http://" + ln.Addr().String() + mcpserver.PathMCP
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// callOver connects the go-sdk client to url with the headers h and calls
// hostcalls once with no arguments.
func callOver(t *testing.T, url string, h headers) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: h}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hostcalls", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("call over %s: %v %+v", url, err, res)
	}
}

// Over real HTTP, a call carrying a W3C traceparent is a child of the
// caller's span in the caller's trace; the audit line names the caller:
// the OAuth token's subject (via oauth), the static token (via token), and
// local on a session without HTTP (stdio).
func TestObserveOverHTTP(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, "    hostcalls: {fs: {read: [README.md]}, env: [HOME]}")
	w.app.SetRecorder(nil)

	spans, tracing, audit, auditPath := observeSinks(t, 64)
	rec := observe.New(observe.Options{Audit: audit, Tracing: tracing})
	w.app.SetRecorder(rec)
	defer w.app.SetRecorder(nil)
	// As cmd/warden's serve wires it (observability.apply).
	opts := w.app.ServerOptions(mcpserver.Options{Name: "warden", Version: "test", QueueWaited: rec.QueueWaited, CallContext: tracing.Extract})

	// The static token, with a traceparent.
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tokenSrv := mcpserver.New(w.app, opts)
	defer tokenSrv.Close()
	url := serveHTTP(t, tokenSrv, listen(t), mcpserver.HTTPOptions{Token: "s3cret"})
	callOver(t, url, headers{"Authorization": "Bearer s3cret", "traceparent": "00-" + traceID + "-" + parentID + "-01"})

	// OAuth: the token's subject.
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.RS256, "rsa-1")
	ln := listen(t)
	resource := "http://" + ln.Addr().String() + mcpserver.PathMCP
	v, err := oauth.New(oauth.Options{Resource: resource, Issuers: []oauth.Issuer{{Issuer: is.URL, JWKSURL: is.JWKSURL()}}, ClockSkew: time.Minute, RefreshMin: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	oauthSrv := mcpserver.New(w.app, opts)
	defer oauthSrv.Close()
	url = serveHTTP(t, oauthSrv, ln, mcpserver.HTTPOptions{OAuth: &mcpserver.OAuthOptions{
		Resource: resource, AuthorizationServers: []string{is.URL}, Verify: v.VerifyPrincipal,
	}})
	token := is.Sign(t, "rsa-1", is.Claims(resource, "alice@example.com", time.Now(), "mcp"))
	callOver(t, url, headers{"Authorization": "Bearer " + token})

	// A session without HTTP, as stdio serves it.
	localSrv := mcpserver.New(w.app, opts)
	defer localSrv.Close()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- localSrv.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("local call: %v %+v", err, res)
	}
	cs.Close()
	cancel()
	<-served

	w.app.SetRecorder(nil)
	if err := audit.Close(); err != nil {
		t.Fatal(err)
	}
	var calls []auditFields
	for _, l := range readAudit(t, auditPath) {
		if l.Event == "call" {
			l.Session = ""
			calls = append(calls, l)
		}
	}
	call := func(who, via string) auditFields {
		return auditFields{Who: who, Via: via, Tool: "hostcalls", Module: "hostcalls", Event: "call", Decision: "allow", Kind: "ok"}
	}
	wantAudit(t, calls, []auditFields{call("token", "token"), call("alice@example.com", "oauth"), call("local", "local")})

	// The first call's span is in the caller's trace, a child of its span.
	if err := tracing.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	type callSpan struct{ trace, parent string }
	var got []callSpan
	for len(spans) > 0 {
		for _, rs := range (<-spans).ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					if s.Name == "warden.call hostcalls" {
						got = append(got, callSpan{hex.EncodeToString(s.TraceId), hex.EncodeToString(s.ParentSpanId)})
					}
				}
			}
		}
	}
	if len(got) != 3 {
		t.Fatalf("%d call spans, want 3: %+v", len(got), got)
	}
	if got[0] != (callSpan{traceID, parentID}) {
		t.Errorf("the call with a traceparent: trace %s parent %s, want %s %s", got[0].trace, got[0].parent, traceID, parentID)
	}
	for _, s := range got[1:] {
		if s.trace == traceID || s.parent != "" {
			t.Errorf("a call without a traceparent joined a trace: %+v", s)
		}
	}
}
