package warden

import (
	"encoding/json"

	"github.com/warden-run/warden/tool"
)

// Asking the client. A tool granted client features in config
// (tools.grants.<tool>.client: [elicit, sample, roots]) may ask the MCP
// client, and through it the person, mid-call. Without the grant the call
// gets kind "denied"; when the client did not declare the feature, kind
// "unsupported", at once. Waiting for an answer is bounded by
// tools.defaults.client_wait and does not count against the tool's timeout,
// up to one client_wait over all of a call's waits: later waits do.
//
// A client speaking MCP 2026-07-28 answers in a later request: warden then
// stops the call where it asked and runs it again, from the start, with the
// answers, so code before an ask runs once per round. Ask before you act,
// and keep what runs before an ask free of side effects (docs/asking.md).

// ElicitRequest asks the person for input: a message and the schema of the
// answer (a flat object of primitive properties, as MCP's elicitation/create
// defines it).
type ElicitRequest struct {
	// Key names the request within the call; empty means "elicit-<n>".
	Key             string          `json:"-"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
}

// ElicitResult is the person's answer: Action is "accept", "decline" or
// "cancel"; Content holds the accepted values.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// SamplingMessage is one message of a sampling request or result.
type SamplingMessage struct {
	Role    string       `json:"role"`
	Content tool.Content `json:"content"`
}

// SampleRequest asks the client's model for a message
// (sampling/createMessage).
type SampleRequest struct {
	// Key names the request within the call; empty means "sample-<n>".
	Key              string            `json:"-"`
	Messages         []SamplingMessage `json:"messages"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	MaxTokens        int64             `json:"maxTokens"`
	Temperature      *float64          `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	ModelPreferences json.RawMessage   `json:"modelPreferences,omitempty"`
}

// SampleResult is the model's message.
type SampleResult struct {
	Role       string       `json:"role"`
	Content    tool.Content `json:"content"`
	Model      string       `json:"model"`
	StopReason string       `json:"stopReason,omitempty"`
}

// Root is one of the client's roots.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// Elicit asks the person (elicitation/create).
func Elicit(ctx *Context, req ElicitRequest) (*ElicitResult, error) {
	var res ElicitResult
	if err := askOne(ctx, "elicit", req.Key, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Sample asks the client's model (sampling/createMessage).
//
// Deprecated: MCP 2026-07-28 deprecates sampling (SEP-2577). A tool that
// needs a model calls the model provider's API itself, under a net grant.
// Sample keeps working while clients support sampling.
func Sample(ctx *Context, req SampleRequest) (*SampleResult, error) {
	var res SampleResult
	if err := askOne(ctx, "sample", req.Key, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Roots returns the client's roots (roots/list). They are what the client
// works on; they grant no file access (docs/asking.md).
//
// Deprecated: MCP 2026-07-28 deprecates roots (SEP-2577). Take directories
// and files as tool arguments, or from config (project.roots and fs
// grants). Roots keeps working while clients support roots.
func Roots(ctx *Context) ([]Root, error) {
	var res struct {
		Roots []Root `json:"roots"`
	}
	if err := askOne(ctx, "roots", "", struct{}{}, &res); err != nil {
		return nil, err
	}
	return res.Roots, nil
}

func askOne(ctx *Context, capability, key string, params, reply any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return tool.Errorf(tool.KindFailed, "encode %s request: %v", capability, err)
	}
	return Host(ctx, capability, struct {
		Key    string          `json:"key,omitempty"`
		Params json.RawMessage `json:"params"`
	}{key, p}, reply)
}

// ClientRequest is one request of Ask: Method is "elicitation/create",
// "sampling/createMessage" or "roots/list", Params its MCP params.
type ClientRequest struct {
	Key    string `json:"key,omitempty"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// Ask sends several requests at once and returns their results in order, so
// that a 2026-07-28 client gets them in one round trip. Decode each result
// into ElicitResult, SampleResult or {"roots": []Root}.
func Ask(ctx *Context, requests ...ClientRequest) ([]json.RawMessage, error) {
	var reply struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := Host(ctx, "ask", struct {
		Requests []ClientRequest `json:"requests"`
	}{requests}, &reply); err != nil {
		return nil, err
	}
	if len(reply.Results) != len(requests) {
		return nil, tool.Errorf(tool.KindFailed, "ask: %d results for %d requests", len(reply.Results), len(requests))
	}
	return reply.Results, nil
}
