package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/grantcmd"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// Limits of one request from a guest.
const (
	// MaxBatch bounds the requests of one warden.ask.
	MaxBatch = 16
	// MaxKey bounds a request key's length.
	MaxKey = 64
	// DefaultWait is how long a call waits for an answer when not
	// configured (tools.defaults.client_wait).
	DefaultWait = limits.DefaultClientWait
)

// Capabilities are the four imports. They share one wait limit.
type Capabilities struct {
	wait atomic.Int64 // time.Duration
}

// New returns the client capabilities with wait as the bound on waiting
// for an answer (0 means DefaultWait).
func New(wait time.Duration) *Capabilities {
	c := &Capabilities{}
	c.Reconfigure(wait)
	return c
}

// Reconfigure sets the wait limit from the next request on.
func (c *Capabilities) Reconfigure(wait time.Duration) {
	if wait <= 0 {
		wait = DefaultWait
	}
	c.wait.Store(int64(wait))
}

// Wait returns the current wait limit.
func (c *Capabilities) Wait() time.Duration { return time.Duration(c.wait.Load()) }

// List returns the imports as hostfuncs capabilities.
func (c *Capabilities) List() []hostfuncs.Capability {
	return []hostfuncs.Capability{
		&single{c: c, name: "elicit", method: tool.MethodElicit},
		&single{c: c, name: "sample", method: tool.MethodSample},
		&single{c: c, name: "roots", method: tool.MethodRoots},
		&batch{c: c},
	}
}

// single serves warden.elicit, warden.sample and warden.roots.
type single struct {
	c      *Capabilities
	name   string
	method string
}

func (s *single) Name() string { return s.name }

func (s *single) Serve(ctx context.Context, call *hostfuncs.Call, request []byte) (any, error) {
	var req struct {
		Key    string          `json:"key"`
		Params json.RawMessage `json:"params"`
	}
	if err := decodeStrict(request, &req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "warden.%s request: %v", s.name, err)
	}
	results, err := s.c.ask(ctx, call, []tool.ClientRequest{{Key: req.Key, Method: s.method, Params: req.Params}})
	if err != nil {
		return nil, err
	}
	return results[0], nil
}

// batch serves warden.ask.
type batch struct{ c *Capabilities }

func (*batch) Name() string { return "ask" }

func (b *batch) Serve(ctx context.Context, call *hostfuncs.Call, request []byte) (any, error) {
	var req struct {
		Requests []tool.ClientRequest `json:"requests"`
	}
	if err := decodeStrict(request, &req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "warden.ask request: %v", err)
	}
	if len(req.Requests) == 0 {
		return nil, tool.Errorf(tool.KindInvalidArguments, "warden.ask request: no requests")
	}
	results, err := b.c.ask(ctx, call, req.Requests)
	if err != nil {
		return nil, err
	}
	return map[string]any{"results": results}, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the request object")
	}
	return nil
}

// Check validates requests as a guest sent them: known methods, keys
// well-formed and unique, params a JSON object. It is the parser of
// untrusted bytes the fuzz test drives.
func Check(requests []tool.ClientRequest) error {
	if len(requests) > MaxBatch {
		return fmt.Errorf("%d requests, over the limit of %d per call of warden.ask", len(requests), MaxBatch)
	}
	seen := make(map[string]bool, len(requests))
	for i, r := range requests {
		where := fmt.Sprintf("request %d", i)
		if r.Key != "" {
			where = fmt.Sprintf("request %q", r.Key)
		}
		if tool.FeatureOf(r.Method) == "" {
			return fmt.Errorf("%s: unknown method %q (known: %s, %s, %s)", where, r.Method, tool.MethodElicit, tool.MethodSample, tool.MethodRoots)
		}
		if err := checkKey(r.Key); err != nil {
			return fmt.Errorf("%s: %v", where, err)
		}
		if r.Key != "" {
			if seen[r.Key] {
				return fmt.Errorf("%s: key used twice in one call of warden.ask", where)
			}
			seen[r.Key] = true
		}
		p := strings.TrimSpace(string(r.Params))
		if p != "" && p != "null" && !strings.HasPrefix(p, "{") {
			return fmt.Errorf("%s: params must be a JSON object", where)
		}
	}
	return nil
}

func checkKey(key string) error {
	if len(key) > MaxKey {
		return fmt.Errorf("key is %d bytes, over the limit of %d", len(key), MaxKey)
	}
	// In any case, as for _meta keys: "Warden/confirm" beside warden's
	// tool.KeyConfirm in one input-required result would pass for it.
	if strings.HasPrefix(strings.ToLower(key), tool.ReservedPrefix) {
		return fmt.Errorf("key %q: keys beginning with %q (in any case) are warden's own", key, tool.ReservedPrefix)
	}
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:", r)) {
			return fmt.Errorf("key %q: only A-Z a-z 0-9 _ - . / : are allowed", key)
		}
	}
	return nil
}

