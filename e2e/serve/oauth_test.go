package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oauth/oauthtest"
	"github.com/warden-run/warden/mcpserver"
)

// TestHTTPOAuth: warden serve with server.oauth is a resource server of a
// test issuer: without a token 401 naming the metadata, the metadata
// itself, a token without the tool's scope refused with the config line,
// with it the call works, at both protocol generations.
func TestHTTPOAuth(t *testing.T) {
	t.Parallel()
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.ES256, "k1")
	e := newEnv(t, "", "echo")
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	cfg, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	cfg = []byte(strings.Replace(string(cfg), "  grants:\n", "  scopes:\n    echo: [echo:run]\n  grants:\n", 1) +
		"server:\n  oauth:\n    resource: " + resource + "\n    scopes: [mcp]\n    issuers:\n" +
		"      - {issuer: '" + is.URL + "', jwks_url: '" + is.JWKSURL() + "'}\n")
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	token := func(scopes string) *http.Client {
		return &http.Client{Transport: bearer{is.Sign(t, "k1", is.Claims(resource, "alice", time.Now(), scopes))}}
	}
	s := startServeAs(t, e, addr, token("mcp"), "--http="+addr)

	req, _ := http.NewRequest("POST", s.url(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	wantChallenge := `Bearer resource_metadata="http://` + addr + `/.well-known/oauth-protected-resource/mcp", scope="mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || got != wantChallenge {
		t.Errorf("no token: %d %q, want 401 %q", resp.StatusCode, got, wantChallenge)
	}

	resp, err = http.Get("http://" + addr + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantMeta := `{"resource":"` + resource + `","authorization_servers":["` + is.URL + `"],"scopes_supported":["echo:run","mcp"],` +
		`"bearer_methods_supported":["header"],"resource_name":"warden"}` + "\n"
	if string(meta) != wantMeta {
		t.Errorf("metadata %s\nwant %s", meta, wantMeta)
	}

	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		cs := s.connect(t, protocol, nil, token("mcp"))
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "no scope"}})
		var rpcErr *jsonrpc.Error
		want := `tool "echo" needs the scope echo:run, which the access token does not grant (tools.scopes.echo in ` + e.config + `)`
		if !errors.As(err, &rpcErr) || rpcErr.Code != mcpserver.CodeInsufficientScope || rpcErr.Message != want {
			t.Errorf("echo without its scope at %s: %v\nwant %q", protocol, err, want)
		}
		wantEcho(t, s.connect(t, protocol, nil, token("mcp echo:run")), "authorized at "+protocol)
	}
	if strings.Contains(s.stderr.String(), "Bearer ") {
		t.Errorf("the log holds a bearer token:\n%s", s.stderr)
	}

	// --token beside server.oauth is a usage error.
	_, stderr, code := runWarden(t, "serve", "--config", e.config, "--http="+freeAddr(t), "--token", "x")
	if code != 2 || !strings.Contains(stderr, "server.oauth") {
		t.Errorf("--token with server.oauth: exit %d, stderr %s", code, stderr)
	}
}
