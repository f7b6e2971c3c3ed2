package main

import (
	"encoding/json"
	"time"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// The fixtures of the suite's Tasks extension scenarios (tasks-*, SEP-2663,
// run by .ci/conformance/run.sh --extensions). Their names, arguments and
// task support are the ones the scenarios' descriptions require.
var taskFixtures = []warden.Tool{
	fixture{
		name: "greet", description: "Greets by name; never a task",
		schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		call: func(_ *warden.Context, args json.RawMessage) (*tool.Result, error) {
			a, err := warden.Args[struct{ Name string }](args)
			if err != nil {
				return nil, err
			}
			return warden.Textf("Hello, %s!", a.Name), nil
		},
	},
	fixture{
		name: "slow_compute", description: "Works for the given seconds, reporting progress, then answers; may run as a task",
		task:   tool.TaskOptional,
		schema: json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0},"label":{"type":"string"}}}`),
		call: func(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
			a, err := warden.Args[struct {
				Seconds float64
				Label   string
			}](args)
			if err != nil {
				return nil, err
			}
			work(ctx, time.Duration(a.Seconds*float64(time.Second)))
			return warden.Textf("computed %s in %gs", a.Label, a.Seconds), nil
		},
	},
	fixture{
		name: "failing_job", description: "Works about a second, then reports a tool error; only as a task",
		task: tool.TaskRequired,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			work(ctx, time.Second)
			return nil, warden.Failed("failing_job failed on purpose")
		},
	},
	fixture{
		name: "protocol_error_job", description: "Crashes the module (an unrecovered panic); may run as a task",
		task: tool.TaskOptional,
		call: func(*warden.Context, json.RawMessage) (*tool.Result, error) {
			// A panic on another goroutine is beyond the SDK's recover:
			// the Go runtime exits the module, which traps the call.
			go func() { panic("protocol_error_job crashes on purpose") }()
			select {}
		},
	},
	fixture{
		name: "confirm_delete", description: "Asks the user to confirm deleting a file (one elicitation), then answers; may run as a task",
		task: tool.TaskOptional, client: elicitOnly,
		schema: json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}`),
		call: func(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
			a, err := warden.Args[struct{ Filename string }](args)
			if err != nil {
				return nil, err
			}
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "confirm", Message: "Delete " + a.Filename + "?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"confirm":{"type":"boolean"}},"required":["confirm"]}`)})
			if err != nil {
				return nil, err
			}
			if ok, _ := res.Content["confirm"].(bool); res.Action == "accept" && ok {
				return warden.Textf("Deleted %s", a.Filename), nil
			}
			return warden.Textf("Kept %s", a.Filename), nil
		},
	},
	fixture{
		name: "multi_input", description: "Asks two questions at once (two elicitations), then answers; may run as a task",
		task: tool.TaskOptional, client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			results, err := warden.Ask(ctx,
				warden.ClientRequest{Key: "first", Method: tool.MethodElicit, Params: warden.ElicitRequest{
					Message: "First question?", RequestedSchema: nameSchema("answer")}},
				warden.ClientRequest{Key: "second", Method: tool.MethodElicit, Params: warden.ElicitRequest{
					Message: "Second question?", RequestedSchema: nameSchema("answer")}},
			)
			if err != nil {
				return nil, err
			}
			return warden.Textf("Received %d answers: %s", len(results), joinRaw(results)), nil
		},
	},
	fixture{
		name: "test_tool_with_task", description: "Asks the user's name (input-required result), then runs as a task that greets them",
		task: tool.TaskRequired, client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "user_name", Message: "What is your name?", RequestedSchema: nameSchema("name")})
			if err != nil {
				return nil, err
			}
			name, _ := res.Content["name"].(string)
			return warden.Textf("Hello, %s!", name), nil
		},
	},
}

// work stands for d of computation: it sleeps in steps of a quarter second,
// reporting progress after each, so a task's status moves and a cancel
// finds the guest at a host call within a step.
func work(ctx *warden.Context, d time.Duration) {
	const step = 250 * time.Millisecond
	for done := time.Duration(0); done < d; done += step {
		time.Sleep(min(step, d-done))
		ctx.Progress(float64(min(done+step, d))/float64(time.Second), float64(d)/float64(time.Second), "working")
	}
}
