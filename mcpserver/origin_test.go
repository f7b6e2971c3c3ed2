package mcpserver

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/principal"
)

// endpointOptions are HTTPOptions under which routes registers every
// endpoint it has: OAuth (the metadata) and an extra handler that, like
// /metrics, names the tools.
func endpointOptions(tools []string) HTTPOptions {
	verify := func(context.Context, string) (principal.Principal, error) {
		return principal.Principal{}, errors.New("no token is valid in this test")
	}
	return HTTPOptions{
		OAuth: &OAuthOptions{Resource: "https://w.example.com/mcp", AuthorizationServers: []string{"https://idp.example.com"}, Verify: verify},
		Extra: map[string]http.Handler{"/metrics": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "calls_total{tool=\""+strings.Join(tools, "\"} 1\ncalls_total{tool=\"")+"\"} 1\n")
		})},
		// The console's mount is behind the same guard (its own login
		// aside).
		Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "console page naming "+strings.Join(tools, ", "))
		}),
		ConsolePath: "/console/",
	}
}

// endpointPaths lists a request path for each pattern routes registered
// (a subtree pattern gets a path inside it), and one no pattern serves.
func endpointPaths(t *testing.T, s *Server, opts HTTPOptions) []string {
	t.Helper()
	mux := s.routes(opts)
	var paths []string
	for _, p := range mux.patterns {
		if _, path, ok := strings.Cut(p, " "); ok { // "GET /x"
			p = path
		}
		if strings.HasSuffix(p, "/") {
			p += "oauth-protected-resource/mcp"
		}
		paths = append(paths, p)
	}
	for _, want := range []string{PathMCP, PathHealthz, "/metrics", PathProtectedResource + "/mcp"} {
		found := false
		for _, p := range paths {
			found = found || p == want
		}
		if !found {
			t.Fatalf("routes registered %v: no %s", mux.patterns, want)
		}
	}
	return append(paths, "/not-served")
}

// TestEveryEndpointRefusesRebinding: every path Handler serves (enumerated
// from the mux, so a new endpoint is covered without editing this test),
// and a path it does not serve, refuses a request that reached the
// loopback listener with a Host naming another host: 403 whatever the
// method, a body that names the Host refused and no tool, and the server
// keeps serving the same request with a loopback Host.
func TestEveryEndpointRefusesRebinding(t *testing.T) {
	tools := []string{"secret-tool-alpha", "secret-tool-beta"}
	s, logs := newServer(t, newFakeTools(desc(tools[0]), desc(tools[1])), Options{})
	opts := endpointOptions(tools)
	hs := httptest.NewServer(s.Handler(opts))
	defer hs.Close()
	send := func(method, path, host string, header http.Header) (int, string) {
		req, err := http.NewRequest(method, hs.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for k, v := range header {
			req.Header[k] = v
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	paths := endpointPaths(t, s, opts)
	local := strings.TrimPrefix(hs.URL, "http://")
	for _, path := range paths {
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodHead} {
			for _, host := range []string{"evil.example", "evil.example:80", "localhost.evil.example", "127.0.0.1.nip.io"} {
				code, body := send(method, path, host, nil)
				if code != http.StatusForbidden {
					t.Errorf("%s %s Host %s: %d, want 403: %s", method, path, host, code, body)
					continue
				}
				if method != http.MethodHead && (!strings.Contains(body, `Host "`+host+`" is not a loopback name`) ||
					!strings.Contains(body, "DNS-rebinding protection") || !strings.Contains(body, "http://"+local+path)) {
					t.Errorf("%s %s Host %s: the refusal does not say what was refused and what to ask: %s", method, path, host, body)
				}
				for _, name := range tools {
					if strings.Contains(body, name) {
						t.Errorf("%s %s Host %s: the refusal names tool %s: %s", method, path, host, name, body)
					}
				}
			}
		}
		// The same request with a loopback Host reaches the endpoint.
		for _, host := range []string{local, "localhost", "[::1]:1"} {
			if code, body := send(http.MethodGet, path, host, nil); strings.Contains(body, "DNS-rebinding") {
				t.Errorf("GET %s Host %s: %d %s, want it served", path, host, code, body)
			}
		}
	}
	if code, body := send(http.MethodGet, "/metrics", local, nil); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a loopback Host and no token: %d %s, want 401 (OAuth)", code, body)
	}
	if code, body := send(http.MethodGet, PathHealthz, local, nil); code != http.StatusOK || !strings.Contains(body, `"tools":2`) {
		t.Errorf("GET /healthz after the refusals: %d %s", code, body)
	}
	if !strings.Contains(logs.String(), "DNS-rebinding protection") {
		t.Errorf("the refusals were not logged:\n%s", logs)
	}
}

// TestEveryEndpointRefusesCrossOrigin: a cross-site browser POST is
// refused at every path, as on /mcp; a same-origin one is not.
func TestEveryEndpointRefusesCrossOrigin(t *testing.T) {
	tools := []string{"secret-tool-alpha"}
	s, _ := newServer(t, newFakeTools(desc(tools[0])), Options{})
	opts := endpointOptions(tools)
	hs := httptest.NewServer(s.Handler(opts))
	defer hs.Close()
	for _, path := range endpointPaths(t, s, opts) {
		for _, tc := range []struct {
			header http.Header
			want   bool // refused
		}{
			{http.Header{"Sec-Fetch-Site": {"cross-site"}}, true},
			{http.Header{"Origin": {"http://evil.example"}}, true},
			{http.Header{"Sec-Fetch-Site": {"same-origin"}}, false},
			{http.Header{"Origin": {hs.URL}}, false},
		} {
			req, _ := http.NewRequest(http.MethodPost, hs.URL+path, strings.NewReader(`{}`))
			for k, v := range tc.header {
				req.Header[k] = v
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			refused := resp.StatusCode == http.StatusForbidden && strings.Contains(string(b), "cross-origin browser request")
			if refused != tc.want {
				t.Errorf("POST %s %v: %d %s, want refused %v", path, tc.header, resp.StatusCode, b, tc.want)
			}
			if strings.Contains(string(b), tools[0]) && refused {
				t.Errorf("POST %s %v: the refusal names the tool: %s", path, tc.header, b)
			}
		}
	}
}
