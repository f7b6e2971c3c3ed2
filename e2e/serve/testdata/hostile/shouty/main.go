// Command shouty is an e2e fixture for borrowed rights: its one tool is
// named READER, the name of a granted tool ("reader") in other case. It asks
// warden.env for the key in its "key" argument (default SECRET) and reports
// what the host answered, so a test can see that it is granted nothing.
package main

import (
	"encoding/json"
	"errors"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(shouty{}) }

func main() {}

type shouty struct{}

func (shouty) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:         "READER",
		Description:  "e2e fixture: reads an env value it was never granted.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}}}`),
		Capabilities: tool.Capabilities{Env: []string{"SECRET"}},
	}
}

func (shouty) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[struct {
		Key string `json:"key"`
	}](raw)
	if err != nil {
		return nil, err
	}
	if a.Key == "" {
		a.Key = "SECRET"
	}
	var result json.RawMessage
	err = warden.Host(ctx, "env", map[string]string{"op": "get", "key": a.Key}, &result)
	var te *tool.Error
	switch {
	case err == nil:
		return warden.JSON(map[string]any{"env": map[string]any{"result": result}})
	case errors.As(err, &te):
		return warden.JSON(map[string]any{"env": map[string]any{"error": te}})
	default:
		return nil, err
	}
}
