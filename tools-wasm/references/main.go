// Command references is a bundled warden tool: every place in the project
// that uses the Go identifier at a position, from gopls.
//
// The logic lives in references.go so that it is tested on the host; this
// file only registers the tool.
package main

import "github.com/warden-run/warden/guest-sdk/go/warden"

func init() { warden.Register(references{}) }

func main() {}
