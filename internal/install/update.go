package install

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// Update is what `warden update` would do to one module.
type Update struct {
	Module  string
	Current config.Source
	// UpToDate: the ref still resolves to the locked digest and the file
	// matches its pin; Review is nil.
	UpToDate bool
	// Review is the new module's install review (its Origin is the new
	// digest); Install(Review) applies the update.
	Review *Review
	// Changes lists each tool of the old and new module that differs.
	Changes []ToolChange
	// Grown is true when some tool requests capabilities its previous
	// version did not, or a new tool requests any or is granted any by a
	// grant entry already bound to the module: the person must approve
	// that explicitly.
	Grown bool
	// Reworded is true when some tool changes what it tells the model
	// (title, description, schemas or annotations: ToolChange.Text), or
	// describes itself otherwise than the lock (Drift): a rug pull is a
	// change of words alone, so the person approves it explicitly too.
	Reworded bool
	// Drift lists the tools of the new version whose descriptor differs
	// from the one locked in tools.descriptors, when the module's bytes
	// did not change (its description depends on its config, say).
	Drift []descriptorcheck.Drift
}

// ToolChange is how one tool differs between the installed module and
// its update.
type ToolChange struct {
	Name string
	// Kind is "added", "removed" or "changed".
	Kind string
	// Fields names the descriptor fields that changed.
	Fields []string
	// Grown is what the new version requests beyond the old one.
	Grown tool.Capabilities
	// Dropped is what the old version requested that the new one does not.
	Dropped tool.Capabilities
	// Granted, for an added tool, is what config grants it already (an
	// entry bound to this module: one a tool the module dropped left
	// behind, or one written ahead): it runs with that from the update
	// on, whatever it requests. GrantKey is that entry, tools.grants.<key>.
	Granted  tool.Capabilities
	GrantKey string
	// Config, for an added tool, names the keys of its own configuration
	// (tools.grants.<GrantKey>.config) that entry already holds.
	Config []string
	// Text is a word-level diff of each changed field a model reads.
	Text []TextChange
}

// TextChange is how one field a model reads changed: Field is title,
// description, inputSchema, outputSchema or annotations (schemas and
// annotations as indented canonical JSON).
type TextChange struct {
	Field string
	Diff  []WordEdit
}

// ReviewUpdate fetches what module's source ref points to now (checked by
// the signature policy) and compares it with the installed module, as the
// catalog holds it (the catalog's LoadTools first). The caller must Close
// u.Review.Fetched.
func (inst *Installer) ReviewUpdate(ctx context.Context, module string) (*Update, error) {
	cfg := inst.config()
	name := configkey.Fold(module)
	src, ok := cfg.Tools.Sources[name]
	if !ok {
		return nil, fmt.Errorf("update %s: tools.sources has no entry for it (installed from a local file, or not installed): install it from oci://… or https://… first", termsafe.Line(module))
	}
	u := &Update{Module: name, Current: src}
	f, err := inst.Fetch(ctx, src.Ref, FetchOptions{})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	dest, exists, err := ModuleFile(cfg.Tools.Dir, src.Module(name))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	sameBytes := false
	if f.Digest == src.Digest && exists {
		if sum, err := fileSHA256(dest); err == nil && sum == cfg.Tools.Pins[name] {
			sameBytes = true
			if cfg.LockedDescriptors(name) == nil {
				f.Close()
				u.UpToDate = true
				return u, nil
			}
		}
	}
	// The installed version: its name as spelled on disk, and its tools.
	installedAs, before := inst.installed(name)
	if installedAs == "" {
		installedAs = catalog.ModuleName(dest)
	}
	r, err := inst.ReviewFetched(ctx, f, installedAs)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	if sameBytes {
		// The same bytes: up to date unless they describe themselves
		// otherwise than what was reviewed (a description that depends
		// on config), which is what the catalog refuses at load.
		u.Drift = descriptorcheck.Compare(cfg.LockedDescriptors(name), r.Digests())
		if len(u.Drift) == 0 {
			f.Close()
			u.UpToDate = true
			return u, nil
		}
		u.Reworded = true
	}
	u.Review = r
	u.Changes, u.Grown = compareTools(before, r)
	for _, c := range u.Changes {
		u.Reworded = u.Reworded || len(c.Text) > 0
	}
	return u, nil
}

// installed returns the loaded module called name (ignoring case, as
// module names are unique ignoring case), as it is spelled, and its tools'
// descriptors; "" when none is loaded.
func (inst *Installer) installed(name string) (as string, tools []tool.Descriptor) {
	for _, m := range inst.catalog.Modules() {
		if strings.EqualFold(m.Name(), name) {
			as = m.Name()
			for _, t := range m.Tools() {
				tools = append(tools, t.Descriptor)
			}
		}
	}
	return as, tools
}

