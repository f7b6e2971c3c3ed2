package app

import (
	"slices"

	"github.com/warden-run/warden/mcpserver"
)

var _ mcpserver.ScopePolicy = (*App)(nil)

// ToolScopes returns the OAuth scopes a call of the tool called name needs
// (tools.scopes, as config stands now) and the config line that says so.
func (a *App) ToolScopes(name string) (scopes []string, source string) {
	tp := a.Policy().Tool(name)
	if !tp.Scoped {
		return nil, ""
	}
	return slices.Clone(tp.Scopes), a.configLine("tools.scopes." + tp.ScopeKey)
}

// SupportedScopes lists every scope tools.scopes names.
func (a *App) SupportedScopes() []string { return a.Policy().SupportedScopes() }
