package config

import (
	"slices"
	"sort"
	"strings"
	"time"
)

// Gate actions (tools.gates.<tool>.action).
const (
	GateAllow   = "allow"
	GateBlock   = "block"
	GateConfirm = "confirm"
	GateResult  = "result"
)

func (c *Config) validateGates(fail func(key, format string, args ...any)) {
	for _, pattern := range sortedKeys(c.Tools.Gates) {
		g := c.Tools.Gates[pattern]
		key := "tools.gates." + pattern
		if err := checkToolPattern(pattern); err != nil {
			fail(key, "%q is not a tool name or pattern: %v", pattern, err)
		}
		switch g.Action {
		case GateAllow, GateBlock, GateConfirm:
		case GateResult:
			if g.Result == "" {
				fail(key+".result", "a result gate needs the text to return")
			}
		default:
			fail(key+".action", "must be allow, block, confirm or result, got %q", g.Action)
		}
	}
	for _, list := range []struct {
		key      string
		patterns []string
	}{{"tools.expose", c.Tools.Expose}, {"tools.hide", c.Tools.Hide}} {
		for _, p := range list.patterns {
			if err := checkToolPattern(p); err != nil {
				fail(list.key, "%q is not a tool name or pattern: %v", p, err)
			}
		}
	}
	for _, s := range []struct{ key, value string }{{"security.confirm", c.Security.Confirm}, {"security.prompts", c.Security.Prompts}} {
		switch strings.ToLower(s.value) {
		case "on", "off", "":
		default:
			fail(s.key, "must be on or off, got %q", s.value)
		}
	}
	if c.Tools.Defaults.ClientWait < 0 {
		fail("tools.defaults.client_wait", "must not be negative, got %s", c.Tools.Defaults.ClientWait)
	}
}

// GateFor returns the gate of the tool called name and the tools.gates key
// it comes from: the entry of exactly that name (ignoring case) if there
// is one, else the longest pattern that matches it (ties: the first in
// sort order). ok is false when no entry applies. A running server asks it
// once per tool and config load (internal/policy), not per call.
func (c *Config) GateFor(name string) (g Gate, key string, ok bool) {
	return lookupTool(c.Tools.Gates, name)
}

// lookupTool finds the entry of the tool called name in a map keyed by
// tool name or pattern: the entry of exactly that name (ignoring case),
// else the longest matching pattern (ties: the first in sort order). Both
// the keys and name are folded by ToolKey here, not trusted to arrive
// folded: viper lower-cases keys, a Config built another way may not.
func lookupTool[V any](entries map[string]V, name string) (v V, key string, ok bool) {
	folded := ToolKey(name)
	if v, ok := entries[folded]; ok {
		return v, folded, true
	}
	var patterns []string
	for p := range entries {
		if ToolKey(p) == folded {
			return entries[p], p, true // the exact entry, its key not folded
		}
		if matchTool(p, folded) {
			patterns = append(patterns, p)
		}
	}
	if len(patterns) == 0 {
		return v, "", false
	}
	sort.Slice(patterns, func(i, j int) bool {
		if len(patterns[i]) != len(patterns[j]) {
			return len(patterns[i]) > len(patterns[j])
		}
		return patterns[i] < patterns[j]
	})
	return entries[patterns[0]], patterns[0], true
}

// Exposed reports whether clients see the tool called name: it matches
// tools.expose (or that list is empty) and no tools.hide pattern. Patterns
// use path.Match syntax and ignore case.
func (c *Config) Exposed(name string) bool {
	match := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { return matchTool(p, name) })
	}
	if len(c.Tools.Expose) > 0 && !match(c.Tools.Expose) {
		return false
	}
	return !match(c.Tools.Hide)
}

// DefaultClientWait is tools.defaults.client_wait when unset or 0.
const DefaultClientWait = 5 * time.Minute

// ClientWait bounds a wait for the client or the person behind it
// (tools.defaults.client_wait; 0 means DefaultClientWait).
func (c *Config) ClientWait() time.Duration {
	if d := c.Tools.Defaults.ClientWait; d > 0 {
		return d
	}
	return DefaultClientWait
}

// ConfirmDestructive reports whether destructive tools holding a write,
// net or env grant ask the person before each call (security.confirm).
func (c *Config) ConfirmDestructive() bool { return !strings.EqualFold(c.Security.Confirm, "off") }

// PermissionPrompts reports whether a denied, requested capability is put
// to the person (security.prompts).
func (c *Config) PermissionPrompts() bool { return !strings.EqualFold(c.Security.Prompts, "off") }
