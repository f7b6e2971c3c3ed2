// Command echo is warden's smallest bundled tool: it returns its argument.
// It is the tool the runtime's benchmarks call, so it stays minimal.
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(echo{}) }

// main is never called: the module is a reactor whose init registers the tool.
func main() {}

type echo struct{}

type echoArgs struct {
	Text string `json:"text"`
}

var yes = true

func (echo) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:         "echo",
		Title:        "Echo",
		Description:  "Returns the given text unchanged. Useful to test that tools work.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Annotations:  &tool.Annotations{ReadOnlyHint: &yes, IdempotentHint: &yes},
		Version:      "1.0.0",
		Category:     "utility",
	}
}

func (echo) Call(_ *warden.Context, args json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[echoArgs](args)
	if err != nil {
		return nil, err
	}
	return warden.WithStructured(warden.Text(a.Text), a)
}
