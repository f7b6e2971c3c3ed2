package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
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
	// AcceptFindings approves writing a module whose descriptors have
	// findings that security.descriptor_checks asks to confirm, when
	// config.yaml locks no descriptors for it (a lock is a person's
	// approval of exactly those descriptors, findings and all).
	AcceptFindings bool
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
	// Findings are the tool-poisoning checks' findings in the locked
	// version's descriptors (set when fetched).
	Findings []descriptorcheck.Finding
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
func (inst *Installer) Sync(ctx context.Context, modules []string, opts SyncOptions) []SyncResult {
	cfg := inst.config()
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
				if _, exists, err := ModuleFile(cfg.Tools.Dir, name); err != nil || !exists {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var out []SyncResult
	for _, name := range names {
		out = append(out, inst.syncOne(ctx, cfg, name, opts))
	}
	return out
}

// ModuleFile finds the file of module in the tools dir dir. Config keys
// (tools.pins, tools.sources) reach warden in lower case, while a file
// keeps the case it was installed with (Tool.wasm), so the file is the one
// whose name is module.wasm in any case; two such files are one module to
// config, and refused as ambiguous. When there is none, path is where the
// module belongs: dir/module.wasm, as module is spelled.
func ModuleFile(dir, module string) (path string, exists bool, err error) {
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
func (inst *Installer) syncOne(ctx context.Context, cfg *config.Config, name string, opts SyncOptions) SyncResult {
	res := SyncResult{Module: name, State: SyncFailed}
	src, hasSource := cfg.Tools.Sources[name]
	pin, pinned := cfg.Tools.Pins[name]
	if !hasSource && !pinned {
		res.Err = fmt.Errorf("no module %q in tools.sources or tools.pins of %s", termsafe.Line(name), configName(cfg))
		return res
	}
	res.Module = src.Module(name)
	dest, exists, err := ModuleFile(cfg.Tools.Dir, res.Module)
	if err != nil {
		res.Err = err
		return res
	}
	if exists {
		res.Module = catalog.ModuleName(dest) // the file as it is spelled
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
	f, err := inst.Fetch(ctx, src.Ref, FetchOptions{Digest: src.Digest})
	if err != nil {
		res.Err = err
		return res
	}
	defer f.Close()
	res.Source.Ref = f.Ref // canonical: what was matched and fetched
	res.Signature = &f.Signature
	if err := checkRecordedSigner(name, src, f.Signature); err != nil {
		res.Err = err
		return res
	}
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
	if err := inst.syncDescriptors(ctx, cfg, &res, name, f.Ref, wasm, opts); err != nil {
		res.Err = err
		return res
	}
	if exists {
		var grown bool
		if res.Changes, grown, err = inst.syncChanges(ctx, cfg, dest, res.Module, f.Ref, wasm); err != nil {
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
func (inst *Installer) syncChanges(ctx context.Context, cfg *config.Config, dest, module, ref string, wasm []byte) ([]ToolChange, bool, error) {
	var before []tool.Descriptor
	if old, err := boundedfile.Read(dest, int64(cfg.Tools.Fetch.MaxSize)); err == nil {
		if m, err := inst.rt.Load(ctx, module, old, runlimits.Module(cfg, module)); err == nil {
			for _, t := range m.Tools() {
				before = append(before, t.Descriptor)
			}
			m.Close(ctx)
		}
	}
	r, err := inst.review(ctx, ref, module, wasm)
	if err != nil {
		return nil, false, fmt.Errorf("comparing the locked version with %s: %w; nothing written", dest, err)
	}
	changes, grown := compareTools(before, r)
	return changes, grown, nil
}

// syncDescriptors checks the locked version's descriptors before it is
// written: they must be the ones tools.descriptors locks (as the catalog
// would refuse them at load otherwise), and their findings go to res;
// under refuse a finding refuses the module, under confirm one needs a
// lock or opts.AcceptFindings.
func (inst *Installer) syncDescriptors(ctx context.Context, cfg *config.Config, res *SyncResult, name, ref string, wasm []byte, opts SyncOptions) error {
	r, err := inst.review(ctx, ref, res.Module, wasm)
	if err != nil {
		return fmt.Errorf("reviewing the locked version: %w; nothing written", err)
	}
	locked := cfg.LockedDescriptors(name)
	if drift := descriptorcheck.Compare(locked, r.Digests()); len(drift) > 0 {
		return fmt.Errorf("%w: tool %s of the locked version describes itself as %s, tools.descriptors.%s.%s locks %s (config differs from where it was reviewed?); nothing written",
			descriptorcheck.ErrChanged, drift[0].Tool, drift[0].Found, name, drift[0].Tool, dash(drift[0].Locked))
	}
	err = inst.checkDescriptors(cfg, r, true)
	res.Findings = r.Findings()
	if err != nil {
		return fmt.Errorf("%w; nothing written", err)
	}
	if r.NeedsFindingsApproval() && locked == nil && !opts.AcceptFindings {
		return fmt.Errorf("the locked version's descriptors have %d finding(s) that security.descriptor_checks (confirm) asks to approve, first %s, "+
			"and config.yaml locks no descriptors for it (tools.descriptors.%s): pass --accept-findings to sync it; nothing written", len(res.Findings), res.Findings[0], name)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "none"
	}
	return s
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

// ErrSignerChanged marks a module whose signature verifies for another
// signer than its install record (tools.sources.<m>.signer) names.
var ErrSignerChanged = errors.New("signer differs from the install record")

// checkRecordedSigner refuses a fetch whose verified signer is not the one
// the install record names. The record is part of config.yaml, which is
// not signed: it is never taken as proof, only compared with what was just
// verified, so an edited record cannot make a module pass as signed by
// someone else. A record that names no verified signer ("" from before
// signers were recorded, or unsigned) asks nothing beyond the policy.
func checkRecordedSigner(name string, src config.Source, sc SignatureCheck) error {
	if src.Signer == "" || src.Signer == SignerUnsigned || sc.Signer() == src.Signer {
		return nil
	}
	return fmt.Errorf("%w: tools.sources.%s.signer is %q, but %s at %s verifies as signed by %q: refused, nothing written "+
		"(if the new signer is trusted, `warden install` the module again to record it)",
		ErrSignerChanged, name, termsafe.Line(src.Signer), termsafe.Line(src.Ref), src.Digest, termsafe.Line(sc.Signer()))
}
