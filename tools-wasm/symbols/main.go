// Command symbols is a bundled warden tool: the outline of a Go file, or of
// every Go file in a directory, from gopls.
//
// The logic lives in symbols.go so that it is tested on the host; this
// file only registers the tool.
package main

import "github.com/warden-run/warden/guest-sdk/go/warden"

func init() { warden.Register(symbols{}) }

func main() {}
