package catalog

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// checkDescriptors applies internal/descriptorcheck to a module about to
// be put in the table: a descriptor that differs from the one locked at
// review (tools.descriptors) or, under security.descriptor_checks refuse,
// any finding, is a load error and closes m; other findings are logged.
func (c *Catalog) checkDescriptors(ctx context.Context, cfg *config.Config, name, path string, m *runtime.Module) error {
	var descs []tool.Descriptor
	for _, t := range m.Tools() {
		descs = append(descs, t.Descriptor)
	}
	var others []string
	for _, o := range c.table.Modules() {
		if o.Name() != name {
			for _, t := range o.Tools() {
				others = append(others, t.Descriptor.Name)
			}
		}
	}
	review := "warden install " + filepath.ToSlash(path)
	if _, ok := cfg.Tools.Sources[configkey.Fold(name)]; ok {
		review = "warden update " + name
	}
	findings, err := descriptorcheck.Load(name, descs, others, cfg.Security.DescriptorChecks, cfg.LockedDescriptors(name), review)
	if err != nil {
		m.Close(ctx)
		return fmt.Errorf("module %s: %w", name, err)
	}
	for _, f := range findings {
		c.log.Warn("tool descriptor finding (security.descriptor_checks)", "module", name, "finding", f.String())
	}
	return nil
}
