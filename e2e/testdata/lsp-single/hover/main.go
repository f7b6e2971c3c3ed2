// Command hover is the hover tool alone in a module, as the five LSP tools
// were built before they became one module (tools-wasm/lsp): the baseline
// of BenchmarkLSPModules.
package main

import (
	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tools-wasm/lsp/hover"
)

func init() { warden.Register(hover.Tool{}) }

func main() {}
