package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero/api"
	"github.com/yosida95/uritemplate/v3"

	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/tool"
)

// Resources, resource templates, prompts and completions (docs/abi.md,
// "Resources, prompts and completions"). A module declares them in its
// descriptor document next to its tools; they are served through optional
// exports that run exactly like warden_call: through Module.invoke, on a
// pooled instance, under the module's deadline, fuel and memory limits and
// the grants of the tool each names.

// Exports of the native ABI for the ops.
var opExports = map[guest.Op]string{
	guest.OpReadResource: "warden_read_resource",
	guest.OpGetPrompt:    "warden_get_prompt",
	guest.OpComplete:     "warden_complete",
}

var opSig = guest.FuncSig{Params: []api.ValueType{api.ValueTypeI64}, Results: []api.ValueType{api.ValueTypeI64}}

// Supports reports whether the module exports op's function.
func (e *native) Supports(op guest.Op) (bool, error) {
	name := opExports[op]
	def, ok := e.code.Load().compiled.ExportedFunctions()[name]
	if !ok {
		return false, nil
	}
	if !opSig.Matches(def) {
		return false, fmt.Errorf("export %s has signature %s, want %s", name,
			guest.FuncSig{Params: def.ParamTypes(), Results: def.ResultTypes()}, opSig)
	}
	return true, nil
}

// RunOp writes the request into the guest, runs op's export and reads the
// response.
func (e *native) RunOp(ctx context.Context, in *guest.Instance, op guest.Op, request []byte, what string) ([]byte, *tool.Error, error) {
	fn := in.Mod.ExportedFunction(opExports[op])
	if fn == nil {
		return nil, tool.Errorf(tool.KindInternal, "%s: the module has no %s export", what, opExports[op]), nil
	}
	packed, err := invoke(ctx, in, fn, request)
	if err != nil {
		return nil, nil, err
	}
	raw, respErr := readResponse(in.Mod, packed, e.spec.Limits.MaxOutput, "", what)
	return raw, respErr, nil
}

// checkOps refuses a module that declares what it cannot serve: resources
// or templates without the read export, prompts without the prompt export.
// A module without the complete export answers every completion empty.
func checkOps(f *tool.Features, engine guest.Engine) error {
	runner, _ := engine.(guest.OpRunner)
	var problems []string
	need := func(op guest.Op, needed bool, what string) {
		if runner == nil {
			if needed {
				problems = append(problems, fmt.Sprintf("declares %s, which this kind of module cannot serve", what))
			}
			return
		}
		ok, err := runner.Supports(op)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case needed && !ok:
			problems = append(problems, fmt.Sprintf("declares %s but does not export %s", what, exportOf(engine, op)))
		}
	}
	need(guest.OpReadResource, len(f.Resources) > 0 || len(f.ResourceTemplates) > 0, "resources")
	need(guest.OpGetPrompt, len(f.Prompts) > 0, "prompts")
	need(guest.OpComplete, false, "completions")
	if len(problems) > 0 {
		return fmt.Errorf("descriptor: %s", strings.Join(problems, "; "))
	}
	return nil
}

func exportOf(engine guest.Engine, op guest.Op) string {
	if _, ok := engine.(*native); ok {
		return opExports[op]
	}
	return string(op)
}

