package app

import (
	"context"

	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// mcpserver finds what the catalog can tell it through these methods of
// the value it serves (mcpserver.Tools and its optional interfaces); each
// hands the question to the catalog, in mcpserver's types.

var (
	_ mcpserver.Loader            = (*App)(nil)
	_ mcpserver.StartupLoader     = (*App)(nil)
	_ mcpserver.LoadCounter       = (*App)(nil)
	_ mcpserver.Refuser           = (*App)(nil)
	_ mcpserver.LoadErrorReporter = (*App)(nil)
)

// List implements mcpserver.Tools (catalog.Catalog.List).
func (a *App) List() []tool.Descriptor { return a.catalog.List() }

// Loading implements mcpserver.Loader (catalog.Catalog.Loading).
func (a *App) Loading() []string { return a.catalog.Loading() }

// AwaitLoad implements mcpserver.Loader (catalog.Catalog.AwaitLoad).
func (a *App) AwaitLoad(ctx context.Context) bool { return a.catalog.AwaitLoad(ctx) }

// StartupLoaded implements mcpserver.StartupLoader
// (catalog.Catalog.StartupLoaded).
func (a *App) StartupLoaded() bool { return a.catalog.StartupLoaded() }

// LoadsEnded implements mcpserver.LoadCounter (catalog.Catalog.LoadsEnded).
func (a *App) LoadsEnded() uint64 { return a.catalog.LoadsEnded() }

// Refused implements mcpserver.Refuser: the tools not served because
// several modules describe their name (catalog.Table).
func (a *App) Refused() []mcpserver.Refusal {
	var out []mcpserver.Refusal
	for _, r := range a.catalog.Refused() {
		out = append(out, mcpserver.Refusal{Tool: r.Tool, Module: r.Module, Modules: r.Modules, Reason: r.Reason})
	}
	return out
}

// LoadErrors implements mcpserver.LoadErrorReporter: the modules whose
// latest load failed, by module name, for /healthz.
func (a *App) LoadErrors() []mcpserver.LoadError {
	errs := a.catalog.LoadErrors()
	out := make([]mcpserver.LoadError, len(errs))
	for i, e := range errs {
		out[i] = mcpserver.LoadError{Module: e.Module, Error: e.Err.Error()}
	}
	return out
}

// ModuleName is the name a module file loads under: its base name without
// .wasm (catalog.ModuleName).
func ModuleName(path string) string { return catalog.ModuleName(path) }
