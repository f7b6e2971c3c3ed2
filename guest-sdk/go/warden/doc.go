// Package warden is the Go SDK for writing warden tools: WebAssembly modules
// that the warden runtime loads, sandboxes and serves over MCP.
//
// A tool implements [Tool] and registers itself from an init function:
//
//	func init() { warden.Register(echo{}) }
//
// Registration must happen in init, not in main: a module built with
// GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared is a WASI reactor. The
// runtime calls its _initialize export once, which runs every package's init,
// and never calls main. A package main still needs an (empty) func main.
//
// The SDK implements the module side of the warden ABI (docs/abi.md): the
// warden_* exports, the JSON encoding of descriptors, requests and responses,
// the memory handoff with the host, and the warden.* imports behind
// [Context.Log], [Context.Progress] and [Host]. Tool code never touches
// pointers, and never needs package unsafe.
//
// A module may also serve MCP resources, resource templates and prompts, with
// completions of their arguments: see [RegisterResources],
// [RegisterTemplates], [RegisterPrompts] and [Completer].
//
// Everything except the exports themselves is plain Go, so tools can be unit
// tested on the host with [NewContext] and [Dispatch].
package warden