// checkFeatureTools checks that the tool each feature names (for its
// grants) is one of the module's, and that no resource is in warden's
// memory: scheme.
func (l *listing) checkFeatureTools() error {
	f := l.features
	var problems []string
	check := func(where, name string) {
		if name != "" && !slices.ContainsFunc(l.tools, func(t *Tool) bool { return t.Descriptor.Name == name }) {
			problems = append(problems, fmt.Sprintf("%s: tool %q (whose grants it runs under) is not a valid tool of this module", where, name))
		}
	}
	// memory: is warden's scheme (the project memory as resources): a
	// module that declared it would be read for topics warden does not
	// list, and could speak for the memory in what it returns.
	reserved := func(where, uri string) {
		if scheme, _, ok := strings.Cut(uri, ":"); ok && strings.EqualFold(scheme, "memory") {
			problems = append(problems, fmt.Sprintf("%s: the memory: scheme is warden's (the project memory); a module declares no resource in it", where))
		}
	}
	for i, r := range f.Resources {
		where := fmt.Sprintf("resources[%d] %q", i, r.URI)
		check(where, r.Tool)
		reserved(where, r.URI)
	}
	for i, t := range f.ResourceTemplates {
		where := fmt.Sprintf("resourceTemplates[%d] %q", i, t.URITemplate)
		check(where, t.Tool)
		reserved(where, t.URITemplate)
	}
	for i, p := range f.Prompts {
		check(fmt.Sprintf("prompts[%d] %q", i, p.Name), p.Tool)
	}
	if len(problems) > 0 {
		return fmt.Errorf("descriptor: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Features returns the resources, resource templates and prompts the
// module declares. The caller must not change them.
func (m *Module) Features() *tool.Features {
	if m.features == nil {
		return &tool.Features{}
	}
	return m.features
}

// Bounds on what a client may send an op.
const (
	maxPromptArgumentBytes = 64 << 10
	maxCompletionBytes     = 4 << 10
)

// ResourceOwner reports which declaration of m serves uri: the resource
// itself, or the first template that matches it, and the tool whose grants
// apply. ok is false when m serves no such URI.
func (m *Module) ResourceOwner(uri string) (grantsOf string, ok bool) {
	f := m.Features()
	for _, r := range f.Resources {
		if r.URI == uri {
			return r.Tool, true
		}
	}
	for _, t := range f.ResourceTemplates {
		if tmpl, err := uritemplate.New(t.URITemplate); err == nil && tmpl.Regexp().MatchString(uri) {
			return t.Tool, true
		}
	}
	return "", false
}

// ReadResource reads uri, which must be one of m's resources or match one of
// its templates. req supplies the session, grants (those of the tool
// ResourceOwner names), observer and timeout; its Arguments and Cursor are
// not used. Every failure is a *tool.Error of its kind; a malformed
// response is bad_output.
func (m *Module) ReadResource(ctx context.Context, uri string, req CallRequest) (*tool.ResourceResult, *tool.Error) {
	grantsOf, ok := m.ResourceOwner(uri)
	if !ok {
		return nil, tool.Errorf(tool.KindNotFound, "module %s serves no resource %q", m.name, uri)
	}
	body, terr := m.forOp(ctx, req)
	if terr != nil {
		return nil, terr
	}
	defer m.release()
	request, _ := json.Marshal(tool.ResourceRequest{URI: uri, CallID: req.CallID})
	what := "resource " + uri
	var res *tool.ResourceResult
	terr = body.runOp(ctx, guest.OpReadResource, what, grantsOf, request, req, func(raw []byte) *tool.Error {
		var err *tool.Error
		res, err = tool.ParseResourceResult(raw, uri)
		if err == nil {
			err = m.ownContents(uri, res)
		}
		return err
	})
	return res, terr
}

// ownContents refuses a read's contents item whose URI m does not serve: a
// client takes an item as the content of the resource its URI names, so a
// module answering with another module's URI (or one of warden's) would
// speak for that resource. An item may name the URI read, or another of
// m's own resources (a template's match included).
func (m *Module) ownContents(uri string, res *tool.ResourceResult) *tool.Error {
	for i, c := range res.Contents {
		if c.URI == uri {
			continue
		}
		if _, ok := m.ResourceOwner(c.URI); !ok {
			return tool.Errorf(tool.KindBadOutput, "resource %q contents[%d]: uri %q is not a resource of module %s; a module answers only for its own resources",
				uri, i, c.URI, m.name)
		}
	}
	return nil
}

// GetPrompt gets the prompt called name with args. Required arguments must
// be present and every argument must be declared (invalid_arguments
// otherwise).
func (m *Module) GetPrompt(ctx context.Context, name string, args map[string]string, req CallRequest) (*tool.PromptResult, *tool.Error) {
	i := slices.IndexFunc(m.Features().Prompts, func(p tool.PromptDescriptor) bool { return p.Name == name })
	if i < 0 {
		return nil, tool.Errorf(tool.KindNotFound, "module %s serves no prompt %q", m.name, name)
	}
	p := m.Features().Prompts[i]
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return nil, tool.Errorf(tool.KindInvalidArguments, "prompt %s: missing required argument %q", name, a.Name)
		}
	}
	for k, v := range args {
		if !slices.ContainsFunc(p.Arguments, func(a tool.PromptArgument) bool { return a.Name == k }) {
			return nil, tool.Errorf(tool.KindInvalidArguments, "prompt %s has no argument %q", name, k)
		}
		if len(v) > maxPromptArgumentBytes {
			return nil, tool.Errorf(tool.KindInvalidArguments, "prompt %s: argument %q is %d bytes, over the limit of %d", name, k, len(v), maxPromptArgumentBytes)
		}
	}
	body, terr := m.forOp(ctx, req)
	if terr != nil {
		return nil, terr
	}
	defer m.release()
	request, _ := json.Marshal(tool.PromptRequest{Name: name, Arguments: args, CallID: req.CallID})
	var res *tool.PromptResult
	terr = body.runOp(ctx, guest.OpGetPrompt, "prompt "+name, p.Tool, request, req, func(raw []byte) *tool.Error {
		var err *tool.Error
		res, err = tool.ParsePromptResult(raw, name)
		return err
	})
	return res, terr
}

// Complete completes an argument of one of m's prompts (ref/prompt) or a
// variable of one of its resource templates (ref/resource). A module
// without the complete export answers with no values.
func (m *Module) Complete(ctx context.Context, c tool.CompleteRequest, req CallRequest) (*tool.Completion, *tool.Error) {
	f := m.Features()
	var grantsOf string
	switch c.Ref.Type {
	case "ref/prompt":
		i := slices.IndexFunc(f.Prompts, func(p tool.PromptDescriptor) bool { return p.Name == c.Ref.Name })
		if i < 0 {
			return nil, tool.Errorf(tool.KindNotFound, "module %s serves no prompt %q", m.name, c.Ref.Name)
		}
		if !slices.ContainsFunc(f.Prompts[i].Arguments, func(a tool.PromptArgument) bool { return a.Name == c.Argument.Name }) {
			return nil, tool.Errorf(tool.KindInvalidArguments, "prompt %s has no argument %q", c.Ref.Name, c.Argument.Name)
		}
		grantsOf = f.Prompts[i].Tool
	case "ref/resource":
		i := slices.IndexFunc(f.ResourceTemplates, func(t tool.ResourceTemplateDescriptor) bool { return t.URITemplate == c.Ref.URI })
		if i < 0 {
			return nil, tool.Errorf(tool.KindNotFound, "module %s serves no resource template %q", m.name, c.Ref.URI)
		}
		tmpl, err := uritemplate.New(c.Ref.URI)
		if err != nil || !slices.Contains(tmpl.Varnames(), c.Argument.Name) {
			return nil, tool.Errorf(tool.KindInvalidArguments, "resource template %s has no variable %q", c.Ref.URI, c.Argument.Name)
		}
		grantsOf = f.ResourceTemplates[i].Tool
	default:
		return nil, tool.Errorf(tool.KindInvalidArguments, "completion ref type %q is not ref/prompt or ref/resource", c.Ref.Type)
	}
	size := len(c.Argument.Value)
	if c.Context != nil {
		for _, v := range c.Context.Arguments {
			size += len(v)
		}
	}
	if size > maxCompletionBytes {
		return nil, tool.Errorf(tool.KindInvalidArguments, "completion values are %d bytes, over the limit of %d", size, maxCompletionBytes)
	}
	body, terr := m.forOp(ctx, req)
	if terr != nil {
		return nil, terr
	}
	defer m.release()
	if runner, ok := body.engine.(guest.OpRunner); !ok {
		return &tool.Completion{Values: []string{}}, nil
	} else if ok, _ := runner.Supports(guest.OpComplete); !ok {
		return &tool.Completion{Values: []string{}}, nil
	}
	c.CallID = req.CallID
	request, _ := json.Marshal(c)
	var res *tool.Completion
	terr = body.runOp(ctx, guest.OpComplete, "completion of "+c.Argument.Name, grantsOf, request, req, func(raw []byte) *tool.Error {
		var err *tool.Error
		res, err = tool.ParseCompletion(raw)
		return err
	})
	return res, terr
}

// forOp returns the body that runs an op of m, loaded first if need be;
// m.release must follow.
func (m *Module) forOp(ctx context.Context, req CallRequest) (*body, *tool.Error) {
	b, err := m.acquire(ctx, req.Observer)
	if err != nil {
		return nil, m.bodyError(ctx, m.name, err)
	}
	return b, nil
}

// runOp runs op through the call path (body.invoke); parse judges the
// response. A response judged bad_output retires the instance.
func (b *body) runOp(ctx context.Context, op guest.Op, what, grantsOf string, request []byte, req CallRequest, parse func(raw []byte) *tool.Error) *tool.Error {
	m := b.m
	runner, ok := b.engine.(guest.OpRunner)
	if !ok {
		return tool.Errorf(tool.KindInternal, "%s: module %s cannot serve %s", what, m.name, op)
	}
	if grantsOf == "" {
		grantsOf = what
	}
	var result *tool.Error
	out := b.invoke(ctx, invocation{
		name: what, grantsOf: grantsOf, timeout: m.limits.Timeout, req: &req,
		run: func(ctx context.Context, in *guest.Instance) ([]byte, *tool.Error, error) {
			return runner.RunOp(ctx, in, op, request, what+" response")
		},
		decode: func(raw []byte, respErr *tool.Error, state *guest.CallState) bool {
			if respErr != nil {
				result = respErr
			} else if result = parse(raw); result != nil && result.Kind != tool.KindBadOutput {
				result = m.guestError(what, result, state)
			}
			return result == nil || result.Kind != tool.KindBadOutput
		},
	})
	if out.err != nil {
		return out.err
	}
	if result != nil && result.Kind == tool.KindBadOutput {
		m.rt.log.Warn("module returned a bad response", "module", m.name, "op", string(op), "error", result.Message)
	}
	return result
}
