package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/runlimits"
)

func load(t *testing.T, yaml string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const policyYAML = `tools:
  expose: ["*"]
  hide: [secret*]
  grants:
    echo: {fs: {read: [src]}, net: [api.example.com], config: {API-Key: {from_env: ECHO_KEY}}}
    hover: {module: lsp, lsp: [go]}
  limits:
    echo: {timeout: 2s, max_in_flight: 3, rate: 10/s}
    lsp: {max_instances: 2}
  gates:
    echo: {action: confirm}
    web_*: {action: block}
  scopes:
    echo: [tools.echo]
    web_*: [tools.web]
server:
  rate_limit:
    per_client: {rate: 1/s, burst: 2}
security:
  confirm: "off"
`

// plainYAML names tools only exactly: an unknown name gets the defaults
// without resolving anything.
const plainYAML = `tools:
  grants:
    echo: {fs: {read: [src]}, net: [api.example.com], config: {API-Key: {from_env: ECHO_KEY}}}
    hover: {module: lsp, lsp: [go]}
  limits:
    echo: {timeout: 2s, max_in_flight: 3, rate: 10/s}
    lsp: {max_instances: 2}
  gates:
    echo: {action: confirm}
  scopes:
    echo: [tools.echo]
`

// TestToolIsWhatConfigSays: the policy of every name, configured exactly,
// in another spelling, matched by a pattern only, or unknown, is what the
// config's own accessors answer for it, with patterns in config and
// without.
func TestToolIsWhatConfigSays(t *testing.T) {
	for _, yaml := range []string{policyYAML, plainYAML} {
		toolIsWhatConfigSays(t, load(t, yaml))
	}
	if !New(load(t, plainYAML)).plain || New(load(t, policyYAML)).plain {
		t.Error("plain is not what the configs are")
	}
}

func toolIsWhatConfigSays(t *testing.T, cfg *config.Config) {
	t.Helper()
	p := New(cfg)
	for _, name := range []string{"echo", "ECHO", "Echo", "hover", "web_search", "WEB_fetch", "secret_tool", "unknown"} {
		tp := p.Tool(name)
		if tp.Name != name || tp.Key != config.ToolKey(name) || tp.Exposed != cfg.Exposed(name) {
			t.Errorf("%s: name %q key %q exposed %v", name, tp.Name, tp.Key, tp.Exposed)
		}
		bound, explicit, ok := cfg.GrantModule(name)
		if tp.Bound != bound || tp.Explicit != explicit || tp.HasGrant != ok {
			t.Errorf("%s: bound to %q %v %v, config says %q %v %v", name, tp.Bound, tp.Explicit, tp.HasGrant, bound, explicit, ok)
		}
		for _, module := range []string{"echo", "lsp", "other"} {
			got, gotErr := tp.Grants(module)
			want, wantErr := cfg.Grants(name, module)
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
				t.Errorf("%s in %s: grants %+v, %v; config says %+v, %v", name, module, got, gotErr, want, wantErr)
			}
			var wantConfig map[string]hostfuncs.SecretValue
			if raw := cfg.ToolConfig(name, module); raw != nil {
				wantConfig = map[string]hostfuncs.SecretValue{}
				for k, v := range raw {
					wantConfig[k] = hostfuncs.SecretValue{Value: v.Value, FromEnv: v.FromEnv}
				}
			}
			if got := tp.Config(module); !reflect.DeepEqual(got, wantConfig) {
				t.Errorf("%s in %s: tool config %+v, config says %+v", name, module, got, wantConfig)
			}
		}
		g, key, ok := cfg.GateFor(name)
		if tp.Gate != g || tp.GateKey != key || tp.Gated != ok {
			t.Errorf("%s: gate %+v %q %v, config says %+v %q %v", name, tp.Gate, tp.GateKey, tp.Gated, g, key, ok)
		}
		scopes, key, ok := cfg.ScopesFor(name)
		if !reflect.DeepEqual(tp.Scopes, scopes) || tp.ScopeKey != key || tp.Scoped != ok {
			t.Errorf("%s: scopes %v %q %v, config says %v %q %v", name, tp.Scopes, tp.ScopeKey, tp.Scoped, scopes, key, ok)
		}
		if tp.Timeout != cfg.ToolTimeout(name) || tp.MaxInFlight != cfg.ToolMaxInFlight(name) || !reflect.DeepEqual(tp.Rate, runlimits.Rate(cfg.ToolRate(name))) {
			t.Errorf("%s: limits %v %d %+v", name, tp.Timeout, tp.MaxInFlight, tp.Rate)
		}
	}
	for _, module := range []string{"lsp", "LSP", "echo", "other"} {
		if got, want := p.ModuleLimits(module), runlimits.Module(cfg, module); got != want {
			t.Errorf("module %s: limits %+v, config says %+v", module, got, want)
		}
	}
	if p.ConfirmDestructive() != cfg.ConfirmDestructive() || p.PermissionPrompts() != cfg.PermissionPrompts() || p.ClientWait() != cfg.ClientWait() {
		t.Errorf("server-wide settings differ from config's")
	}
	if !reflect.DeepEqual(p.SupportedScopes(), cfg.ToolScopes()) {
		t.Errorf("scopes %v, config says %v", p.SupportedScopes(), cfg.ToolScopes())
	}
	r := p.ServerRateLimits()
	if !reflect.DeepEqual(r.PerClient, runlimits.Rate(cfg.Server.RateLimit.PerClient.Bucket("server.rate_limit.per_client"))) ||
		!reflect.DeepEqual(r.PerTool, runlimits.Rate(cfg.Server.RateLimit.PerTool.Bucket("server.rate_limit.per_tool"))) {
		t.Errorf("server rates %+v", r)
	}
}

