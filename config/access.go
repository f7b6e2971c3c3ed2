package config

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/tool"
)

// Access is per-person policy on a team server (docs/auth.md, "Per-person
// policy"): roles, each naming OAuth subjects and groups, give their
// members grant overlays, the right to answer tools' questions in the
// console, and a rate limit of their own. Only OAuth principals are
// members of roles; local clients and the static token keep what tools.*
// gives. internal/policy resolves it once per config load.
type Access struct {
	// Widen lets a role's grants add to what tools.grants gives its
	// members. false (the default): a role's grants only narrow, each
	// member keeps at most what tools.grants gives and the role lists.
	Widen bool `mapstructure:"widen"`
	// RateLimit is each OAuth person's own bucket (on top of
	// server.rate_limit's per client and per tool), unless a role they
	// are a member of sets its own.
	RateLimit RateLimit `mapstructure:"rate_limit"`
	// Roles are keyed by a name of the operator's choosing.
	Roles map[string]Role `mapstructure:"roles"`
}

// Role is one access.roles entry.
type Role struct {
	// Issuer, when set, limits the role to tokens of this issuer (one of
	// server.oauth.issuers): subjects and groups are the issuer's names.
	// It is required when server.oauth lists more than one issuer, so
	// that one issuer's group cannot stand for another's.
	Issuer string `mapstructure:"issuer"`
	// Subjects are OAuth subjects (the token's sub) and Groups the names
	// its groups claim carries (server.oauth.groups_claim), compared as
	// written, byte for byte. A person is a member when either lists them.
	Subjects []string `mapstructure:"subjects"`
	Groups   []string `mapstructure:"groups"`
	// Grants overlay tools.grants for the role's members, by tool name
	// (exact names, as tools.grants is keyed): without access.widen, a
	// member keeps of the tool's grant only what the overlay lists too.
	// Only capability keys: a role names no module and no tool config.
	Grants map[string]Grant `mapstructure:"grants"`
	// Approve lists the tools (names or patterns) whose questions (gate
	// confirmations, permission prompts) the role's members may answer in
	// the console. A tool some role lists may be answered by those
	// members only.
	Approve []string `mapstructure:"approve"`
	// RateLimit replaces access.rate_limit for the role's members; a
	// person in several roles gets the lowest rate and the lowest burst
	// among them.
	RateLimit RateLimit `mapstructure:"rate_limit"`
	// MemoryResources caps the project memory its members read as
	// memory:// resources (server.resources.memory), which run as no tool
	// and so under no tool's grant: false, none; a list, those topics
	// (and the topics under them, as memory_topics); unset or true, no
	// cap. A member of several roles reads what every cap allows, with or
	// without access.widen. See MemoryResourceCap.
	MemoryResources any `mapstructure:"memory_resources"`
}

// MemoryResourceCap returns the role's memory_resources cap: capped is
// false when it sets none; topics, when capped, are all the role's
// members may read as memory:// resources (none at all when empty).
// Validate has checked the value.
func (r Role) MemoryResourceCap() (topics []string, capped bool) {
	switch v := r.MemoryResources.(type) {
	case bool:
		return nil, !v
	case []any:
		for _, t := range v {
			s, _ := t.(string)
			topics = append(topics, s)
		}
		return topics, true
	case []string:
		return v, true
	}
	return nil, false
}

// Bounds of access.roles.
const (
	maxRoleMembers   = 1024 // subjects plus groups of one role
	maxAccessNameLen = 256  // a subject or a group name, in bytes
)

// RoleNames lists the access.roles keys, sorted.
func (a Access) RoleNames() []string { return sortedKeys(a.Roles) }

// CheckAccessName reports whether s may name an OAuth subject or group in
// access.roles: 1 to 256 bytes of UTF-8 without control or invisible
// (format) characters. Names are compared byte for byte, never folded: a
// token's groups claim is refused when it holds a name that would fail
// this check (internal/oauth), so two names that print alike but differ
// cannot both be accepted as one.
func CheckAccessName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("an empty name")
	case len(s) > maxAccessNameLen:
		return fmt.Errorf("a name of %d bytes, the bound is %d", len(s), maxAccessNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("%q is not UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Errorf("%q holds the control or invisible character %U", s, r)
		}
	}
	return nil
}

