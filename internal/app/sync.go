package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// SyncState is what Sync did for one module.
type SyncState string

const (
	SyncUpToDate SyncState = "up to date" // the file in the tools dir matches its pin
	SyncFetched  SyncState = "fetched"    // fetched by its locked digest and written
	SyncFailed   SyncState = "failed"     // see SyncResult.Err; nothing written
	// SyncGrown: the locked version would replace an installed module
	// file and gets more than it (SyncResult.Changes); without
	// SyncOptions.AcceptCapabilities nothing is written.
	SyncGrown SyncState = "gets more"
)

// SyncOptions are the choices of a person running Sync.
type SyncOptions struct {
	// AcceptCapabilities approves replacing an installed module by a
	// locked version that gets more than it.
	AcceptCapabilities bool
}

// SyncResult reports one module of Sync.
type SyncResult struct {
	Module    string
	Source    config.Source // zero for a module with no source; once fetched, Ref is canonical
	State     SyncState
	Err       error
	Signature *SignatureCheck // set when fetched
	// Changes is how the locked version differs from the module file it
	// replaces (set when one was there), as `warden update` shows it.
	Changes []ToolChange
}

// Sync makes the tools dir hold exactly what config.yaml locks: for each
// module with a source (tools.sources), or only those named, a file whose
// sha256 is its pin is left alone, and any other (or none) is replaced by
// the module fetched at the locked digest, which must verify under the
// signature policy and hash to the pin, or nothing is written. A pinned
// module without a source whose file is missing is reported as failed:
// there is nowhere to fetch it from. Config is never changed. It returns
// every result in module order; failures do not stop the others.
//
// Replacing a module file that is there is an update of this machine's
// module, whoever changed the lockfile (a teammate's `warden update`, a
// pull request whose pin and digest are only hex to a reviewer): it is
// compared as `warden update` compares, and a locked version that gets
// more than the file it replaces (compareTools) is written only with
// opts.AcceptCapabilities (SyncGrown otherwise).
func (a *App) Sync(ctx context.Context, modules []string, opts SyncOptions) []SyncResult {
	cfg := a.Config()
	var names []string
	for _, name := range modules {
		names = append(names, configkey.Fold(name)) // config keys are lower case
	}
	if len(names) == 0 {
		for name := range cfg.Tools.Sources {
			names = append(names, name)
		}
		for name := range cfg.Tools.Pins {
			if _, ok := cfg.Tools.Sources[name]; !ok {
				if _, exists, err := moduleFile(cfg.Tools.Dir, name); err != nil || !exists {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var out []SyncResult
	for _, name := range names {
		out = append(out, a.syncOne(ctx, cfg, name, opts))
	}
	return out
}

// moduleFile finds the file of module in the tools dir dir. Config keys
// (tools.pins, tools.sources) reach warden in lower case, while a file
// keeps the case it was installed with (Tool.wasm), so the file is the one
// whose name is module.wasm in any case; two such files are one module to
// config, and refused as ambiguous. When there is none, path is where the
// module belongs: dir/module.wasm, as module is spelled.
func moduleFile(dir, module string) (path string, exists bool, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", false, fmt.Errorf("reading the tools dir: %w", err)
	}
	var found []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".wasm"); ok && strings.EqualFold(n, module) {
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return filepath.Join(dir, module+".wasm"), false, nil
	case 1:
		return filepath.Join(dir, found[0]), true, nil
	}
	return "", false, fmt.Errorf("%s holds %s, which differ only in case: config keys ignore case (tools.pins.%s), so they are one module "+
		"to it, and warden refuses to choose; remove all but the one installed", dir, termsafe.Join(found, " and "), configkey.Fold(module))
}

// syncOne syncs the module whose config key is name.
func (a *App) syncOne(ctx context.Context, cfg *config.Config, name string, opts SyncOptions) SyncResult {
	res := SyncResult{Module: name, State: SyncFailed}
	src, hasSource := cfg.Tools.Sources[name]
	pin, pinned := cfg.Tools.Pins[name]
	if !hasSource && !pinned {
		res.Err = fmt.Errorf("no module %q in tools.sources or tools.pins of %s", termsafe.Line(name), a.configName(cfg))
		return res
	}
	res.Module = src.Module(name)
	dest, exists, err := moduleFile(cfg.Tools.Dir, res.Module)
	if err != nil {
		res.Err = err
		return res
	}
	if exists {
		res.Module = ModuleName(dest) // the file as it is spelled
	}
	if !hasSource {
		res.Err = fmt.Errorf("%s is missing and tools.sources has no entry for %s (it was installed from a local file): copy it there, or install it from a registry", dest, name)
		if sum, err := fileSHA256(dest); err == nil && sum == pin {
			res.State, res.Err = SyncUpToDate, nil
		}
		return res
	}
	res.Source = src
	if sum, err := fileSHA256(dest); err == nil && sum == pin {
		res.State = SyncUpToDate
		return res
	}
	f, err := a.Fetch(ctx, src.Ref, FetchOptions{Digest: src.Digest})
	if err != nil {
		res.Err = err
		return res
	}
	defer f.Close()
	res.Source.Ref = f.Ref // canonical: what was matched and fetched
	res.Signature = &f.Signature
	wasm, err := boundedfile.Read(f.Path, int64(cfg.Tools.Fetch.MaxSize))
	if err != nil {
		res.Err = err
		return res
	}
	sum := sha256.Sum256(wasm)
	if got := hex.EncodeToString(sum[:]); got != pin {
		res.Err = fmt.Errorf("%s@%s holds a module with sha256 %s, but tools.pins.%s is %s: refused, nothing written",
			termsafe.Line(src.Ref), src.Digest, got, name, pin)
		return res
	}
	if exists {
		var grown bool
		if res.Changes, grown, err = a.syncChanges(ctx, cfg, dest, res.Module, f.Ref, wasm); err != nil {
			res.Err = err
			return res
		}
		if grown && !opts.AcceptCapabilities {
			res.State = SyncGrown
			return res
		}
	}
	if err := writeModule(dest, wasm); err != nil {
		res.Err = err
		return res
	}
	res.State = SyncFetched
	return res
}

// syncChanges compares the module file at dest, which the locked version
// wasm (fetched from ref) is about to replace, with it. A file that does
// not load compares as a module with no tools: everything the locked
// version requests or is granted is then more.
func (a *App) syncChanges(ctx context.Context, cfg *config.Config, dest, module, ref string, wasm []byte) ([]ToolChange, bool, error) {
	var before []tool.Descriptor
	if old, err := boundedfile.Read(dest, int64(cfg.Tools.Fetch.MaxSize)); err == nil {
		if m, err := a.rt.Load(ctx, module, old, runlimits.Module(cfg, module)); err == nil {
			for _, t := range m.Tools() {
				before = append(before, t.Descriptor)
			}
			m.Close(ctx)
		}
	}
	r, err := a.review(ctx, ref, module, wasm)
	if err != nil {
		return nil, false, fmt.Errorf("comparing the locked version with %s: %w; nothing written", dest, err)
	}
	changes, grown := compareTools(before, r)
	return changes, grown, nil
}

// fileSHA256 hashes the file at path as it streams: a tools dir file of
// any size costs no memory.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

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
}

// ReviewUpdate fetches what module's source ref points to now (checked by
// the signature policy) and compares it with the installed module (call
// LoadTools first). The caller must Close u.Review.Fetched.
func (a *App) ReviewUpdate(ctx context.Context, module string) (*Update, error) {
	cfg := a.Config()
	name := configkey.Fold(module)
	src, ok := cfg.Tools.Sources[name]
	if !ok {
		return nil, fmt.Errorf("update %s: tools.sources has no entry for it (installed from a local file, or not installed): install it from oci://… or https://… first", termsafe.Line(module))
	}
	u := &Update{Module: name, Current: src}
	f, err := a.Fetch(ctx, src.Ref, FetchOptions{})
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	dest, exists, err := moduleFile(cfg.Tools.Dir, src.Module(name))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	if f.Digest == src.Digest && exists {
		if sum, err := fileSHA256(dest); err == nil && sum == cfg.Tools.Pins[name] {
			f.Close()
			u.UpToDate = true
			return u, nil
		}
	}
	// The installed version: its name as spelled on disk, and its tools.
	installedAs, before := a.installed(name)
	if installedAs == "" {
		installedAs = ModuleName(dest)
	}
	r, err := a.ReviewFetched(ctx, f, installedAs)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("update %s: %w", name, err)
	}
	u.Review = r
	u.Changes, u.Grown = compareTools(before, r)
	return u, nil
}

// installed returns the loaded module called name (ignoring case, as
// module names are unique ignoring case), as it is spelled, and its tools'
// descriptors; "" when none is loaded.
func (a *App) installed(name string) (as string, tools []tool.Descriptor) {
	for _, m := range a.registry.Modules() {
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
func (a *App) ReplacementChanges(r *Review) (changes []ToolChange, grown bool) {
	_, before := a.installed(r.Module)
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
