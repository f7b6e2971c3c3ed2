package policy

import (
	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
)

// secretTable is config's secrets resolved once per config load, as each
// tool sees them: every secret, with the module that must serve the tool
// for it to read the secret when the secret's tools list names it
// (config.Config.SecretReaders, the rule of a grant's module). warden.env
// reads a call's view (hostfuncs.Call.Secrets) and asks nothing of config,
// so that a reload that binds or revokes a secret applies from the next
// call, as a grant does.
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
