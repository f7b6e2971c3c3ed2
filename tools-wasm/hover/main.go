// Command hover is a bundled warden tool: the type, signature and
// documentation of the Go identifier at a position, from gopls.
//
// The logic lives in hover.go so that it is tested on the host; this file
// only registers the tool.
package main

import "github.com/warden-run/warden/guest-sdk/go/warden"

func init() { warden.Register(hover{}) }

func main() {}