// TestResolvedOnce: the policy of a tool config names is resolved when the
// policy is built; changing the config value afterwards (which nothing
// does: a loaded config is immutable) does not reach it. A lookup is one
// map read, not a walk of the config.
func TestResolvedOnce(t *testing.T) {
	cfg := load(t, policyYAML)
	p := New(cfg)
	want := p.Tool("echo")
	cfg.Tools.Grants, cfg.Tools.Gates, cfg.Tools.Limits, cfg.Tools.Scopes = nil, nil, nil, nil
	cfg.Tools.Hide = []string{"*"}
	if got := p.Tool("echo"); !reflect.DeepEqual(got, want) {
		t.Fatalf("the policy of echo changed with the config behind it:\n%+v\n%+v", got, want)
	}
}

// TestGrantElsewhere: a grant bound to another module grants nothing, and
// says so with the tool's name as the lookup spelled it.
func TestGrantElsewhere(t *testing.T) {
	p := New(load(t, policyYAML))
	_, err := p.Tool("Hover").Grants("hover")
	var ge *config.GrantElsewhereError
	if !errors.As(err, &ge) || ge.Tool != "Hover" || ge.Key != "hover" || ge.BoundTo != "lsp" || ge.ServedBy != "hover" || !ge.Explicit {
		t.Fatalf("grants of hover served by module hover: %v", err)
	}
	if g, err := p.Tool("hover").Grants("lsp"); err != nil || len(g.LSP) != 1 {
		t.Fatalf("grants of hover served by lsp: %+v, %v", g, err)
	}
}

// TestToolConfigIsTheCallers: each call gets its own map of the tool's
// config, so that no call can change another's.
func TestToolConfigIsTheCallers(t *testing.T) {
	tp := New(load(t, policyYAML)).Tool("echo")
	a := tp.Config("echo")
	a["api-key"] = hostfuncs.SecretValue{Value: "changed"}
	if b := tp.Config("echo"); b["api-key"].FromEnv != "ECHO_KEY" || b["api-key"].Value != "" {
		t.Fatalf("a call's change reached the next call: %+v", b)
	}
}
