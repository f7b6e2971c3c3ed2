package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// The fixtures that ask the client: over a 2025-11-25 session warden sends
// the requests itself; over 2026-07-28 they become input-required results
// and the call is replayed with the answers.

var (
	elicitOnly = []string{tool.ClientElicit}
	sampleOnly = []string{tool.ClientSample}
	allClient  = []string{tool.ClientElicit, tool.ClientSample, tool.ClientRoots}
)

func nameSchema(prop string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{%q:{"type":"string"}},"required":[%q]}`, prop, prop))
}

func elicited(r *warden.ElicitResult) string {
	content, _ := json.Marshal(r.Content)
	return fmt.Sprintf("action=%s, content=%s", r.Action, content)
}

func text(c tool.Content) string {
	if c.Type == "text" {
		return c.Text
	}
	return "[" + c.Type + "]"
}

func sampleText(ctx *warden.Context, key, prompt string, maxTokens int64) (string, error) {
	res, err := warden.Sample(ctx, warden.SampleRequest{Key: key, MaxTokens: maxTokens,
		Messages: []warden.SamplingMessage{{Role: "user", Content: tool.Content{Type: "text", Text: prompt}}}})
	if err != nil {
		return "", err
	}
	return text(res.Content), nil
}

var clientFixtures = []warden.Tool{
	fixture{
		name: "test_sampling", description: "Tests server-initiated sampling (LLM completion request)", client: sampleOnly,
		schema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`),
		call: func(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
			a, err := warden.Args[struct{ Prompt string }](args)
			if err != nil {
				return nil, err
			}
			answer, err := sampleText(ctx, "", a.Prompt, 100)
			if err != nil {
				return nil, err
			}
			return warden.Text("LLM response: " + answer), nil
		},
	},
	fixture{
		name: "test_elicitation", description: "Tests server-initiated elicitation (user input request)", client: elicitOnly,
		schema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`),
		call: func(ctx *warden.Context, args json.RawMessage) (*tool.Result, error) {
			a, err := warden.Args[struct{ Message string }](args)
			if err != nil {
				return nil, err
			}
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Message: a.Message, RequestedSchema: json.RawMessage(`{
				"type":"object",
				"properties":{
					"username":{"type":"string","description":"User's response"},
					"email":{"type":"string","description":"User's email address"}},
				"required":["username","email"]}`)})
			if err != nil {
				return nil, err
			}
			content, _ := json.Marshal(res.Content)
			return warden.Textf("User response: <action: %s, content: %s>", res.Action, content), nil
		},
	},
	fixture{
		name: "test_elicitation_sep1034_defaults", description: "Tests elicitation with default values for every primitive type (SEP-1034)", client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Message: "Please review and update the form fields with defaults", RequestedSchema: json.RawMessage(`{
				"type":"object",
				"properties":{
					"name":{"type":"string","description":"User name","default":"John Doe"},
					"age":{"type":"integer","description":"User age","default":30},
					"score":{"type":"number","description":"User score","default":95.5},
					"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},
					"verified":{"type":"boolean","description":"Verification status","default":true}},
				"required":[]}`)})
			if err != nil {
				return nil, err
			}
			return warden.Text("Elicitation completed: " + elicited(res)), nil
		},
	},
	fixture{
		name: "test_elicitation_sep1330_enums", description: "Tests elicitation with every enum schema variant (SEP-1330)", client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Message: "Please select options from the enum fields", RequestedSchema: json.RawMessage(`{
				"type":"object",
				"properties":{
					"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},
					"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[
						{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
					"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
					"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},
					"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[
						{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},
				"required":[]}`)})
			if err != nil {
				return nil, err
			}
			return warden.Text("Elicitation completed: " + elicited(res)), nil
		},
	},
	fixture{
		name: "test_input_required_result_elicitation", description: "Asks the user's name (SEP-2322 input-required result)", client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "user_name", Message: "What is your name?", RequestedSchema: nameSchema("name")})
			if err != nil {
				return nil, err
			}
			name, _ := res.Content["name"].(string)
			return warden.Textf("Hello, %s!", name), nil
		},
	},
	fixture{
		name: "test_input_required_result_sampling", description: "Asks the client's model (SEP-2322 input-required result)", client: sampleOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			answer, err := sampleText(ctx, "capital_question", "What is the capital of France?", 100)
			if err != nil {
				return nil, err
			}
			return warden.Text("The model answered: " + answer), nil
		},
	},
	fixture{
		name: "test_input_required_result_list_roots", description: "Asks the client's roots (SEP-2322 input-required result)", client: []string{tool.ClientRoots},
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			results, err := warden.Ask(ctx, warden.ClientRequest{Key: "client_roots", Method: tool.MethodRoots, Params: struct{}{}})
			if err != nil {
				return nil, err
			}
			var roots struct{ Roots []warden.Root }
			if err := json.Unmarshal(results[0], &roots); err != nil {
				return nil, err
			}
			var uris []string
			for _, r := range roots.Roots {
				uris = append(uris, r.URI)
			}
			return warden.Textf("Client roots: %s", strings.Join(uris, ", ")), nil
		},
	},
	fixture{
		name: "test_input_required_result_request_state", description: "Round-trips requestState (SEP-2322)", client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "confirm", Message: "Please confirm",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)})
			if err != nil {
				return nil, err
			}
			// Reaching this line on a retry means warden verified the state.
			return warden.Text("state-ok: " + elicited(res)), nil
		},
	},
	fixture{
		name: "test_input_required_result_multiple_inputs", description: "Asks for elicitation, sampling and roots at once (SEP-2322)", client: allClient,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			results, err := warden.Ask(ctx,
				warden.ClientRequest{Key: "user_name", Method: tool.MethodElicit, Params: warden.ElicitRequest{
					Message: "What is your name?", RequestedSchema: nameSchema("name")}},
				warden.ClientRequest{Key: "greeting", Method: tool.MethodSample, Params: warden.SampleRequest{MaxTokens: 50,
					Messages: []warden.SamplingMessage{{Role: "user", Content: tool.Content{Type: "text", Text: "Generate a greeting"}}}}},
				warden.ClientRequest{Key: "client_roots", Method: tool.MethodRoots, Params: struct{}{}},
			)
			if err != nil {
				return nil, err
			}
			return warden.Textf("Received %d answers: %s", len(results), joinRaw(results)), nil
		},
	},
	fixture{
		name: "test_input_required_result_multi_round", description: "Asks twice, one round each (SEP-2322)", client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			first, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "step1", Message: "Step 1: What is your name?", RequestedSchema: nameSchema("name")})
			if err != nil {
				return nil, err
			}
			second, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "step2", Message: "Step 2: What is your favorite color?", RequestedSchema: nameSchema("color")})
			if err != nil {
				return nil, err
			}
			return warden.Textf("Hello %v, your favorite color is %v", first.Content["name"], second.Content["color"]), nil
		},
	},
	fixture{
		name: "test_input_required_result_tampered_state", description: "Asks once; a tampered requestState must be refused (SEP-2322)", client: elicitOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "confirm", Message: "Please confirm",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)})
			if err != nil {
				return nil, err
			}
			return warden.Text("state verified: " + elicited(res)), nil
		},
	},
	fixture{
		name: "test_input_required_result_capabilities", description: "Asks only for what the client declared (SEP-2322)", client: allClient,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			var parts []string
			res, err := warden.Elicit(ctx, warden.ElicitRequest{Key: "user_name", Message: "What is your name?", RequestedSchema: nameSchema("name")})
			switch {
			case tool.KindOf(err) == tool.KindUnsupported:
				parts = append(parts, "elicitation: not declared by the client")
			case err != nil:
				return nil, err
			default:
				parts = append(parts, "elicitation: "+elicited(res))
			}
			answer, err := sampleText(ctx, "capital_question", "What is the capital of France?", 100)
			switch {
			case tool.KindOf(err) == tool.KindUnsupported:
				parts = append(parts, "sampling: not declared by the client")
			case err != nil:
				return nil, err
			default:
				parts = append(parts, "sampling: "+answer)
			}
			return warden.Text(strings.Join(parts, "; ")), nil
		},
	},
	fixture{
		name: "test_missing_capability", description: "Needs sampling; a client that did not declare it gets -32021 (SEP-2575)", client: sampleOnly,
		call: func(ctx *warden.Context, _ json.RawMessage) (*tool.Result, error) {
			answer, err := sampleText(ctx, "", "Say hello", 20)
			if err != nil {
				return nil, err // unsupported: warden answers -32021 to a 2026-07-28 client
			}
			return warden.Text("LLM response: " + answer), nil
		},
	},
}

func joinRaw(rs []json.RawMessage) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r)
	}
	return strings.Join(parts, " | ")
}