// ask is the one gate and the one path to the client.
func (c *Capabilities) ask(ctx context.Context, call *hostfuncs.Call, requests []tool.ClientRequest) ([]json.RawMessage, error) {
	if err := Check(requests); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "%v", err)
	}
	for _, r := range requests {
		feature := tool.FeatureOf(r.Method)
		if !call.Grants.HasClient(feature) {
			key := configkey.Fold(call.Tool)
			// The command names the module serving the call: without
			// --module, warden grant adds to the module the entry
			// already belongs to, which may be another one.
			var c tool.Capabilities
			c.Client = []string{feature}
			return nil, tool.Errorf(tool.KindDenied,
				"tool %s may not ask the client for %s (%s): config grants it no client %s; allow it with tools.grants.%s.client: [%s] (%s)",
				call.Tool, feature, r.Method, feature, key, feature, grantcmd.Command(key, call.Module, c))
		}
	}
	requests = slices.Clone(requests)
	for i, r := range requests {
		var err *tool.Error
		if requests[i], err = attribute(call, r); err != nil {
			return nil, err
		}
	}
	if call.Client == nil {
		return nil, tool.Errorf(tool.KindUnsupported, "no MCP client can be asked during this call (it did not come from an MCP client)")
	}
	for _, r := range requests {
		if feature := tool.FeatureOf(r.Method); !call.Client.Require(feature) {
			return nil, tool.Errorf(tool.KindUnsupported,
				"the client did not declare the %s capability, so the tool cannot ask it for %s", capabilityName(feature), r.Method)
		}
	}
	wait := c.Wait()
	release := func() {}
	if call.Hold != nil {
		release = call.Hold(wait)
	}
	askCtx, cancel := context.WithTimeoutCause(ctx, wait, hostfuncs.ErrClientWait)
	results, err := call.Client.Ask(askCtx, requests)
	waitErr := askCtx.Err()
	cancel()
	release()
	switch {
	case err == nil:
		if len(results) != len(requests) {
			return nil, tool.Errorf(tool.KindInternal, "the client link answered %d of %d requests", len(results), len(requests))
		}
		return results, nil
	case tool.IsInputRequired(err):
		// The answers come with the client's next request: stop the guest
		// here, before it runs another instruction (see RATIONALE.md,
		// "Asking the client: replay").
		panic(tool.ErrInputRequired)
	case ctx.Err() != nil:
		return nil, tool.Errorf(tool.KindCancelled, "the call ended while waiting for the client to answer %s", requests[0].Method)
	case errors.Is(waitErr, context.DeadlineExceeded):
		return nil, tool.Errorf(tool.KindTimeout, "the client did not answer %s within %s (tools.defaults.client_wait)", requests[0].Method, wait)
	}
	var te *tool.Error
	if errors.As(err, &te) {
		return nil, te
	}
	return nil, tool.Errorf(tool.KindFailed, "the client refused %s: %v", requests[0].Method, err)
}

