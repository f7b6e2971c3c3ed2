// Command lsp is warden's bundled module of code navigation tools, all
// answered by real language servers (gopls, pyright, typescript-language-
// server, clangd, rust-analyzer) through the host's warden.lsp capability:
// symbols, definition, references, hover and workspace_symbols.
//
// The five tools are one module so that warden compiles, snapshots and
// keeps in memory one Go runtime for them instead of five (RATIONALE.md,
// "One module for the LSP tools"). Each keeps its own name, descriptor and
// grant (tools.grants.<tool>, bound to module lsp): the host passes each
// call the grants of the tool called, never the module's.
//
// The tools live in one package each; this file only registers them.
package main

import (
	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tools-wasm/lsp/definition"
	"github.com/warden-run/warden/tools-wasm/lsp/hover"
	"github.com/warden-run/warden/tools-wasm/lsp/references"
	"github.com/warden-run/warden/tools-wasm/lsp/symbols"
	"github.com/warden-run/warden/tools-wasm/lsp/workspacesymbols"
)

func init() {
	warden.Register(symbols.Tool{}, definition.Tool{}, references.Tool{}, hover.Tool{}, workspacesymbols.Tool{})
}

func main() {}
