package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/warden-run/warden/internal/boundedfile"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/oci"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/internal/wasmfile"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// MaxPublishBytes bounds the module Inspect reads: what `warden install
// oci://…` will download (oci.DefaultMaxBytes), so that nothing is
// published that warden would refuse to fetch.
const MaxPublishBytes = oci.DefaultMaxBytes

// Inspection is what a module would serve, found by loading it in the
// sandbox before it is published.
type Inspection struct {
	Module string // the name it was loaded under (from the file name)
	Source string // the file it was read from
	SHA256 string // of the bytes inspected (hex)
	Size   int
	// Imports are the module's imports; Tools the descriptors of its valid
	// tools; Rejected its invalid ones, with the reasons.
	Imports  []string
	Tools    []tool.Descriptor
	Rejected []runtime.Rejection

	wasm []byte
}

// Bytes returns the module bytes inspected: publish pushes these, not the
// file read again, so that what was checked is what is pushed.
func (i *Inspection) Bytes() []byte { return i.wasm }

// Inspect reads the module at path once (at most MaxPublishBytes), refuses
// anything but a core WebAssembly module, and loads it in the sandbox (only
// _initialize and describe run) under a name derived from the file name to
// list its tools. A module warden could not serve, one that fails to load or
// has no valid tool, is refused. Nothing is installed and config is not
// consulted beyond the module limits for that name.
func (inst *Installer) Inspect(ctx context.Context, path string) (*Inspection, error) {
	wasm, err := boundedfile.Read(path, MaxPublishBytes)
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", termsafe.Line(path), err)
	}
	if err := wasmfile.Check(wasm[:min(len(wasm), 8)], termsafe.Line(path)); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	name := publishName(path)
	m, err := inst.rt.Load(ctx, name, wasm, runlimits.Module(inst.config(), name))
	if err != nil {
		return nil, fmt.Errorf("inspect %s: warden cannot serve this module: %w", termsafe.Line(path), err)
	}
	defer m.Close(ctx)
	sum := sha256.Sum256(wasm)
	in := &Inspection{
		Module:   name,
		Source:   path,
		SHA256:   hex.EncodeToString(sum[:]),
		Size:     len(wasm),
		Imports:  m.Imports(),
		Rejected: m.Rejected(),
		wasm:     wasm,
	}
	for _, t := range m.Tools() {
		in.Tools = append(in.Tools, t.Descriptor)
	}
	if len(in.Tools) == 0 {
		return nil, fmt.Errorf("inspect %s: the module provides no valid tool (%d rejected)", termsafe.Line(path), len(in.Rejected))
	}
	return in, nil
}

// publishName is the module name to load a file under: its name without
// .wasm, with characters a module name cannot hold replaced, or "module".
func publishName(path string) string {
	name := catalog.ModuleName(path)
	if tool.ValidName(name) {
		return name
	}
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '_'
	}, name)
	clean = strings.TrimLeft(clean, "_-.")
	if len(clean) > 128 {
		clean = clean[:128]
	}
	if tool.ValidName(clean) {
		return clean
	}
	return "module"
}
