package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// Options are what an Installer is built from. Every field is required.
type Options struct {
	// Config returns the config in force; it is read afresh by every
	// operation, so a reload between two of them is seen.
	Config func() *config.Config
	// Reload rereads the config file after Install edited it, so that
	// Config returns what was written (config.Live.Reload).
	Reload func() error
	// Runtime loads a module in the sandbox to review or inspect it.
	Runtime *runtime.Runtime
	// Catalog is the loaded modules, which a review checks names against
	// and an update compares with.
	Catalog Catalog
}

// Catalog is what the installer needs of the loaded modules
// (*catalog.Table has it).
type Catalog interface {
	// Modules returns the loaded modules.
	Modules() []*runtime.Module
	// Candidates returns every loaded tool that describes name (ignoring
	// case), whether it serves it or is refused for it.
	Candidates(name string) []*runtime.Tool
	// RemoveIf removes module name if it is still m, and reports whether
	// it did.
	RemoveIf(name string, m *runtime.Module) bool
}

// Installer reviews, fetches, installs, syncs and updates modules; see the
// package doc.
type Installer struct {
	config  func() *config.Config
	reload  func() error
	rt      *runtime.Runtime
	catalog Catalog
	// roots caches the Sigstore trusted root (source.go).
	roots trustedRoots
}

// New returns an Installer working with what opts names.
func New(opts Options) *Installer {
	return &Installer{config: opts.Config, reload: opts.Reload, rt: opts.Runtime, catalog: opts.Catalog}
}

// ErrNameTaken marks a module whose tool names another installed module
// already provides.
var ErrNameTaken = errors.New("tool name already installed")

// Review is what installing a module would do, for a person to approve
// before Install does it.
type Review struct {
	Module string // the module name (file name without .wasm)
	Source string // the file it was read from
	Dest   string // where it will be installed
	SHA256 string // of the bytes reviewed, which are the bytes installed
	Size   int
	// Previous is the sha256 of the installed file this replaces, "" if none.
	Previous string
	Imports  []string
	Tools    []ToolReview
	Rejected []runtime.Rejection
	// Origin is set for a module fetched from a registry or a URL: what
	// Install records as tools.sources.<module>. A local file has none,
	// and installing one removes the module's source.
	Origin *config.Source
	// Fetched describes where a fetched module came from and what its
	// signature check decided; nil for a local file.
	Fetched *Fetched
	// Policy is what the tools' findings (ToolReview.Findings) need:
	// security.descriptor_checks resolved for this module's origin.
	Policy descriptorcheck.Policy

	wasm []byte
}

// ToolReview is one tool of a reviewed module.
type ToolReview struct {
	Descriptor tool.Descriptor
	// Granted is what config grants the tool today, served by this module:
	// nothing when its grant entry is bound to another module (Elsewhere).
	Granted tool.Capabilities
	// Elsewhere is set when config has a grant entry for the tool's name
	// that belongs to another module; installing does not move it.
	Elsewhere error
	// Missing is what the tool requests beyond Granted.
	Missing tool.Capabilities
	// Config names the keys of the tool's own configuration
	// (tools.grants.<tool>.config) it reads once installed: like Granted,
	// only while this module serves it. Never the values, which may be
	// secrets.
	Config []string
	// Findings are the tool-poisoning checks' findings in its descriptor
	// (internal/descriptorcheck), for the person to look at.
	Findings []descriptorcheck.Finding
}

// ReviewInstall reads the module at path once and loads those bytes in the
// sandbox (only _initialize and describe run) to show what it is. name is
// the module name to install under ("" for the file's name). It refuses a
// module with no valid tool, and one whose tool names another module in
// the catalog already provides (load the tools dir into it first: the
// catalog's LoadTools); a module replacing one of the same name may reuse its
// tool names.
func (inst *Installer) ReviewInstall(ctx context.Context, path, name string) (*Review, error) {
	if name == "" {
		name = catalog.ModuleName(path)
	}
	if err := inst.checkModuleName(path, name); err != nil {
		return nil, err
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("install: %w", err)
	}
	r, err := inst.review(ctx, path, name, wasm)
	if err != nil {
		return nil, err
	}
	if err := inst.checkDescriptors(inst.config(), r, false); err != nil {
		return nil, err
	}
	return r, nil
}

