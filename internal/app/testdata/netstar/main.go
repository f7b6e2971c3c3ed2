// Command netstar is a test guest whose descriptor requests net "*" and
// one explicit internal host, http://localhost:8080. It sends the net
// request in its arguments and reports the capability's answer:
//
//	{"url": "https://127.0.0.1/"} -> {"result": ...} | {"error": {"kind", "message"}}
package main

import (
	"encoding/json"
	"errors"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(netstar{}) }

// main is never called: the module is a reactor whose init registers the tool.
func main() {}

type netstar struct{}

func (netstar) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:         "netstar",
		Description:  "Test guest: fetches a URL through warden.net.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
		Capabilities: tool.Capabilities{Net: []string{"*", "http://localhost:8080"}},
	}
}

type outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *tool.Error     `json:"error,omitempty"`
}

func (netstar) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[struct {
		URL string `json:"url"`
	}](raw)
	if err != nil {
		return nil, err
	}
	var out outcome
	err = warden.Host(ctx, "net", map[string]string{"op": "request", "url": a.URL}, &out.Result)
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		out.Error = te
	case err != nil:
		out.Error = warden.Failed("%v", err)
	}
	return warden.JSON(out)
}
