package serve

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// hostRequest sends method path to the server at addr with the given Host
// header (and Origin, when not ""), and returns the status and body.
func hostRequest(t *testing.T, method, addr, path, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostileRebindingEveryEndpoint: a page whose name resolves to
// 127.0.0.1 (DNS rebinding) gets 403 from every endpoint of `warden serve
// --http` (/mcp, /healthz, /metrics, the OAuth metadata path, a path not
// served) and from the server.metrics_addr listener, with a body naming
// the Host refused and no tool; a cross-site browser POST gets 403 at
// each; and the server keeps serving its real clients.
func TestHostileRebindingEveryEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	metricsAddr := freeAddr(t)
	e.withConfig(t, fmt.Sprintf("server:\n  metrics: true\n  metrics_addr: %s\n", metricsAddr))
	s := startHTTP(t, e)
	wantEcho(t, s.connect(t, "", nil, nil), "before")

	// What the endpoints would have told the page: the tool names and counts.
	leaks := []string{"echo", "warden_calls_total", `"tools"`, "instanceMemory"}
	for _, target := range []struct{ addr, path string }{
		{s.addr, "/mcp"}, {s.addr, "/healthz"}, {s.addr, "/healthz?ready"}, {s.addr, "/metrics"},
		{s.addr, "/.well-known/oauth-protected-resource/mcp"}, {s.addr, "/not-served"},
		{metricsAddr, "/metrics"},
	} {
		_, port, _ := strings.Cut(target.addr, ":")
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			for _, host := range []string{"evil.example", "evil.example:" + port, "attacker.127.0.0.1.nip.io:" + port} {
				code, body := hostRequest(t, method, target.addr, target.path, host, "")
				if code != http.StatusForbidden || !strings.Contains(body, `Host "`+host+`" is not a loopback name`) {
					t.Errorf("%s %s%s Host %s: %d %q, want 403 naming the Host", method, target.addr, target.path, host, code, body)
				}
				for _, leak := range leaks {
					if strings.Contains(body, leak) {
						t.Errorf("%s %s%s Host %s: the refusal carries %q: %s", method, target.addr, target.path, host, leak, body)
					}
				}
			}
		}
		// A cross-site browser POST, with the listener's own Host.
		code, body := hostRequest(t, http.MethodPost, target.addr, target.path, target.addr, "http://evil.example")
		if code != http.StatusForbidden || !strings.Contains(body, "cross-origin browser request") {
			t.Errorf("cross-site POST %s%s: %d %q, want 403", target.addr, target.path, code, body)
		}
	}

	// The real clients are still served, by the same listeners.
	for _, target := range []struct {
		addr, path, want string
	}{
		{s.addr, "/healthz", `"tools":1`},
		{s.addr, "/metrics", `warden_calls_total{kind="ok",tool="echo"} 1`},
		{metricsAddr, "/metrics", `warden_calls_total{kind="ok",tool="echo"} 1`},
	} {
		for _, host := range []string{target.addr, "localhost"} {
			if code, body := hostRequest(t, http.MethodGet, target.addr, target.path, host, ""); code != http.StatusOK || !strings.Contains(body, target.want) {
				t.Errorf("GET %s%s Host %s: %d, want 200 with %s:\n%s", target.addr, target.path, host, code, target.want, body)
			}
		}
	}
	wantEcho(t, s.connect(t, "", nil, nil), "after")
	// Each refusal is logged before it is answered; the log reaches the
	// test through a pipe, so wait for the lines, then count them.
	refusals := func() int {
		return strings.Count(s.stderr.String(), "refused an HTTP request: DNS-rebinding protection")
	}
	eventually(t, "42 rebinding refusals logged (7 targets, 2 methods, 3 hosts)", func() bool { return refusals() >= 42 })
	if got := refusals(); got != 42 {
		t.Errorf("%d rebinding refusals logged, want 42 (7 targets, 2 methods, 3 hosts)", got)
	}
}
