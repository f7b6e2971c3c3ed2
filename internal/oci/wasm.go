package oci

import (
	"bytes"
	"fmt"
)

// wasmKind is what the first 8 bytes of a file say it is.
type wasmKind int

const (
	kindNotWasm   wasmKind = iota
	kindCore               // \0asm, version 1, layer 0: a core module
	kindComponent          // \0asm, version 0x0d, layer 1: a component
	kindUnknown            // \0asm with a version/layer warden does not know
)

var wasmMagic = []byte{0x00, 'a', 's', 'm'}

// sniffWasm classifies a WebAssembly binary by its preamble: the magic
// \0asm, then a 16-bit version and a 16-bit layer, little-endian. Core
// modules are version 1 layer 0; the component model uses layer 1 (the
// current pre-1.0 encoding is version 0x0d).
func sniffWasm(head []byte) wasmKind {
	if len(head) < 8 || !bytes.Equal(head[:4], wasmMagic) {
		return kindNotWasm
	}
	version := uint16(head[4]) | uint16(head[5])<<8
	layer := uint16(head[6]) | uint16(head[7])<<8
	switch {
	case layer == 0 && version == 1:
		return kindCore
	case layer == 1:
		return kindComponent
	default:
		return kindUnknown
	}
}

// checkCoreModule refuses anything but a core module, saying what was found.
// what names the blob for the message (e.g. "layer sha256:… (application/wasm)").
func checkCoreModule(head []byte, what string) error {
	switch sniffWasm(head) {
	case kindCore:
		return nil
	case kindComponent:
		return fmt.Errorf("%w: %s is a WebAssembly component, and warden runs core WebAssembly modules "+
			"(Extism/wasip1 plugins); ask the tool's author for a core-module build (e.g. built for wasm32-wasip1 "+
			"rather than wasm32-wasip2), or run this tool with a component runtime such as Wassette", ErrComponent, what)
	case kindUnknown:
		return fmt.Errorf("%w: %s has the WebAssembly magic but version/layer bytes % x, which are neither a core module (01 00 00 00) nor a component",
			ErrNotWasm, what, head[4:8])
	default:
		n := min(len(head), 8)
		return fmt.Errorf("%w: %s does not start with the WebAssembly magic \\0asm (first bytes % x)", ErrNotWasm, what, head[:n])
	}
}
