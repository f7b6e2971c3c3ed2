package policy

import (
	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
)

// secretTable is config's secrets resolved once per config load, as each
// tool sees them: every secret, with the module that must serve the tool
// for it to read the secret when the secret's tools list names it
// (config.Config.SecretReaders, the rule of a grant's module). warden.env
// asks nothing of config: it reads a call's view (hostfuncs.Call.Secrets),
// and at each get the view of the policy in force (Policy.Secrets), and
// needs both to bind the secret: a binding added by a reload applies from
// the next call, as a grant does, and one revoked by a reload at once,
// even to a call already running.
type secretTable struct {
	// unbound is every secret bound to no tool: the view of a tool no
	// secret names.
	unbound map[string]hostfuncs.Secret
	// byTool is the view of each tool (config.ToolKey) some secret names.
	byTool map[string]map[string]hostfuncs.Secret
}

func newSecretTable(cfg *config.Config) secretTable {
	if len(cfg.Secrets) == 0 {
		return secretTable{}
	}
	t := secretTable{unbound: make(map[string]hostfuncs.Secret, len(cfg.Secrets)), byTool: map[string]map[string]hostfuncs.Secret{}}
	readers := make(map[string]map[string]string, len(cfg.Secrets))
	for name := range cfg.Secrets { // keys are configkey.Fold'ed
		t.unbound[name] = hostfuncs.Secret{Source: cfg.SecretSource(name), Where: cfg.SecretWhere(name)}
		readers[name] = cfg.SecretReaders(name)
	}
	for name, rs := range readers {
		for key, module := range rs {
			view, ok := t.byTool[key]
			if !ok {
				view = make(map[string]hostfuncs.Secret, len(t.unbound))
				for n, s := range t.unbound {
					view[n] = s
				}
				t.byTool[key] = view
			}
			s := view[name]
			s.Module = module
			view[name] = s
		}
	}
	return t
}

// of is the view of the tool whose config.ToolKey is key; nil when config
// has no secrets.
func (t secretTable) of(key string) map[string]hostfuncs.Secret {
	if view, ok := t.byTool[key]; ok {
		return view
	}
	return t.unbound
}

// Secrets returns config's secrets as the tool sees them, by
// configkey.Fold of their names: each with its source, where config binds
// it, and, when its tools list names the tool, the module that must serve
// the tool for it to read it (hostfuncs.Secret.ReadableBy). The map is
// shared by every call under this policy: never modify it.
func (t ToolPolicy) Secrets() map[string]hostfuncs.Secret { return t.secrets }

// Secrets returns config's secrets as the tool called name sees them:
// Tool(name).Secrets() without resolving the rest of its policy, for
// warden.env to check, at each get, the bindings in force now.
func (p *Policy) Secrets(name string) map[string]hostfuncs.Secret {
	return p.secrets.of(config.ToolKey(name))
}
