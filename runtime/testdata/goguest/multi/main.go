// Command multi is a runtime test fixture: one module providing two tools,
// "multi_upper" and "multi_lower", which change the case of their "text".
package main

import (
	"encoding/json"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() {
	warden.Register(caser{"multi_upper", strings.ToUpper}, caser{"multi_lower", strings.ToLower})
}

func main() {}

type caser struct {
	name string
	fn   func(string) string
}

func (c caser) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        c.name,
		Description: "Runtime test fixture: changes the case of text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}
}

func (c caser) Call(_ *warden.Context, args json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[struct {
		Text string `json:"text"`
	}](args)
	if err != nil {
		return nil, err
	}
	return warden.Text(c.fn(a.Text)), nil
}
