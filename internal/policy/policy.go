// Package policy resolves what the config says about each tool and module
// once per config load, so that a request asks one question (Policy.Tool)
// instead of asking the config about each setting by name.
//
// A Policy is built from one *config.Config (New) and never changes: the
// app holds it in one atomic pointer together with the config it was built
// from (Policy.Config), and replaces both at once on every reload, so no
// request sees a new config with an old policy or the reverse
// (RATIONALE.md, "Policy is resolved once per config load").
package policy

import (
	"slices"
	"strings"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// Policy is the resolved policy of one config: each tool's ToolPolicy,
// each configured module's limits, and the server-wide settings a request
// reads. It is immutable.
type Policy struct {
	cfg *config.Config
	// tools holds the policy of every tool config names exactly (in
	// tools.grants, tools.limits, tools.gates, tools.scopes or
	// tools.tasks), by
	// config.ToolKey. Other names are resolved at lookup, the same way.
	tools   map[string]ToolPolicy
	modules map[string]runtime.Limits // tools.limits entries, by config.ToolKey
	// plain: no tools.gates, tools.scopes or tools.tasks key is a pattern, and
	// tools.expose and tools.hide are empty. Then every name config does
	// not name gets the same policy, the defaults, and a lookup of one
	// resolves nothing.
	plain bool

	confirmDestructive bool
	prompts            bool
	clientWait         time.Duration
	rates              mcpserver.RateLimits
	scopes             []string
	access             access // access.*, per-person policy (access.go)
	secrets            secretTable
}

// New resolves the policy of cfg.
func New(cfg *config.Config) *Policy {
	p := &Policy{
		cfg:                cfg,
		tools:              make(map[string]ToolPolicy),
		modules:            make(map[string]runtime.Limits, len(cfg.Tools.Limits)),
		confirmDestructive: cfg.ConfirmDestructive(),
		prompts:            cfg.PermissionPrompts(),
		clientWait:         cfg.ClientWait(),
		rates: mcpserver.RateLimits{
			PerClient:    runlimits.Rate(cfg.Server.RateLimit.PerClient.Bucket("server.rate_limit.per_client")),
			PerTool:      runlimits.Rate(cfg.Server.RateLimit.PerTool.Bucket("server.rate_limit.per_tool")),
			OnStoreError: cfg.Server.RateLimit.OnBackendError,
		},
		scopes:  cfg.ToolScopes(),
		access:  newAccess(cfg),
		secrets: newSecretTable(cfg),
	}
	p.rates.PerPerson = p.PersonRate
	// Only exact names: a pattern key (tools.gates."web_*") is no tool's
	// name, and the tools it matches are resolved at lookup.
	p.plain = len(cfg.Tools.Expose) == 0 && len(cfg.Tools.Hide) == 0
	for _, names := range [][]string{keys(cfg.Tools.Grants), keys(cfg.Tools.Limits), keys(cfg.Tools.Gates), keys(cfg.Tools.Scopes), keys(cfg.Tools.Tasks)} {
		for _, name := range names {
			if isPattern(name) {
				p.plain = false
				continue
			}
			if key := config.ToolKey(name); !has(p.tools, key) {
				p.tools[key] = resolve(cfg, key)
			}
		}
	}
	for name := range cfg.Tools.Limits {
		key := config.ToolKey(name)
		p.modules[key] = runlimits.Module(cfg, key)
	}
	return p
}

// Approvers returns who may answer the questions (gate confirmations,
// permission prompts) of tool name in the console, to show them: the
// OAuth subjects and groups, each with its issuer, of the access.roles
// whose approve lists name the tool, sorted. nil means anyone with a
// console session: no role names the tool. Whether one person may decide
// is MayApprove's to say, never a comparison of names with these.
func (p *Policy) Approvers(name string) []Approver { return p.access.approversOf(name) }

// Config returns the config the policy was resolved from.
func (p *Policy) Config() *config.Config { return p.cfg }

// Tool returns the policy of the tool called name: the one lookup a
// request makes. A name config does not name exactly gets the policy that
// its patterns and the defaults give, resolved as for any other name.
func (p *Policy) Tool(name string) ToolPolicy {
	key := config.ToolKey(name)
	t, ok := p.tools[key]
	switch {
	case ok:
	case p.plain:
		// No entry names it and no pattern can match it: exposed, no
		// grant, gate, scopes or limits of its own (as resolve finds).
		t = ToolPolicy{Key: key, Exposed: true}
	default:
		t = resolve(p.cfg, key)
	}
	t.Name = name
	t.secrets = p.secrets.of(key)
	return t
}

// ModuleLimits returns the runtime limits of the module called name:
// tools.defaults, then the module's own tools.limits entry.
func (p *Policy) ModuleLimits(name string) runtime.Limits {
	if l, ok := p.modules[config.ToolKey(name)]; ok {
		return l
	}
	return runlimits.Module(p.cfg, name)
}

// TaskBudget returns the deadline and fuel of a call of tp's tool that
// runs as an MCP task while the module called module serves it: the tool's
// tools.limits entry, else the module's, else tools.defaults (config's
// TaskBudget), in place of the interactive timeout and fuel.
func (p *Policy) TaskBudget(tp ToolPolicy, module string) runtime.Budget {
	return runlimits.Task(p.cfg, tp.Key, module)
}

// ConfirmDestructive reports whether destructive tools holding a write,
// net or env grant ask the person before each call (security.confirm).
func (p *Policy) ConfirmDestructive() bool { return p.confirmDestructive }

// PermissionPrompts reports whether a denied, requested capability is put
// to the person (security.prompts).
func (p *Policy) PermissionPrompts() bool { return p.prompts }

// ClientWait bounds a wait for the client or the person behind it
// (tools.defaults.client_wait).
func (p *Policy) ClientWait() time.Duration { return p.clientWait }

// ServerRateLimits returns server.rate_limit as the server takes it.
func (p *Policy) ServerRateLimits() mcpserver.RateLimits { return p.rates }

// SupportedScopes lists every scope tools.scopes names, sorted, once each.
func (p *Policy) SupportedScopes() []string { return slices.Clone(p.scopes) }

// ToolPolicy is the policy of one tool, resolved from one config.
type ToolPolicy struct {
	// Name is the tool's name as the lookup spelled it; Key is its
	// config.ToolKey, the spelling of its tools.* entries.
	Name, Key string
	// Exposed reports whether clients see the tool (tools.expose,
	// tools.hide).
	Exposed bool

	// Bound is the module the tool's grant entry belongs to (its module
	// field, else Key), Explicit whether the module field says so, and
	// HasGrant whether config has an entry for the tool at all.
	Bound              string
	Explicit, HasGrant bool
	granted            tool.Capabilities
	config             map[string]hostfuncs.SecretValue
	secrets            map[string]hostfuncs.Secret // Secrets

	// Gate is the tools.gates entry that applies (GateKey names it; Gated
	// is false when none does). The default gate of destructive tools is
	// decided per call: it depends on the descriptor.
	Gate    config.Gate
	GateKey string
	Gated   bool

	// Scopes are the OAuth scopes a call needs (tools.scopes; ScopeKey
	// names the entry, Scoped is false when none applies).
	Scopes   []string
	ScopeKey string
	Scoped   bool

	// Timeout, MaxInFlight and Rate are the tool's own tools.limits
	// settings (0 or nil when unset).
	Timeout     time.Duration
	MaxInFlight int
	Rate        *mcpserver.RateLimit

	// Task is what tools.tasks says of the tool (tool.TaskRequired,
	// TaskOptional or TaskForbidden; TaskKey names the entry), "" when no
	// entry applies and the descriptor decides: see TaskSupport.
	Task, TaskKey string
}

// resolve is the policy cfg gives the tool whose config.ToolKey is key.
func resolve(cfg *config.Config, key string) ToolPolicy {
	t := ToolPolicy{Key: key, Exposed: cfg.Exposed(key)}
	t.Bound, t.Explicit, t.HasGrant = cfg.GrantModule(key)
	if t.HasGrant {
		// Asked of the module the entry is bound to, it grants all it holds.
		t.granted, _ = cfg.Grants(key, t.Bound)
		if raw := cfg.ToolConfig(key, t.Bound); raw != nil {
			t.config = make(map[string]hostfuncs.SecretValue, len(raw))
			for k, v := range raw {
				t.config[k] = hostfuncs.SecretValue{Value: v.Value, FromEnv: v.FromEnv}
			}
		}
	}
	t.Gate, t.GateKey, t.Gated = cfg.GateFor(key)
	t.Scopes, t.ScopeKey, t.Scoped = cfg.ScopesFor(key)
	t.Timeout = cfg.ToolTimeout(key)
	t.MaxInFlight = cfg.ToolMaxInFlight(key)
	t.Rate = runlimits.Rate(cfg.ToolRate(key))
	t.Task, t.TaskKey, _ = cfg.TaskSupportFor(key)
	return t
}

// TaskSupport is whether the tool, described by d, may (tool.TaskOptional),
// must (TaskRequired) or must not (TaskForbidden) run as an MCP task:
// tools.tasks when an entry applies, else the descriptor's own word. The
// person's config wins both ways: it may let a tool whose descriptor says
// forbidden run as a task (under the task budget), or keep one that asks
// for tasks interactive (RATIONALE.md, "Config decides task support").
func (t ToolPolicy) TaskSupport(d *tool.Descriptor) string {
	if t.Task != "" {
		return t.Task
	}
	return d.TaskSupport()
}

// CheckTask refuses a call of the tool d describes whose way of running
// its task support in force (TaskSupport) rules out: a task (task set) of
// a tool that runs none, an interactive call of one that runs only as a
// task. The protocol layer answers both before a call gets that far; the
// app's door asks this too, so that no way in runs a tool otherwise.
func (t ToolPolicy) CheckTask(d *tool.Descriptor, task bool) error {
	support := t.TaskSupport(d)
	why := "its descriptor's execution.taskSupport"
	if t.Task != "" {
		why = "tools.tasks." + t.TaskKey
	}
	switch {
	case task && support == tool.TaskForbidden:
		return tool.Errorf(tool.KindDenied, "tool %s does not run as a task (%s is %s): call it without a task, or set tools.tasks.%s: optional",
			d.Name, why, support, config.ToolKey(d.Name))
	case !task && support == tool.TaskRequired:
		return tool.Errorf(tool.KindUnsupported, "tool %s runs only as a task (%s is %s), and this call is not one: call it as a task (a client that supports MCP tasks; `warden call --task`)",
			d.Name, why, support)
	}
	return nil
}

// Describe returns d as clients are to see it under t: its
// execution.taskSupport the effective one (TaskSupport). d is not
// changed; the result shares its other fields.
func (t ToolPolicy) Describe(d tool.Descriptor) tool.Descriptor {
	if t.Task == "" || t.Task == d.TaskSupport() {
		return d
	}
	d.Execution = &tool.Execution{TaskSupport: t.Task}
	return d
}

// Grants returns what the tool is granted while the module called module
// serves it: its entry's grants when the entry is bound to module, else
// nothing, with a *config.GrantElsewhereError that says why (as
// config.Config.Grants).
func (t ToolPolicy) Grants(module string) (tool.Capabilities, error) {
	if !t.HasGrant {
		return tool.Capabilities{}, nil
	}
	if t.Bound != module {
		return tool.Capabilities{}, &config.GrantElsewhereError{Tool: t.Name, Key: t.Key, BoundTo: t.Bound, ServedBy: module, Explicit: t.Explicit}
	}
	return t.granted, nil
}

// Config returns the tool's own configuration (tools.grants.<tool>.config)
// while module serves it, keyed in lower case, or nil: like Grants, it
// belongs to the module the entry is bound to and to no other. The map is
// the caller's.
func (t ToolPolicy) Config(module string) map[string]hostfuncs.SecretValue {
	if !t.HasGrant || t.config == nil || t.Bound != module {
		return nil
	}
	out := make(map[string]hostfuncs.SecretValue, len(t.config))
	for k, v := range t.config {
		out[k] = v
	}
	return out
}

// isPattern reports whether a tools.* key is a tool-name pattern (path.Match
// syntax) rather than a name: one that may match another name than itself.
func isPattern(key string) bool { return strings.ContainsAny(key, `*?[\`) }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func has[V any](m map[string]V, key string) bool {
	_, ok := m[key]
	return ok
}
