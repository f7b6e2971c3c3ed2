// Command tool is the benchmarks' third-party tool: an echo whose tool name
// is set at link time, so that one source yields as many distinct modules
// (different bytes, different names) as a benchmark installs:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags "-X main.name=tool_07" -o tool_07.wasm
//
// It is built like the tools users ship (the Go guest SDK, encoding/json),
// so each module is about 5 MB, like bin/tools/echo.wasm.
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// name is the tool's name, set with -ldflags "-X main.name=...".
var name = "tool"

func init() { warden.Register(benchTool{}) }

// main is never called: the module is a reactor whose init registers the tool.
func main() {}

type benchTool struct{}

type args struct {
	Text string `json:"text"`
}

var yes = true

func (benchTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:         name,
		Title:        "Benchmark tool " + name,
		Description:  "Returns the given text unchanged; one of the benchmarks' many installed tools.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations:  &tool.Annotations{ReadOnlyHint: &yes, IdempotentHint: &yes},
		Version:      "1.0.0",
		Category:     "utility",
	}
}

func (benchTool) Call(_ *warden.Context, a json.RawMessage) (*tool.Result, error) {
	v, err := warden.Args[args](a)
	if err != nil {
		return nil, err
	}
	return warden.WithStructured(warden.Text(v.Text), v)
}
