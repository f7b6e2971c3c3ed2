// Command workspace_symbols is a bundled warden tool: Go symbols anywhere
// in the project whose name matches a query, from gopls.
//
// The logic lives in workspace_symbols.go so that it is tested on the
// host; this file only registers the tool.
package main

import "github.com/warden-run/warden/guest-sdk/go/warden"

func init() { warden.Register(workspaceSymbols{}) }

func main() {}
