package config

import (
	"fmt"

	"github.com/warden-run/warden/tool"
)

// AdoptGrant binds the tool's grant entry, written before grants belonged
// to modules, to module: it writes tools.grants.<tool>.module on an entry
// that exists and has no module field, and refuses anything else (no entry,
// one already bound). Unlike BindGrant it moves what the entry holds to
// module, the one thing it exists for: it is the migration's edit, which
// the person reviewed with the entry's content and the module's pin in
// front of them (warden migrate). Every other writer goes through
// BindGrant.
func (d *Document) AdoptGrant(toolName, module string) error {
	if err := checkToolName(toolName); err != nil {
		return err
	}
	if !tool.ValidName(module) {
		return fmt.Errorf("tools.grants.%s.module: %q is not a module name (%s)", toolName, module, tool.NameRule)
	}
	_, exists, err := d.GrantBinding(toolName)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("tools.grants.%s: no such entry", toolName)
	}
	cur, err := d.GrantModule(toolName)
	if err != nil {
		return err
	}
	if cur != "" {
		return fmt.Errorf("tools.grants.%s.module: already %s", toolName, cur)
	}
	return d.Set(Str(module), "tools", "grants", toolName, "module")
}
