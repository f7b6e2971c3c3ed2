package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTP serves over streamable HTTP and connects with the go-sdk client at
// both protocol generations: 2025-11-25 gets a session (Mcp-Session-Id),
// 2026-07-28 is stateless.
func TestHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "loop: {timeout: 300ms}", "echo", "loop")
	s := startHTTP(t, e)

	resp, err := http.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var health map[string]any
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || health["status"] != "ok" || health["tools"] != float64(2) || health["ready"] != true {
		t.Errorf("/healthz: %d %v %v, want 200 {status: ok, ready: true, tools: 2}", resp.StatusCode, health, err)
	}
	// Every module loaded: the readiness form answers 200 too.
	if h := getHealthz(t, s.addr, "/healthz?ready"); h.code != http.StatusOK || h.Status != "ok" || !h.Ready || h.Loading != nil {
		t.Errorf("/healthz?ready once loaded: %d %+v, want 200 ok ready", h.code, h)
	}

	for _, tc := range []struct {
		protocol string
		session  bool
	}{{"2025-11-25", true}, {"2026-07-28", false}} {
		t.Run(tc.protocol, func(t *testing.T) {
			cs := s.connect(t, tc.protocol, nil, nil)
			if got := cs.InitializeResult().ProtocolVersion; got != tc.protocol {
				t.Errorf("negotiated %q, want %q", got, tc.protocol)
			}
			if hasSession := cs.ID() != ""; hasSession != tc.session {
				t.Errorf("session ID %q: want a session: %v", cs.ID(), tc.session)
			}
			if names := toolNames(t, cs); strings.Join(names, ",") != "echo,loop" {
				t.Errorf("tools/list = %v", names)
			}
			wantEcho(t, cs, "over http")
			wantFailure(t, call(t, cs, "loop", nil), "timeout")
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
			wantInvalidParams(t, err)
			wantEcho(t, cs, "over http, again")
		})
	}

	// DNS rebinding: a page on evil.example resolving its name to 127.0.0.1
	// reaches the listener with its own name in Host.
	for host, want := range map[string]int{
		"evil.example":              http.StatusForbidden,
		"evil.example:" + port(s):   http.StatusForbidden,
		"127.0.0.1:" + port(s):      http.StatusOK,
		"localhost:" + port(s):      http.StatusOK,
		"attacker.127.0.0.1.nip.io": http.StatusForbidden,
	} {
		if got := rawPost(t, s.url(), host, ""); got != want {
			t.Errorf("POST /mcp with Host %q: %d, want %d", host, got, want)
		}
	}
}

func port(s *httpServer) string { return s.addr[strings.LastIndexByte(s.addr, ':')+1:] }

// rawPost sends a stateless server/discover (2026-07-28 has no ping) to url with the given Host header and bearer
// token, and returns the status code.
func rawPost(t *testing.T, url, host, token string) int {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := readAll(resp.Body)
	if resp.StatusCode == http.StatusOK && !strings.Contains(b, `"supportedVersions"`) {
		t.Errorf("server/discover answered 200 without a result: %s", b)
	}
	return resp.StatusCode
}

// TestHTTPExposedWithoutTokenRefused: listening on every interface without a
// token is a usage error (exit 2) whose message names the token.
func TestHTTPExposedWithoutTokenRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	cmd := exec.Command(built.warden, "serve", "--config", e.config, "--http=0.0.0.0:0")
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 {
			t.Errorf("exit: %v, want status 2", err)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatal("warden serve --http 0.0.0.0:0 without a token is still running after a minute")
	}
	msg := stderr.String()
	if !strings.Contains(msg, "token") || !strings.Contains(msg, "--token") || !strings.Contains(msg, "WARDEN_SERVER_TOKEN") {
		t.Errorf("stderr does not tell how to set the token:\n%s", msg)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout: %q, want nothing", stdout.String())
	}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestHTTPToken: with --token, /mcp refuses requests without the bearer (401)
// and serves those with it, at both protocol generations; /healthz is open.
func TestHTTPToken(t *testing.T) {
	t.Parallel()
	const token = "e2e-s3cret-token"
	e := newEnv(t, "", "echo")
	s := startHTTP(t, e, "--token", token)

	if got := rawPost(t, s.url(), "", ""); got != http.StatusUnauthorized {
		t.Errorf("POST /mcp without a token: %d, want 401", got)
	}
	if got := rawPost(t, s.url(), "", "wrong-"+token); got != http.StatusUnauthorized {
		t.Errorf("POST /mcp with a wrong token: %d, want 401", got)
	}
	if got := rawPost(t, s.url(), "", token); got != http.StatusOK {
		t.Errorf("POST /mcp with the token: %d, want 200", got)
	}
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		cs := s.connect(t, protocol, nil, &http.Client{Transport: bearer{token}})
		wantEcho(t, cs, "authorized at "+protocol)
	}
}

// TestHTTPFlagWithSeparateValue: `warden serve --http ADDR`, the form serve's
// own help shows (`warden serve --http 0.0.0.0:7331 --token ...`), serves on
// ADDR. --http has an optional value (alone, it means server.http), and an
// optional pflag value only binds with "=": ADDR becomes a positional
// argument, which serve refuses with `unknown command "ADDR"`, exit 2.
func TestHTTPFlagWithSeparateValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	addr := freeAddr(t)
	s := startServe(t, e, addr, "--http", addr)
	wantEcho(t, s.connect(t, "", nil, nil), "--http ADDR works")
}