func (c *Config) validateAccess(fail func(key, format string, args ...any)) {
	a := c.Access
	a.RateLimit.validate("access.rate_limit", fail)
	issuers := map[string]bool{}
	for _, is := range c.Server.OAuth.Issuers {
		issuers[is.Issuer] = true
	}
	if len(a.Roles) > 0 && !c.Server.OAuth.Enabled() {
		fail("access.roles", "apply to OAuth principals only, and server.oauth is not configured: configure it, or remove access.roles")
	}
	for _, name := range sortedKeys(a.Roles) {
		r := a.Roles[name]
		key := "access.roles." + name
		switch {
		case r.Issuer != "" && !issuers[r.Issuer]:
			fail(key+".issuer", "%q is not one of server.oauth.issuers", r.Issuer)
		case r.Issuer == "" && len(issuers) > 1:
			fail(key+".issuer", "is required while server.oauth lists %d issuers: name the issuer whose subjects and groups the role lists "+
				"(two issuers may use one name for different people)", len(issuers))
		}
		if len(r.Subjects)+len(r.Groups) == 0 {
			fail(key, "names no subject and no group: list who the role is for")
		}
		if len(r.Subjects)+len(r.Groups) > maxRoleMembers {
			fail(key, "names %d subjects and groups, the bound is %d", len(r.Subjects)+len(r.Groups), maxRoleMembers)
		}
		for _, s := range r.Subjects {
			if err := CheckAccessName(s); err != nil {
				fail(key+".subjects", "%v", err)
			}
		}
		for _, g := range r.Groups {
			if err := CheckAccessName(g); err != nil {
				fail(key+".groups", "%v", err)
			}
		}
		for _, toolName := range sortedKeys(r.Grants) {
			g := r.Grants[toolName]
			gkey := key + ".grants." + toolName
			if !tool.ValidName(toolName) {
				fail(gkey, "%q is not a tool name (%s)", toolName, tool.NameRule)
			}
			if g.Module != "" || len(g.Config) > 0 {
				fail(gkey, "a role's grant lists capabilities only: the module and the tool's config are tools.grants.%s's", toolName)
			}
			c.validateGrantValues(gkey, g, fail)
			if _, _, entry := c.GrantModule(toolName); a.Widen && !entry {
				// A widening grant adds to the entry's module's grant; with
				// no entry it would be bound to no module at all.
				fail(gkey, "widens tools.grants.%s (access.widen: true), which config does not have: "+
					"a role's grant adds to what the entry gives its module, so add tools.grants.%s (with its module) first", toolName, toolName)
			}
		}
		for _, pattern := range r.Approve {
			if err := checkToolPattern(pattern); err != nil {
				fail(key+".approve", "%q is not a tool name or pattern: %v", pattern, err)
			}
		}
		r.RateLimit.validate(key+".rate_limit", fail)
		validateMemoryResources(key+".memory_resources", r.MemoryResources, fail)
	}
}

// checkAccessReload refuses a reload to next that per-person policy
// cannot apply while the server verifies tokens as start said: the token
// verifier reads server.oauth once, at start. A role binds to issuers (an
// issuer-less one to the one issuer config lists): bound to an issuer the
// verifier does not trust, or no longer to the one it does, its narrowing
// would silently stop. And whether a token must carry its groups claim
// (RequireGroupsClaim) follows access.roles, which a reload changes: a
// role listing groups while the verifier still lets a token without the
// claim through would not narrow what that token's bearer may do.
func checkAccessReload(start, next *Config) error {
	if !start.Server.OAuth.Enabled() {
		return nil // no token is verified until a restart: no OAuth caller to narrow
	}
	if len(next.Access.Roles) > 0 && !slices.Equal(issuerIDs(start), issuerIDs(next)) {
		return fmt.Errorf("server.oauth.issuers changed (%q, warden serve started with %q), and access.roles bind to the issuers tokens are verified against, "+
			"which are read at start: restart warden serve to apply it; the previous config stays in force", issuerIDs(next), issuerIDs(start))
	}
	if start.RequireGroupsClaim() != next.RequireGroupsClaim() {
		return fmt.Errorf("server.oauth.require_groups_claim would be %v (unset, it is on whenever access.roles list groups), and warden serve started with %v: "+
			"tokens are verified as at start, so restart warden serve to apply it; the previous config stays in force",
			next.RequireGroupsClaim(), start.RequireGroupsClaim())
	}
	return nil
}

