// Command hostcalls is a runtime test fixture: it logs, reports progress and
// calls the fs and env capabilities through the SDK, then returns what each
// capability answered, so a test can check both the wiring and the grants.
//
// Arguments (all optional): "fs" and "env" are the requests to send, by
// default {"op":"read","path":"README.md"} and {"op":"get","key":"HOME"};
// "memory" and "net", when given, are sent to those capabilities too;
// "env_again", when given, is sent to env a second time, after the
// progress report 3 of 3 (a test's observer may hold the call there).
// The result's structured content is
//
//	{"fs": {"result": ...} | {"error": {"kind", "message"}}, "env": ..., "memory": ...}
package main

import (
	"encoding/json"
	"errors"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

func init() { warden.Register(fixture{}) }

func main() {}

type fixture struct{}

func (fixture) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:        "hostcalls",
		Description: "Runtime test fixture: calls log, progress, fs and env and reports the replies.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"fs":{"type":"object"},"env":{"type":"object"},"memory":{"type":"object"},"net":{"type":"object"}}}`),
		Capabilities: tool.Capabilities{
			FS:  tool.FSAccess{Read: []string{"."}},
			Env: []string{"HOME"},
		},
	}
}

type args struct {
	FS     json.RawMessage `json:"fs"`
	Env    json.RawMessage `json:"env"`
	Memory json.RawMessage `json:"memory"`
	Net    json.RawMessage `json:"net"`
	Again  json.RawMessage `json:"env_again"`
}

// outcome is one capability's answer as the test sees it.
type outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *tool.Error     `json:"error,omitempty"`
}

func (fixture) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[args](raw)
	if err != nil {
		return nil, err
	}
	if a.FS == nil {
		a.FS = json.RawMessage(`{"op":"read","path":"README.md"}`)
	}
	if a.Env == nil {
		a.Env = json.RawMessage(`{"op":"get","key":"HOME"}`)
	}
	ctx.Log(warden.LevelInfo, "hostcalls: starting "+ctx.CallID)
	ctx.Progress(1, 3, "calling fs")
	fs := ask(ctx, "fs", a.FS)
	ctx.Progress(2, 3, "calling env")
	env := ask(ctx, "env", a.Env)
	ctx.Progress(3, 3, "done")
	replies := map[string]outcome{"fs": fs, "env": env}
	if a.Again != nil {
		replies["env_again"] = ask(ctx, "env", a.Again)
	}
	ctx.Log(warden.LevelDebug, "hostcalls: done")
	if a.Memory != nil {
		replies["memory"] = ask(ctx, "memory", a.Memory)
	}
	if a.Net != nil {
		replies["net"] = ask(ctx, "net", a.Net)
	}
	return warden.JSON(replies)
}

func ask(ctx *warden.Context, capability string, request json.RawMessage) outcome {
	var result json.RawMessage
	err := warden.Host(ctx, capability, request, &result)
	var te *tool.Error
	switch {
	case err == nil:
		return outcome{Result: result}
	case errors.As(err, &te):
		return outcome{Error: te}
	default:
		return outcome{Error: warden.Failed("%v", err)}
	}
}
