// Command stdoutflood is a runtime test fixture: it writes 10 MiB to stdout and to stderr, then returns ok.
package main

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "stdoutflood",
		Description: "Runtime test fixture: it writes 10 MiB to stdout and to stderr, then returns ok.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}
}

func (fixture) Call(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	for range 10 << 10 { // 10 MiB to each stream
		os.Stdout.Write(line)
		os.Stderr.Write(line)
	}
	return warden.Text("ok"), nil
}
