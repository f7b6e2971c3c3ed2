package catalog

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// List lists the tools served to clients now, sorted by name: served by
// the table, exposed by the policy in force (tools.expose, tools.hide), and
// not held back (HeldBy).
func (c *Catalog) List() []tool.Descriptor {
	tools := c.table.Tools()
	pol := c.policy()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]tool.Descriptor, 0, len(tools))
	for _, t := range tools {
		if tp := pol.Tool(t.Descriptor.Name); tp.Exposed && c.heldBy(pol.Config(), tp.Bound, tp.HasGrant, t) == "" {
			// As config has it: tools.tasks may force or forbid tasks.
			out = append(out, tp.Describe(t.Descriptor))
		}
	}
	return out
}

// HeldBy returns the module, still loading in the background, that t's
// name waits for, or "" when t may be served now. The tool table is a
// function of every module (Table), so until all are loaded a name could
// still be contested; serving the first module to finish would let a small
// impostor answer, briefly, for the tool a person reviewed. So during the
// initial load a tool is held back when a module that would beat it may
// still arrive:
//   - a tool of an unpinned module, while any module that config pins is
//     loading (a pinned module wins every collision);
//   - a tool whose name config grants to another module (tools.grants.<tool>
//     and its module field), while that module is loading.
//
// Tools of two unpinned modules that no grant names are served in the order
// they load until the second arrives, then both are refused: neither has a
// grant, and neither was reviewed.
//
// The caller has resolved t's grant entry already: granted is whether
// config has one for t's name, bound the module it belongs to
// (policy.ToolPolicy's HasGrant and Bound, or config.GrantModule's).
func (c *Catalog) HeldBy(cfg *config.Config, bound string, granted bool, t *runtime.Tool) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.heldBy(cfg, bound, granted, t)
}

// heldBy is HeldBy; callers hold c.mu.
func (c *Catalog) heldBy(cfg *config.Config, bound string, granted bool, t *runtime.Tool) string {
	if len(c.loading) == 0 {
		return ""
	}
	module := t.Module()
	if granted && bound != module.Name() && c.loading[bound] {
		return bound
	}
	if !c.table.Pinned(module) {
		for _, name := range slices.Sorted(maps.Keys(c.loading)) {
			if _, pinned := cfg.Tools.Pins[configkey.Fold(name)]; pinned {
				return name
			}
		}
	}
	return ""
}

// Refused lists the tools not served because several modules describe
// their name, sorted by name and module (see Table).
func (c *Catalog) Refused() []Refusal { return c.table.Refused() }

// LoadError is the latest load failure of a module file.
type LoadError struct {
	// Module is the module the file loads as (ModuleName).
	Module string
	// Err names the file and says what failed.
	Err error
}

// LoadErrors lists the modules whose latest load failed, sorted by module
// name, for /healthz and `warden tools`.
func (c *Catalog) LoadErrors() []LoadError {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]LoadError, 0, len(c.loadErrors))
	for path, err := range c.loadErrors {
		out = append(out, LoadError{Module: ModuleName(path), Err: err})
	}
	slices.SortFunc(out, func(x, y LoadError) int { return cmp.Compare(x.Module, y.Module) })
	return out
}

// logLoadSummary logs one line once every module of the tools dir was
// tried: an error when no tool is served because modules failed, a warning
// when some failed.
func (c *Catalog) logLoadSummary(modules int) {
	failed := c.LoadErrors()
	if len(failed) == 0 {
		return
	}
	tools := len(c.table.Tools())
	names := make([]string, len(failed))
	for i, f := range failed {
		names[i] = f.Module
	}
	if tools == 0 {
		c.log.Error(fmt.Sprintf("no tools served: %d of %d modules failed to load (errors above; /healthz lists them)", len(failed), modules),
			"dir", c.config().Tools.Dir, "failed", names)
		return
	}
	c.log.Warn(fmt.Sprintf("%d tools served; %d of %d modules failed to load (errors above; /healthz lists them)", tools, len(failed), modules),
		"dir", c.config().Tools.Dir, "failed", names)
}

// logRefusals logs the tools refused for name collisions that involve
// module (every refusal when module is ""), loudly: a tool someone
// expects has stopped being served, or a module's tool never was.
func (c *Catalog) logRefusals(module string) {
	for _, r := range c.table.Refused() {
		if module == "" || slices.Contains(r.Modules, module) {
			c.log.Error("tool refused", "tool", r.Tool, "module", r.Module, "modules", r.Modules, "reason", r.Reason)
		}
	}
}
