// Command definition is the definition tool alone in a module, as the five LSP tools
// were built before they became one module (tools-wasm/lsp): the baseline
// of BenchmarkLSPModules.
package main

import (
	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tools-wasm/lsp/definition"
)

func init() { warden.Register(definition.Tool{}) }

func main() {}
