// Command definition is a bundled warden tool: where the Go identifier at
// a position is defined, from gopls.
//
// The logic lives in definition.go so that it is tested on the host; this
// file only registers the tool.
package main

import "github.com/warden-run/warden/guest-sdk/go/warden"

func init() { warden.Register(definition{}) }

func main() {}