// ReviewFetched is ReviewInstall for a module Fetch brought: name ""
// means f.DefaultModuleName(). The review records f's source, so that
// Install writes it into tools.sources.
func (inst *Installer) ReviewFetched(ctx context.Context, f *Fetched, name string) (*Review, error) {
	if name == "" {
		name = f.DefaultModuleName()
	}
	if err := inst.checkModuleName(f.Ref, name); err != nil {
		return nil, err
	}
	wasm, err := boundedfile.Read(f.Path, int64(inst.config().Tools.Fetch.MaxSize))
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", f.Ref, err)
	}
	r, err := inst.review(ctx, f.Ref, name, wasm)
	if err != nil {
		return nil, err
	}
	r.Origin = &config.Source{Ref: f.Ref, Digest: f.Digest, Signer: f.Signature.Signer()}
	r.Fetched = f
	if err := inst.checkDescriptors(inst.config(), r, true); err != nil {
		return nil, err
	}
	return r, nil
}

func (inst *Installer) checkModuleName(path, name string) error {
	if !tool.ValidName(name) {
		return fmt.Errorf("install %s: module name %q must be %s (choose one with --name)", path, name, tool.NameRule)
	}
	// Config keys (tools.pins, tools.limits) ignore case: a second module
	// named like an installed one in other case would take over its pin.
	for _, m := range inst.catalog.Modules() {
		if m.Name() != name && strings.EqualFold(m.Name(), name) {
			return fmt.Errorf("install %s: module name %q differs only in case from installed module %q, and config keys ignore case "+
				"(tools.pins.%s); install it as %q to replace that module, or under another name",
				path, name, m.Name(), configkey.Fold(name), m.Name())
		}
	}
	return nil
}

// review loads wasm in the sandbox (only _initialize and describe run) and
// describes what installing it as name would do.
func (inst *Installer) review(ctx context.Context, path, name string, wasm []byte) (*Review, error) {
	cfg := inst.config()
	m, err := inst.rt.Load(ctx, name, wasm, runlimits.Module(cfg, name))
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", path, err)
	}
	defer m.Close(ctx)
	sum := sha256.Sum256(wasm)
	r := &Review{
		Module:   name,
		Source:   path,
		Dest:     filepath.Join(cfg.Tools.Dir, name+".wasm"),
		SHA256:   hex.EncodeToString(sum[:]),
		Size:     len(wasm),
		Imports:  m.Imports(),
		Rejected: m.Rejected(),
		wasm:     wasm,
	}
	for _, t := range m.Tools() {
		granted, elsewhere := cfg.Grants(t.Descriptor.Name, name)
		tr := ToolReview{
			Descriptor: t.Descriptor,
			Granted:    granted,
			Missing:    Missing(t.Descriptor.Capabilities, granted),
			Config:     slices.Sorted(maps.Keys(cfg.ToolConfig(t.Descriptor.Name, name))),
		}
		if elsewhere != nil {
			tr.Elsewhere = elsewhere
		}
		r.Tools = append(r.Tools, tr)
	}
	if len(r.Tools) == 0 {
		return nil, fmt.Errorf("install %s: the module provides no valid tool (%d rejected)", path, len(r.Rejected))
	}
	if err := inst.checkNames(r); err != nil {
		return nil, fmt.Errorf("install %s: %w", path, err)
	}
	if old, err := os.ReadFile(r.Dest); err == nil {
		oldSum := sha256.Sum256(old)
		r.Previous = hex.EncodeToString(oldSum[:])
	}
	return r, nil
}

// checkNames refuses tool names (ignoring case) another loaded module
// describes, whether it serves them or is refused for them.
func (inst *Installer) checkNames(r *Review) error {
	var taken []string
	for _, t := range r.Tools {
		for _, other := range inst.catalog.Candidates(t.Descriptor.Name) {
			if other.Module().Name() != r.Module {
				taken = append(taken, fmt.Sprintf("%q (module %s describes %q)", t.Descriptor.Name, other.Module().Name(), other.Descriptor.Name))
			}
		}
	}
	if len(taken) > 0 {
		return fmt.Errorf("%w: %s; remove that module first, or install this one under its name to replace it",
			ErrNameTaken, strings.Join(taken, ", "))
	}
	return nil
}

