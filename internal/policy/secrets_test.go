package policy

import (
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/secrets"
)

// secretsYAML binds deploy_key to tool echo (served by its own module) and
// to tool hover (whose grant is bound to module lsp); ring to no tool.
const secretsYAML = `tools:
  grants:
    hover: {module: lsp, lsp: [go]}
secrets:
  DEPLOY_KEY:
    env: DEPLOY_VAR
    tools: [Echo, hover]
  RING: {keyring: api-token}
`

// TestSecretsResolved: each tool sees every secret, with its source and
// config line; a secret naming the tool is readable by the module its
// grant is bound to (else the one named like the tool), and by no other;
// a tool no secret names, and a name config never mentions, reads none.
func TestSecretsResolved(t *testing.T) {
	for _, yaml := range []string{secretsYAML, secretsYAML + "  RATE: {env: R}\n"} {
		p := New(load(t, yaml))
		echo := p.Tool("echo").Secrets()
		if s := echo["deploy_key"]; s.Source != (secrets.Source{Kind: secrets.Env, Ref: "DEPLOY_VAR"}) ||
			!s.ReadableBy("echo") || s.ReadableBy("other") || !strings.HasSuffix(s.Where, "config.yaml:7") {
			t.Errorf("deploy_key as echo sees it: %+v", s)
		}
		if s, ok := echo["ring"]; !ok || s.ReadableBy("echo") || s.Source.Kind != secrets.Keyring {
			t.Errorf("ring as echo sees it: %+v %v", s, ok)
		}
		if s := p.Tool("hover").Secrets()["deploy_key"]; !s.ReadableBy("lsp") || s.ReadableBy("hover") {
			t.Errorf("deploy_key as hover (bound to module lsp) sees it: %+v", s)
		}
		for _, name := range []string{"files", "never_named"} {
			view := p.Tool(name).Secrets()
			if len(view) < 2 || view["deploy_key"].Module != "" {
				t.Errorf("%s sees %+v, want every secret, none bound", name, view)
			}
		}
	}
}

// TestSecretRevokedByReload: a config loaded after a tool is removed from
// a secret's tools (a reload) resolves a policy in which it no longer
// reads it; the policy resolved before is unchanged (calls under it
// finish as they began).
func TestSecretRevokedByReload(t *testing.T) {
	before := New(load(t, secretsYAML))
	after := New(load(t, strings.Replace(secretsYAML, "tools: [Echo, hover]", "tools: [hover]", 1)))
	if !before.Tool("echo").Secrets()["deploy_key"].ReadableBy("echo") {
		t.Fatal("echo does not read deploy_key before the reload")
	}
	if s := after.Tool("echo").Secrets()["deploy_key"]; s.ReadableBy("echo") || s.Module != "" {
		t.Fatalf("echo after the reload: %+v", s)
	}
	if !before.Tool("echo").Secrets()["deploy_key"].ReadableBy("echo") {
		t.Fatal("the policy resolved before the reload changed")
	}
}