// ReplacementChanges compares the reviewed module r with the installed
// module it replaces (r.Previous set), as an update is compared: what its
// tools request beyond the installed version's, and what config already
// grants a tool it adds. A module not loaded (its file does not load)
// compares as one with no tools, so everything r requests is more.
func (inst *Installer) ReplacementChanges(r *Review) (changes []ToolChange, grown bool) {
	_, before := inst.installed(r.Module)
	return compareTools(before, r)
}

// compareTools is how the reviewed module r differs from the tools of the
// version it replaces (before): diffTools over the descriptors, and, for
// each tool r adds, what config grants it already (and the keys of its
// own config it would read). What config grants is
// what a tool runs with, not what it requests: a tool the new version adds
// gets its entry's grant at once (an entry bound to the module that a tool
// it dropped left behind, or one written ahead), so that grant is growth
// the person approves with this version. A tool kept from the installed
// version keeps its grant, which the person saw it get.
func compareTools(before []tool.Descriptor, r *Review) (changes []ToolChange, grown bool) {
	var after []tool.Descriptor
	for _, t := range r.Tools {
		after = append(after, t.Descriptor)
	}
	changes, grown = diffTools(before, after)
	for i, c := range changes {
		if c.Kind != "added" {
			continue
		}
		for _, t := range r.Tools {
			if t.Descriptor.Name == c.Name && (!t.Granted.IsZero() || len(t.Config) > 0) {
				changes[i].Granted, changes[i].Config, changes[i].GrantKey = t.Granted, t.Config, configkey.Fold(c.Name)
				grown = true
			}
		}
	}
	return changes, grown
}

// diffTools compares two versions of a module's tools by name. A tool's
// growth is what its new descriptor requests that the old one does not
// cover (Missing, which is capset.Missing), in every dimension: a host
// named beside "*" that "*" never reached, memory topics dropped (the
// whole store), a level raised. grown is true exactly when some tool grew.
func diffTools(before, after []tool.Descriptor) (changes []ToolChange, grown bool) {
	old := map[string]tool.Descriptor{}
	for _, d := range before {
		old[configkey.Fold(d.Name)] = d
	}
	seen := map[string]bool{}
	for _, d := range after {
		key := configkey.Fold(d.Name)
		seen[key] = true
		o, ok := old[key]
		if !ok {
			c := ToolChange{Name: d.Name, Kind: "added", Grown: Missing(d.Capabilities, tool.Capabilities{})}
			grown = grown || !c.Grown.IsZero()
			changes = append(changes, c)
			continue
		}
		c := ToolChange{Name: d.Name, Kind: "changed",
			Grown:   Missing(d.Capabilities, o.Capabilities),
			Dropped: Missing(o.Capabilities, d.Capabilities)}
		c.Fields = changedFields(o, d)
		c.Text = textChanges(o, d)
		if len(c.Fields) > 0 {
			grown = grown || !c.Grown.IsZero()
			changes = append(changes, c)
		}
	}
	for _, d := range before {
		if !seen[configkey.Fold(d.Name)] {
			changes = append(changes, ToolChange{Name: d.Name, Kind: "removed", Dropped: d.Capabilities})
		}
	}
	return changes, grown
}

func changedFields(a, b tool.Descriptor) []string {
	var out []string
	add := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	add("name", a.Name != b.Name)
	add("title", a.Title != b.Title)
	add("description", a.Description != b.Description)
	add("version", a.Version != b.Version)
	add("inputSchema", !sameJSON(a.InputSchema, b.InputSchema))
	add("outputSchema", !sameJSON(a.OutputSchema, b.OutputSchema))
	add("annotations", !sameJSON(mustJSON(a.Annotations), mustJSON(b.Annotations)))
	add("capabilities", !sameJSON(mustJSON(a.Capabilities), mustJSON(b.Capabilities)))
	add("tags", !slices.Equal(a.Tags, b.Tags))
	add("category", a.Category != b.Category)
	add("timeoutMs", a.TimeoutMillis != b.TimeoutMillis)
	add("paginates", a.Paginates != b.Paginates)
	return out
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// sameJSON compares two JSON documents ignoring formatting.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y bytes.Buffer
	if json.Compact(&x, a) != nil || json.Compact(&y, b) != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(x.Bytes(), &va) != nil || json.Unmarshal(y.Bytes(), &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}