// Install does what r describes: it writes the reviewed bytes into the
// tools dir (a temporary file renamed over the old one, so a watcher never
// loads half a file), then pins r.SHA256 under tools.pins in the config
// file (validated and replaced atomically, comments kept), then binds each
// tool's grant entry to the module (bindGrants). The file goes first: a
// running server refuses the new bytes against the old pin and keeps the
// previous version serving, then the new pin makes it load them, in one
// config change that holds back any rival for the name meanwhile (the
// app's configChanged). With the pin first, the server would unload the
// old version at once and, until the file arrived, an impostor describing
// the same name would be its only candidate. The config is reloaded
// (Options.Reload). A serving app loads the module through its tools-dir
// watcher; otherwise call the catalog's LoadTools.
func (inst *Installer) Install(ctx context.Context, r *Review) error {
	cfg := inst.config()
	if cfg.File == "" {
		return errors.New("install: no config file to pin the module in: create config.yaml or pass --config")
	}
	if err := inst.checkNames(r); err != nil {
		return fmt.Errorf("install %s: %w", r.Source, err)
	}
	if err := writeModule(r.Dest, r.wasm); err != nil {
		return fmt.Errorf("install %s: %w", r.Source, err)
	}
	// The catalog holds the version being replaced (to check names):
	// drop it now, or the new pin would unload it with an error as if the
	// file had been tampered with.
	for _, m := range inst.catalog.Modules() {
		if m.Name() == r.Module && m.SHA256() != r.SHA256 && inst.catalog.RemoveIf(m.Name(), m) {
			m.Close(ctx)
		}
	}
	if _, err := config.EditFile(cfg.File, func(d *config.Document) error {
		if err := d.Pin(r.Module, r.SHA256); err != nil {
			return err
		}
		// The descriptors as reviewed are locked with the bytes: at load,
		// a module describing itself otherwise is refused (ErrDescriptorChanged).
		if err := d.LockDescriptors(r.Module, r.Digests()); err != nil {
			return err
		}
		// The pin and the source change together: a lockfile never names
		// one module's source with another's sha256.
		if r.Origin != nil {
			return d.SetSource(r.Module, *r.Origin)
		}
		return d.DeleteSource(r.Module)
	}); err != nil {
		return fmt.Errorf("install %s: %s is in place but not pinned (a serving warden refuses it and keeps the previous version): pin: %w", r.Source, r.Dest, err)
	}
	if err := inst.reload(); err != nil {
		return fmt.Errorf("install %s: reload config: %w", r.Source, err)
	}
	// Only now, with the module in place: the bindings grant nothing by
	// themselves, and a failed copy leaves the file as it was.
	if _, err := config.EditFile(cfg.File, func(d *config.Document) error { return bindGrants(d, r) }); err != nil {
		return fmt.Errorf("install %s: installed and pinned, but writing tools.grants.<tool>.module failed: %w", r.Source, err)
	}
	if err := inst.reload(); err != nil {
		return fmt.Errorf("install %s: reload config: %w", r.Source, err)
	}
	return nil
}

// bindGrants writes the module field of each reviewed tool's grant entry,
// so that what is granted to it later belongs to this module and no other:
// a new entry is created ({module: M}, granting nothing), an entry without
// the field that already meant this module gets it spelled out, and an
// entry bound to another module is left alone (the review said so).
func bindGrants(d *config.Document, r *Review) error {
	for _, t := range r.Tools {
		name := t.Descriptor.Name
		entry, err := d.Get("tools", "grants", name)
		if err != nil {
			return err
		}
		if entry != nil {
			module, err := d.GrantModule(name)
			if err != nil {
				return err
			}
			if module == "" {
				module = configkey.Fold(name)
			}
			if module != r.Module {
				continue
			}
		}
		if err := d.BindGrant(name, r.Module); err != nil {
			return err
		}
	}
	return nil
}

// writeModule writes wasm to dest atomically. The temporary name does not
// end in .wasm, so the tools-dir watcher ignores it.
func writeModule(dest string, wasm []byte) error {
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".install-*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(wasm)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dest)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", dest, err)
	}
	return nil
}