// issuerIDs lists server.oauth.issuers' identifiers, sorted.
func issuerIDs(c *Config) []string {
	var ids []string
	for _, is := range c.Server.OAuth.Issuers {
		ids = append(ids, is.Issuer)
	}
	slices.Sort(ids)
	return ids
}

// validateMemoryResources checks a role's memory_resources: absent, a
// boolean or a list of topics, each one memory_topics could list.
func validateMemoryResources(key string, v any, fail func(key, format string, args ...any)) {
	var list []any
	switch v := v.(type) {
	case nil, bool:
		return
	case []any:
		list = v
	case []string:
		for _, s := range v {
			list = append(list, s)
		}
	default:
		fail(key, "must be false (no memory:// resource), true (no cap) or a list of topics, got %s", showValue(fmt.Sprint(v)))
		return
	}
	for _, t := range list {
		s, ok := t.(string)
		if !ok {
			fail(key, "lists %s, which is not a topic", showValue(fmt.Sprint(t)))
			continue
		}
		if err := checkValue("memory.topics", s); err != nil {
			fail(key, "%v", err)
		}
	}
}

// validateGrantValues checks the capability values of a grant entry at
// key, as tools.grants' are checked.
func (c *Config) validateGrantValues(key string, g Grant, fail func(key, format string, args ...any)) {
	switch tool.MemoryAccess(g.Memory) {
	case tool.MemoryNone, tool.MemoryRead, tool.MemoryReadWrite:
	default:
		fail(key+".memory", "must be read or read-write, got %s", showValue(g.Memory))
	}
	for _, p := range append(slices.Clone(g.FS.Read), g.FS.Write...) {
		if err := checkValue("fs.read", p); err != nil {
			fail(key+".fs", "%v", err)
		}
		if root, _, found := strings.Cut(p, ":"); found && len(root) > 1 && root != "project" {
			if _, ok := c.Project.Roots[root]; !ok {
				fail(key+".fs", "path %s names %s, which project.roots does not define", showValue(p), showRoot(p, root))
			}
		}
	}
	for _, lang := range g.LSP {
		if _, ok := c.LSP.Languages[lang]; !ok && !slices.Contains(limits.DefaultLSPLanguages, lang) {
			fail(key+".lsp", "no language %s in lsp.languages", showValue(lang))
		}
	}
	checks := []struct {
		gkey, at string
		values   []string
	}{
		{"net", ".net", g.Net},
		{"env", ".env", g.Env},
		{"memory.topics", ".memory_topics", g.MemoryTopics},
		{"client", ".client", g.Client},
		{"lsp", ".lsp", g.LSP},
	}
	for _, ch := range checks {
		for _, v := range ch.values {
			if err := checkValue(ch.gkey, v); err != nil {
				fail(key+ch.at, "%v", err)
			}
		}
	}
}

// RoleGrant returns role's overlay of the tool whose config.ToolKey is
// key as capabilities, and whether the role has one.
func (r Role) RoleGrant(key string) (tool.Capabilities, bool) {
	g, ok := r.Grants[key]
	if !ok {
		return tool.Capabilities{}, false
	}
	return tool.Capabilities{
		FS:           tool.FSAccess{Read: g.FS.Read, Write: g.FS.Write},
		Memory:       tool.MemoryAccess(g.Memory),
		MemoryTopics: g.MemoryTopics,
		LSP:          g.LSP,
		Net:          g.Net,
		Env:          g.Env,
		Client:       g.Client,
	}, true
}

// MatchTool reports whether pattern (a tools.gates-style name or
// path.Match pattern) matches the tool whose config.ToolKey is key.
func MatchTool(pattern, key string) bool {
	return matchTool(pattern, key)
}

// The on_backend_error values of server.rate_limit.
const (
	OnBackendErrorRefuse = "refuse"
	OnBackendErrorLocal  = "local"
)
