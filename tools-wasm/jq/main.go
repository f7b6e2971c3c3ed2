// Command jq is a bundled warden tool that runs a jq filter over a JSON
// document, using gojq (a pure-Go implementation of jq).
//
// The logic lives in jq.go so that it is tested on the host; this file only
// registers the tool.
package main

import "github.com/warden-run/warden/guest-sdk/go/warden"

func init() { warden.Register(jqTool{}) }

func main() {}
