package app

import (
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// List implements mcpserver.Tools: the catalog's list (catalog.Catalog.List).
func (a *App) List() []tool.Descriptor { return a.catalog.List() }

// refused is mcpserver.Options.Refused: the tools not served because
// several modules describe their name (catalog.Table), in the server's
// terms.
func (a *App) refused() []mcpserver.Refusal {
	var out []mcpserver.Refusal
	for _, r := range a.catalog.Refused() {
		out = append(out, mcpserver.Refusal{Tool: r.Tool, Module: r.Module, Modules: r.Modules, Reason: r.Reason})
	}
	return out
}

// loadErrors is mcpserver.Options.LoadErrors: the modules whose latest load
// failed, by module name, for /healthz.
func (a *App) loadErrors() []mcpserver.LoadError {
	errs := a.catalog.LoadErrors()
	out := make([]mcpserver.LoadError, len(errs))
	for i, e := range errs {
		out[i] = mcpserver.LoadError{Module: e.Module, Error: e.Err.Error()}
	}
	return out
}
