package config

import (
	"log/slog"
	"strings"

	"github.com/warden-run/warden/tool"
)

// Deprecation is one setting of a config that uses a feature MCP has
// deprecated: it still works, and the operator is told what to use
// instead (RATIONALE.md, "Deprecated MCP features stay, with a warning").
type Deprecation struct {
	// Key is the setting, as config.yaml spells it: tools.grants.x.client.
	Key string
	// Value is the deprecated value of Key ("sample").
	Value string
	// Why says what deprecated it; Instead what to use instead.
	Why, Instead string
}

// deprecatedClient are the client features the 2026-07-28 revision of MCP
// deprecates (SEP-2577), with what a tool uses instead.
var deprecatedClient = map[string]Deprecation{
	tool.ClientSample: {Why: "MCP 2026-07-28 deprecates sampling (SEP-2577)",
		Instead: "the tool calls its model provider's API itself, under a net grant (tools.grants.<tool>.net)"},
	tool.ClientRoots: {Why: "MCP 2026-07-28 deprecates roots (SEP-2577)",
		Instead: "give the tool directories and files as arguments, or in config (project.roots, tools.grants.<tool>.fs)"},
}

// Deprecations lists the settings of c that use a deprecated MCP feature,
// in key order: a client grant of sample or roots.
func (c *Config) Deprecations() []Deprecation {
	var out []Deprecation
	for _, name := range sortedKeys(c.Tools.Grants) {
		for _, f := range c.Tools.Grants[name].Client {
			d, ok := deprecatedClient[strings.ToLower(f)]
			if !ok {
				continue
			}
			d.Key, d.Value = "tools.grants."+name+".client", f
			d.Instead = strings.ReplaceAll(d.Instead, "<tool>", name)
			out = append(out, d)
		}
	}
	return out
}

// WarnDeprecated logs one warning for each setting of c that uses a
// deprecated MCP feature (Deprecations), naming the key, the value and
// what to use instead. Settings also in prev (the config before a reload)
// are not logged again; prev is nil at start.
func WarnDeprecated(log *slog.Logger, c, prev *Config) {
	seen := map[Deprecation]bool{}
	if prev != nil {
		for _, d := range prev.Deprecations() {
			seen[d] = true
		}
	}
	for _, d := range c.Deprecations() {
		if !seen[d] {
			log.Warn("config uses a deprecated MCP feature; it still works", "file", c.shownFile(), "key", d.Key, "value", d.Value,
				"why", d.Why, "instead", d.Instead)
		}
	}
}
