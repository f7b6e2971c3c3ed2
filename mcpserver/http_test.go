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
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestNonLoopbackBindWithoutTokenIsRefused(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("a")), Options{})
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080", "example.com:80"} {
		err := s.ListenAndServe(context.Background(), addr, HTTPOptions{})
		if !errors.Is(err, ErrTokenRequired) {
			t.Errorf("%s: %v, want ErrTokenRequired", addr, err)
		} else if !strings.Contains(err.Error(), "token") || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: unclear message %q", addr, err)
		}
	}
	// A listener already bound to every interface is refused too.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ServeListener(context.Background(), ln, HTTPOptions{}); !errors.Is(err, ErrTokenRequired) {
		t.Errorf("ServeListener on %s: %v, want ErrTokenRequired", ln.Addr(), err)
	}
	for _, addr := range []string{"127.0.0.1:1", "localhost:1", "[::1]:1"} {
		if err := checkExposure(addr, false); err != nil {
			t.Errorf("%s: %v, want loopback allowed", addr, err)
		}
	}
	if err := checkExposure("0.0.0.0:1", true); err != nil {
		t.Errorf("with a token: %v", err)
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestBearerTokenIsRequiredWhenSet(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("a")), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.ServeListener(ctx, ln, HTTPOptions{Token: "s3cret"}) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeListener: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String()

	for _, auth := range []string{"", "Bearer wrong", "Basic s3cret", "Bearer s3cret2"} {
		req, _ := http.NewRequest("POST", url+PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("Authorization %q: status %d, want 401 with WWW-Authenticate", auth, resp.StatusCode)
		}
	}

	for _, protocol := range []string{"2025-11-25", ""} {
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint:   url + PathMCP,
			HTTPClient: &http.Client{Transport: bearerTransport{"s3cret"}},
		}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			t.Fatalf("connect with the token (%q): %v", protocol, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a"})
		if err != nil || res.IsError {
			t.Errorf("call with the token: %+v %v", res, err)
		}
		cs.Close()
	}

	// /healthz needs no token.
	resp, err := http.Get(url + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}

func TestDNSRebindingIsRefused(t *testing.T) {
	s, _ := newServer(t, newFakeTools(desc("a")), Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	post := func(host, protocol string) int {
		req, _ := http.NewRequest("POST", hs.URL+PathMCP, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if protocol != "" {
			req.Header.Set("Mcp-Protocol-Version", protocol)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, protocol := range []string{"", "2026-07-28"} {
		for _, host := range []string{"evil.example", "evil.example:80", "localhost.evil.example"} {
			if code := post(host, protocol); code != http.StatusForbidden {
				t.Errorf("Host %s (protocol %q): status %d, want 403", host, protocol, code)
			}
		}
	}
	if code := post(strings.TrimPrefix(hs.URL, "http://"), ""); code != http.StatusOK {
		t.Errorf("loopback Host: status %d, want 200", code)
	}
	if code := post("localhost", ""); code != http.StatusOK {
		t.Errorf("Host localhost: status %d, want 200", code)
	}
}

func TestHealthz(t *testing.T) {
	tools := newFakeTools(desc("a"), desc("b"))
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{Token: "t"}))
	defer hs.Close()
	resp, err := http.Get(hs.URL + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || body["status"] != "ok" || body["tools"] != float64(2) {
		t.Errorf("/healthz: %d %v", resp.StatusCode, body)
	}
	resp2, err := http.Post(hs.URL+PathHealthz, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /healthz: %d", resp2.StatusCode)
	}
	resp3, err := http.Get(hs.URL + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp3.Body.Close()
	if resp3.StatusCode != http.StatusNotFound {
		t.Errorf("GET /other: %d", resp3.StatusCode)
	}
}

// statsTools is a fakeTools that reports stats, as the app reports the
// instance memory budget.
type statsTools struct {
	*fakeTools
	stats map[string]any
}

func (s *statsTools) options(opts Options) Options {
	opts.Stats = s.Stats
	return opts
}

func (s *statsTools) Stats() map[string]any { return s.stats }

// TestHealthzStats: /healthz carries a StatsReporter's stats, and a stat
// cannot overwrite the server's own keys.
func TestHealthzStats(t *testing.T) {
	tools := &statsTools{fakeTools: newFakeTools(desc("a")), stats: map[string]any{
		"instanceMemory": map[string]any{"limit": 268435456, "used": 1024},
		"status":         "hijacked",
	}}
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	resp, err := http.Get(hs.URL + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status         string
		InstanceMemory struct{ Limit, Used uint64 } `json:"instanceMemory"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "ok" || body.InstanceMemory.Limit != 256<<20 || body.InstanceMemory.Used != 1024 {
		t.Errorf("/healthz: %+v", body)
	}
}

type failingTools struct {
	*fakeTools
	errs []LoadError
}

func (f *failingTools) options(opts Options) Options {
	opts.LoadErrors = f.LoadErrors
	return opts
}

func (f *failingTools) LoadErrors() []LoadError { return f.errs }

// TestHealthzLoadErrors: modules that failed to load make /healthz
// "degraded", listing them (at most MaxHealthLoadErrors, with the total);
// 503 when no tool is served at all, 200 while some are.
func TestHealthzLoadErrors(t *testing.T) {
	var many []LoadError
	for i := range 25 {
		many = append(many, LoadError{Module: fmt.Sprintf("m%02d", i), Error: "load m.wasm: invalid module: boom"})
	}
	for _, tc := range []struct {
		name  string
		tools *fakeTools
		code  int
	}{
		{"none served", newFakeTools(), http.StatusServiceUnavailable},
		{"some served", newFakeTools(desc("a")), http.StatusOK},
	} {
		s, _ := newServer(t, &failingTools{fakeTools: tc.tools, errs: many}, Options{})
		hs := httptest.NewServer(s.Handler(HTTPOptions{}))
		resp, err := http.Get(hs.URL + PathHealthz)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Status     string
			LoadErrors []LoadError `json:"load_errors"`
			Total      int         `json:"load_errors_total"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		hs.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.code || body.Status != "degraded" || body.Total != 25 || len(body.LoadErrors) != MaxHealthLoadErrors ||
			body.LoadErrors[0] != many[0] {
			t.Errorf("%s: %d %+v", tc.name, resp.StatusCode, body)
		}
	}
}
