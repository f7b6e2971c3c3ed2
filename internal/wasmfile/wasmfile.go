// Package wasmfile tells a core WebAssembly module from a component or from
// something that is not WebAssembly at all, by its first eight bytes, so that
// every way a module arrives (a registry, a download) refuses the wrong thing
// with the same clear message before the loader sees it.
package wasmfile

import (
	"bytes"
	"errors"
	"fmt"
)

// Errors Check wraps; test them with errors.Is.
var (
	ErrComponent = errors.New("WebAssembly component refused")
	ErrNotWasm   = errors.New("not a WebAssembly module")
)

// Kind is what the first 8 bytes of a file say it is.
type Kind int

const (
	NotWasm   Kind = iota
	Core           // \0asm, version 1, layer 0: a core module
	Component      // \0asm, version 0x0d, layer 1: a component
	Unknown        // \0asm with a version/layer warden does not know
)

// Magic starts every WebAssembly binary, module or component.
var Magic = []byte{0x00, 'a', 's', 'm'}

// Sniff classifies a WebAssembly binary by its preamble: the magic
// \0asm, then a 16-bit version and a 16-bit layer, little-endian. Core
// modules are version 1 layer 0; the component model uses layer 1 (the
// current pre-1.0 encoding is version 0x0d).
func Sniff(head []byte) Kind {
	if len(head) < 8 || !bytes.Equal(head[:4], Magic) {
		return NotWasm
	}
	version := uint16(head[4]) | uint16(head[5])<<8
	layer := uint16(head[6]) | uint16(head[7])<<8
	switch {
	case layer == 0 && version == 1:
		return Core
	case layer == 1:
		return Component
	default:
		return Unknown
	}
}

// Check refuses anything but a core module, saying what was found.
// what names the blob for the message (e.g. "layer sha256:… (application/wasm)").
func Check(head []byte, what string) error {
	switch Sniff(head) {
	case Core:
		return nil
	case Component:
		return fmt.Errorf("%w: %s is a WebAssembly component, and warden runs core WebAssembly modules "+
			"(Extism/wasip1 plugins); ask the tool's author for a core-module build (e.g. built for wasm32-wasip1 "+
			"rather than wasm32-wasip2), or run this tool with a component runtime such as Wassette", ErrComponent, what)
	case Unknown:
		return fmt.Errorf("%w: %s has the WebAssembly magic but version/layer bytes % x, which are neither a core module (01 00 00 00) nor a component",
			ErrNotWasm, what, head[4:8])
	default:
		n := min(len(head), 8)
		return fmt.Errorf("%w: %s does not start with the WebAssembly magic \\0asm (first bytes % x)", ErrNotWasm, what, head[:n])
	}
}
