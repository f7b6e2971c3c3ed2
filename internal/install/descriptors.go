package install

import (
	"fmt"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/tool"
)

// checkDescriptors runs the tool-poisoning checks over r's tools, against
// the names of the tools every other loaded module serves, and resolves
// the policy for r (fetched: from a registry or a URL). Under refuse, a
// finding is an error naming it.
func (inst *Installer) checkDescriptors(cfg *config.Config, r *Review, fetched bool) error {
	pol, err := descriptorcheck.ParsePolicy(cfg.Security.DescriptorChecks)
	if err != nil {
		return fmt.Errorf("security.descriptor_checks: %w", err)
	}
	r.Policy = pol.ForInstall(fetched)
	var descs []tool.Descriptor
	for _, t := range r.Tools {
		descs = append(descs, t.Descriptor)
	}
	findings := descriptorcheck.Check(descs, inst.otherToolNames(r.Module))
	for i := range r.Tools {
		r.Tools[i].Findings = nil
		for _, f := range findings {
			if f.Tool == r.Tools[i].Descriptor.Name {
				r.Tools[i].Findings = append(r.Tools[i].Findings, f)
			}
		}
	}
	if r.Policy == descriptorcheck.Refuse && len(findings) > 0 {
		return fmt.Errorf("install %s: %w: %d finding(s), first %s", r.Source, descriptorcheck.ErrRefused, len(findings), findings[0])
	}
	return nil
}

// otherToolNames are the names of the tools of every loaded module but
// module: what a description naming them would shadow.
func (inst *Installer) otherToolNames(module string) []string {
	var names []string
	for _, m := range inst.catalog.Modules() {
		if strings.EqualFold(m.Name(), module) {
			continue
		}
		for _, t := range m.Tools() {
			names = append(names, t.Descriptor.Name)
		}
	}
	return names
}

// Findings returns every finding of r's tools, in tool order.
func (r *Review) Findings() []descriptorcheck.Finding {
	var all []descriptorcheck.Finding
	for _, t := range r.Tools {
		all = append(all, t.Findings...)
	}
	return all
}

// NeedsFindingsApproval reports whether r has findings its policy wants a
// person to approve explicitly (confirm): on a terminal the install
// prompt, otherwise --accept-findings beside --yes.
func (r *Review) NeedsFindingsApproval() bool {
	return r.Policy == descriptorcheck.Confirm && len(r.Findings()) > 0
}

// Digests are the descriptor digests Install locks for r's tools
// (tools.descriptors.<module>), by folded tool name.
func (r *Review) Digests() map[string]string {
	var descs []tool.Descriptor
	for _, t := range r.Tools {
		descs = append(descs, t.Descriptor)
	}
	return descriptorcheck.Digests(descs)
}