// attribute makes a tool's request visibly the tool's before it reaches the
// client, and refuses what would let it pass for warden or reach past the
// call. Its params are re-encoded from what was checked (so that a
// duplicate key cannot show the client something else), and:
//
//   - a _meta key beginning tool.ReservedPrefix is refused (warden's mark is
//     warden's alone);
//   - an elicitation's message becomes Attribution's: a header naming the
//     tool and its module, then the tool's text quoted; an elicitation in URL
//     mode (MCP 2025-11-25: mode "url", or a url the go-sdk infers it from)
//     is refused, since the client presents its link as the server's, that
//     is warden's, and no grant allows it;
//   - a sampling request's systemPrompt becomes SamplingAttribution's, so
//     that a client showing the request for review shows whose it is, and
//     includeContext other than "none" is refused: it would hand the model,
//     and through its answer the tool, the session's context (other tools'
//     results, other servers').
//
// A malformed request is invalid_arguments, a refused one denied.
func attribute(call *hostfuncs.Call, r tool.ClientRequest) (tool.ClientRequest, *tool.Error) {
	where := r.Method + " request"
	if r.Key != "" {
		where = fmt.Sprintf("request %q", r.Key)
	}
	invalid := func(format string, args ...any) *tool.Error {
		return tool.Errorf(tool.KindInvalidArguments, "%s: "+format, append([]any{where}, args...)...)
	}
	params := map[string]json.RawMessage{}
	if p := strings.TrimSpace(string(r.Params)); p != "" && p != "null" {
		if err := json.Unmarshal(r.Params, &params); err != nil {
			return r, invalid("params: %v", err)
		}
	}
	// The MCP layer decodes params with encoding/json, which matches field
	// names ignoring case: "_META", "systemprompt" or "includecontext"
	// would be read as the fields checked and rewritten here. Only MCP's
	// own spelling passes.
	for k := range params {
		for _, field := range mcpFields {
			if k != field && strings.EqualFold(k, field) {
				return r, invalid("params key %q: MCP spells it %q", termsafe.Line(k), field)
			}
		}
	}
	if raw, ok := params["_meta"]; ok && string(raw) != "null" {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(raw, &meta); err != nil {
			return r, invalid("params._meta must be a JSON object")
		}
		for k := range meta {
			if strings.HasPrefix(strings.ToLower(k), tool.ReservedPrefix) {
				return r, invalid("params._meta key %q: keys beginning %q are warden's own (they mark warden's questions)", termsafe.Line(k), tool.ReservedPrefix)
			}
		}
	}
	present := func(field string) bool {
		raw, ok := params[field]
		return ok && string(raw) != "null"
	}
	// str reads params[field], which must be a string when present.
	str := func(field string) (string, *tool.Error) {
		var v string
		if present(field) && json.Unmarshal(params[field], &v) != nil {
			return "", invalid("params.%s must be a string", field)
		}
		return v, nil
	}
	switch r.Method {
	case tool.MethodElicit:
		mode, err := str("mode")
		if err != nil {
			return r, err
		}
		if (mode != "" && mode != "form") || present("url") || present("elicitationId") {
			shown := "url"
			if mode != "" {
				shown = mode
			}
			return r, tool.Errorf(tool.KindDenied,
				"%s: tool %s may not ask in mode %q (elicitation/create with a url or elicitationId is URL mode): the client would present the link as a request of warden's, and no grant allows it; ask with a form (mode \"form\", or none)",
				where, call.Tool, termsafe.Line(shown))
		}
		message, err := str("message")
		if err != nil {
			return r, err
		}
		params["message"], _ = json.Marshal(Attribution(call.Tool, call.Module, message))
	case tool.MethodSample:
		include, err := str("includeContext")
		if err != nil {
			return r, err
		}
		if include != "" && include != "none" {
			return r, tool.Errorf(tool.KindDenied,
				"%s: tool %s may not ask for includeContext %q: it would give the model, and through its answer the tool, the context of the client's session (other tools' results, other servers'), which no grant allows; leave it out or use \"none\"",
				where, call.Tool, termsafe.Line(include))
		}
		system, err := str("systemPrompt")
		if err != nil {
			return r, err
		}
		params["systemPrompt"], _ = json.Marshal(SamplingAttribution(call.Tool, call.Module, system))
	}
	p, err := json.Marshal(params)
	if err != nil {
		return r, invalid("params: %v", err)
	}
	r.Params = p
	return r, nil
}

// mcpFields are the params fields of the three methods, as MCP spells
// them (elicitation/create, sampling/createMessage, roots/list).
var mcpFields = []string{
	"_meta",
	"mode", "message", "requestedSchema", "url", "elicitationId",
	"messages", "systemPrompt", "includeContext", "maxTokens", "temperature",
	"stopSequences", "metadata", "modelPreferences", "tools", "toolChoice",
}

// Attribution is the message a client shows for a tool's elicitation: a
// first line, warden's, naming the tool and the module serving it, then the
// tool's text, escaped (termsafe.Text: no control, bidi or invisible
// characters) and quoted line by line with "> ". No line of a tool's text can
// therefore begin like warden's own questions ("warden: ") or like the
// header, and the tool can neither supply nor strip the header.
func Attribution(toolName, module, message string) string {
	return "Question from " + from(toolName, module) + ", not from warden:\n" + quote(message)
}

// SamplingAttribution is the systemPrompt a client receives for a tool's
// sampling request: a first line, warden's, naming the tool and its module,
// then the tool's own system prompt, if any, escaped and quoted as
// Attribution quotes a question. warden never asks the client's model
// anything itself, so every sampling request is a tool's and says so.
func SamplingAttribution(toolName, module, systemPrompt string) string {
	header := "Sampling request from " + from(toolName, module) + ", not from warden"
	if systemPrompt == "" {
		return header + "."
	}
	return header + ". Its system prompt:\n" + quote(systemPrompt)
}

// from names a tool and the module serving it, escaped.
func from(toolName, module string) string {
	s := "tool " + termsafe.Line(toolName)
	if module != "" {
		s += " (module " + termsafe.Line(module) + ")"
	}
	return s
}

// quote escapes a tool's text (termsafe.Text) and prefixes each line "> ".
func quote(text string) string {
	lines := strings.Split(termsafe.Text(text), "\n")
	for i, l := range lines {
		lines[i] = "> " + l
	}
	return strings.Join(lines, "\n")
}

// capabilityName is the MCP client capability of a feature.
func capabilityName(feature string) string {
	switch feature {
	case tool.ClientElicit:
		return "elicitation"
	case tool.ClientSample:
		return "sampling"
	}
	return feature
}
