// Command slow is the fair-share benchmark's slow tool: each call makes one
// HTTP GET, through its net grant, to the URL it is given (a loopback server
// of the benchmark that answers after a fixed delay) and returns the body.
// It is slow by waiting on the host, not by computing, so that on a small
// machine a flood of its calls measures admission, not CPU contention: a
// call waiting in warden.net burns no fuel and no CPU. Its tool name is set
// at link time, so that one source yields several slow modules:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags "-X main.name=slow_2" -o slow_2.wasm
package main

import (
	"encoding/json"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(slowTool{}) }

// main is never called: the module is a reactor whose init registers the tool.
func main() {}

type slowTool struct{}

type args struct {
	URL string `json:"url"`
}

// name is the tool's name, set with -ldflags "-X main.name=...".
var name = "slow"

var yes = true

func (slowTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:         name,
		Title:        "Slow tool " + name,
		Description:  "GETs the given URL and returns its body; as slow as the server behind the URL.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"url":{"type":"string","description":"The URL to GET."}},"required":["url"],"additionalProperties":false}`),
		Annotations:  &tool.Annotations{ReadOnlyHint: &yes},
		Version:      "1.0.0",
		Category:     "utility",
		Capabilities: tool.Capabilities{Net: []string{"http://127.0.0.1"}},
	}
}

func (slowTool) Call(ctx *warden.Context, a json.RawMessage) (*tool.Result, error) {
	v, err := warden.Args[args](a)
	if err != nil {
		return nil, err
	}
	var reply struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := warden.Host(ctx, "net", map[string]string{"op": "request", "url": v.URL}, &reply); err != nil {
		return nil, err
	}
	if reply.Status != 200 {
		return nil, tool.Errorf(tool.KindFailed, "GET %s: status %d", v.URL, reply.Status)
	}
	return warden.Text(reply.Body), nil
}
