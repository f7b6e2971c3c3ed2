package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oauth/oauthtest"
	"github.com/warden-run/warden/mcpserver"
)

// doorsConfig serves the doors fixture (runtime/testdata/goguest/doors):
// each of its tools may write out/, and each serves a resource, a resource
// template and a prompt (with completions) that run as it and write
// out/<tool>-<what> when they do. hidden is hidden, blocked blocked, and
// scoped needs the scope doors:scoped.
func doorsConfig(e *env, resource, issuer, jwks string) string {
	var grants strings.Builder
	for _, name := range []string{"open", "hidden", "blocked", "scoped"} {
		fmt.Fprintf(&grants, "    %s: {module: doors, fs: {write: [out]}}\n", name)
	}
	return `project:
  root: ` + e.dir + `
tools:
  dir: ` + e.tools + `
  cache_dir: ` + built.cacheDir + `
  hide: [hidden]
  scopes:
    scoped: [doors:scoped]
  gates:
    blocked: {action: block}
  grants:
` + grants.String() + `server:
  oauth:
    resource: ` + resource + `
    scopes: [mcp]
    issuers:
      - {issuer: '` + issuer + `', jwks_url: '` + jwks + `'}
log:
  level: info
`
}

// TestHostileDoorsSkipNoPolicy is the reproduction of the first
// item against the real binary: a token that gets 403 on tools/call of a
// tool gets the same 403 (and the same scope challenge) on resources/read,
// prompts/get and completion/complete of that tool's features; a hidden
// tool's features are not served, a blocked tool's are refused; nothing is
// written with the tool's grant, and the session keeps serving.
func TestHostileDoorsSkipNoPolicy(t *testing.T) {
	t.Parallel()
	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.ES256, "k1")
	e := newEnv(t, "", "doors")
	out := filepath.Join(e.dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	if err := os.WriteFile(e.config, []byte(doorsConfig(e, resource, is.URL, is.JWKSURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	token := func(scopes string) string { return is.Sign(t, "k1", is.Claims(resource, "alice", time.Now(), scopes)) }
	narrow := &http.Client{Transport: bearer{token("mcp")}}
	s := startServeAs(t, e, addr, narrow, "--http="+addr)
	written := func() []string {
		entries, err := os.ReadDir(out)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		return names
	}
	scopeNeed := `tool "scoped" needs the scope doors:scoped, which the access token does not grant (tools.scopes.scoped in ` + e.config + `)`
	allow := "tools.gates.blocked.action: allow in " + e.config

	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		ctx := context.Background()
		cs := s.connect(t, protocol, nil, narrow)
		refusals := []struct {
			what string
			do   func() error
			code int64
			msg  string
		}{
			{"tools/call scoped", func() error {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "scoped", Arguments: map[string]any{}})
				return err
			}, mcpserver.CodeInsufficientScope, scopeNeed},
			{"resources/read of scoped's resource", func() error {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://scoped/resource"})
				return err
			}, mcpserver.CodeInsufficientScope, `resources/read "doors://scoped/resource" runs as tool "scoped": ` + scopeNeed},
			{"resources/read through scoped's template", func() error {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://scoped/item/1"})
				return err
			}, mcpserver.CodeInsufficientScope, `resources/read "doors://scoped/item/1" runs as tool "scoped": ` + scopeNeed},
			{"prompts/get of scoped's prompt", func() error {
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "scoped_prompt"})
				return err
			}, mcpserver.CodeInsufficientScope, `prompts/get "scoped_prompt" runs as tool "scoped": ` + scopeNeed},
			{"completion/complete of scoped's prompt", func() error {
				_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "scoped_prompt"},
					Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}})
				return err
			}, mcpserver.CodeInsufficientScope, `completion/complete "scoped_prompt" runs as tool "scoped": ` + scopeNeed},
			{"resources/read of hidden's resource", func() error {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://hidden/resource"})
				return err
			}, mcp.CodeResourceNotFound, "Resource not found"},
			{"prompts/get of hidden's prompt", func() error {
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hidden_prompt"})
				return err
			}, jsonrpc.CodeInvalidParams, `unknown prompt "hidden_prompt"`},
			{"completion/complete of hidden's template", func() error {
				_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "doors://hidden/item/{id}"},
					Argument: mcp.CompleteParamsArgument{Name: "id", Value: "x"}})
				return err
			}, jsonrpc.CodeInvalidParams, `completion/complete: no prompt or resource template "doors://hidden/item/{id}" (ref/resource)`},
			{"resources/read of blocked's resource", func() error {
				_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://blocked/resource"})
				return err
			}, jsonrpc.CodeInternalError, "denied: tool blocked is blocked by tools.gates.blocked (" + allow + ")"},
			{"prompts/get of blocked's prompt", func() error {
				_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "blocked_prompt"})
				return err
			}, jsonrpc.CodeInternalError, "denied: tool blocked is blocked by tools.gates.blocked (" + allow + ")"},
			{"completion/complete of blocked's prompt", func() error {
				_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "blocked_prompt"},
					Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}})
				return err
			}, jsonrpc.CodeInternalError, "denied: tool blocked is blocked by tools.gates.blocked (" + allow + ")"},
		}
		for _, r := range refusals {
			err := r.do()
			var rpcErr *jsonrpc.Error
			if !errors.As(err, &rpcErr) || rpcErr.Code != r.code || rpcErr.Message != r.msg {
				t.Errorf("%s: %s = %v\nwant %d %s", protocol, r.what, err, r.code, r.msg)
			}
			if got := written(); len(got) > 0 {
				t.Fatalf("%s: %s ran module code: out/ holds %v", protocol, r.what, got)
			}
		}
		// The session keeps serving: an unrestricted tool's resource is read
		// (and its module wrote with the tool's grant).
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://open/resource"})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "read as open" {
			t.Fatalf("%s: the next read: %+v, %v", protocol, rr, err)
		}
		if got := strings.Join(written(), " "); got != "open-resource" {
			t.Fatalf("%s: out/ holds %s, want open-resource", protocol, got)
		}
		if err := os.Remove(filepath.Join(out, "open-resource")); err != nil {
			t.Fatal(err)
		}
	}

	// Over HTTP the refusal is the scope challenge tools/call gets: 403,
	// insufficient_scope, the scopes the request needs.
	for _, c := range []struct{ method, params, message string }{
		{"tools/call", `{"name":"scoped","arguments":{}}`, scopeNeed},
		{"resources/read", `{"uri":"doors://scoped/resource"}`, `resources/read "doors://scoped/resource" runs as tool "scoped": ` + scopeNeed},
		{"prompts/get", `{"name":"scoped_prompt"}`, `prompts/get "scoped_prompt" runs as tool "scoped": ` + scopeNeed},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"scoped_prompt"},"argument":{"name":"a","value":"x"}}`,
			`completion/complete "scoped_prompt" runs as tool "scoped": ` + scopeNeed},
	} {
		body := `{"jsonrpc":"2.0","id":7,"method":"` + c.method + `","params":` + c.params + `}`
		req, _ := http.NewRequest("POST", s.url(), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", c.method)
		req.Header.Set("Authorization", "Bearer "+token("mcp"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(resp.Body)
		resp.Body.Close()
		challenge := `Bearer resource_metadata="http://` + addr + `/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", ` +
			`error_description="` + strings.ReplaceAll(c.message, `"`, "") + `", scope="mcp doors:scoped"`
		if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != challenge {
			t.Errorf("%s: %d %q\nwant 403 %q", c.method, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), challenge)
		}
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"error":{"code":%d,"message":%q}}`, mcpserver.CodeInsufficientScope, c.message)
		if strings.TrimSpace(got) != want {
			t.Errorf("%s: body %s\nwant %s", c.method, got, want)
		}
	}
	if got := written(); len(got) > 0 {
		t.Fatalf("a refused request ran module code: out/ holds %v", got)
	}

	// With the scope, the same requests run as scoped.
	cs := s.connect(t, "2025-11-25", nil, &http.Client{Transport: bearer{token("mcp doors:scoped")}})
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "doors://scoped/resource"}); err != nil {
		t.Errorf("scoped's resource with the scope: %v", err)
	}
	if got := strings.Join(written(), " "); got != "scoped-resource" {
		t.Errorf("with the scope, out/ holds %s, want scoped-resource", got)
	}
	if strings.Contains(s.stderr.String(), "Bearer ey") {
		t.Errorf("the log holds a bearer token:\n%s", s.stderr)
	}
}
