package warden

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/yosida95/uritemplate/v3"

	"github.com/warden-run/warden/tool"
)

// A module may serve MCP resources, resource templates and prompts besides
// its tools (docs/abi.md, "Resources, prompts and completions"). Register
// them from init like tools:
//
//	func init() {
//		warden.RegisterResources(warden.ResourceFunc{
//			Desc: tool.ResourceDescriptor{URI: "notes://today", Name: "today", MimeType: "text/plain"},
//			ReadFunc: func(ctx *warden.Context, uri string) (*tool.ResourceResult, error) {
//				return warden.TextResource(uri, "text/plain", "nothing planned"), nil
//			},
//		})
//	}

// Resource is one fixed resource a module serves.
type Resource interface {
	Descriptor() tool.ResourceDescriptor
	// Read returns the resource's contents. uri is the resource's URI.
	Read(ctx *Context, uri string) (*tool.ResourceResult, error)
}

// ResourceTemplate is a family of resources addressed by a URI template.
type ResourceTemplate interface {
	Descriptor() tool.ResourceTemplateDescriptor
	// Read returns the contents of uri, which matches the template; vars
	// holds the template's variables as uri sets them.
	Read(ctx *Context, uri string, vars map[string]string) (*tool.ResourceResult, error)
}

// Prompt is one prompt a module serves.
type Prompt interface {
	Descriptor() tool.PromptDescriptor
	// Get returns the prompt's messages for args. The host has checked
	// that every required argument is present and no other is.
	Get(ctx *Context, args map[string]string) (*tool.PromptResult, error)
}

// Completer is implemented by a Prompt or ResourceTemplate that suggests
// values for its arguments (template variables). resolved holds the values
// of arguments the client has already chosen. Without it, completions of
// its arguments are empty.
type Completer interface {
	Complete(ctx *Context, argument, value string, resolved map[string]string) (*tool.Completion, error)
}

// ResourceFunc is a Resource made of a descriptor and a function.
type ResourceFunc struct {
	Desc     tool.ResourceDescriptor
	ReadFunc func(ctx *Context, uri string) (*tool.ResourceResult, error)
}

func (r ResourceFunc) Descriptor() tool.ResourceDescriptor { return r.Desc }
func (r ResourceFunc) Read(ctx *Context, uri string) (*tool.ResourceResult, error) {
	return r.ReadFunc(ctx, uri)
}

// TemplateFunc is a ResourceTemplate made of a descriptor and functions;
// CompleteFunc may be nil.
type TemplateFunc struct {
	Desc         tool.ResourceTemplateDescriptor
	ReadFunc     func(ctx *Context, uri string, vars map[string]string) (*tool.ResourceResult, error)
	CompleteFunc func(ctx *Context, argument, value string, resolved map[string]string) (*tool.Completion, error)
}

func (t TemplateFunc) Descriptor() tool.ResourceTemplateDescriptor { return t.Desc }
func (t TemplateFunc) Read(ctx *Context, uri string, vars map[string]string) (*tool.ResourceResult, error) {
	return t.ReadFunc(ctx, uri, vars)
}
func (t TemplateFunc) Complete(ctx *Context, argument, value string, resolved map[string]string) (*tool.Completion, error) {
	if t.CompleteFunc == nil {
		return Completions(), nil
	}
	return t.CompleteFunc(ctx, argument, value, resolved)
}

// PromptFunc is a Prompt made of a descriptor and functions; CompleteFunc
// may be nil.
type PromptFunc struct {
	Desc         tool.PromptDescriptor
	GetFunc      func(ctx *Context, args map[string]string) (*tool.PromptResult, error)
	CompleteFunc func(ctx *Context, argument, value string, resolved map[string]string) (*tool.Completion, error)
}

func (p PromptFunc) Descriptor() tool.PromptDescriptor { return p.Desc }
func (p PromptFunc) Get(ctx *Context, args map[string]string) (*tool.PromptResult, error) {
	return p.GetFunc(ctx, args)
}
func (p PromptFunc) Complete(ctx *Context, argument, value string, resolved map[string]string) (*tool.Completion, error) {
	if p.CompleteFunc == nil {
		return Completions(), nil
	}
	return p.CompleteFunc(ctx, argument, value, resolved)
}

// TextResource is a resource read's result holding text.
func TextResource(uri, mimeType, text string) *tool.ResourceResult {
	return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, MimeType: mimeType, Text: &text}}}
}

// BlobResource is a resource read's result holding binary data.
func BlobResource(uri, mimeType string, data []byte) *tool.ResourceResult {
	blob := base64.StdEncoding.EncodeToString(data)
	return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, MimeType: mimeType, Blob: &blob}}}
}

// Messages is a prompt's result made of messages.
func Messages(messages ...tool.PromptMessage) *tool.PromptResult {
	if messages == nil {
		messages = []tool.PromptMessage{}
	}
	return &tool.PromptResult{Messages: messages}
}

// User is a prompt message from the user holding one content block
// (TextBlock, ImageBlock, EmbeddedTextBlock, ...).
func User(c tool.Content) tool.PromptMessage { return tool.PromptMessage{Role: "user", Content: c} }

// Assistant is a prompt message from the assistant.
func Assistant(c tool.Content) tool.PromptMessage {
	return tool.PromptMessage{Role: "assistant", Content: c}
}

// Completions is a completion offering values (at most 100; more are cut
// and reported by HasMore).
func Completions(values ...string) *tool.Completion {
	c := &tool.Completion{Values: values, Total: len(values)}
	if c.Values == nil {
		c.Values = []string{}
	}
	if len(c.Values) > tool.MaxCompletionValues {
		c.Values, c.HasMore = c.Values[:tool.MaxCompletionValues], true
	}
	return c
}

// features is what a Registry serves besides tools.
type features struct {
	resources []Resource
	templates []registeredTemplate
	prompts   []Prompt
	desc      tool.Features
}

type registeredTemplate struct {
	t    ResourceTemplate
	tmpl *uritemplate.Template // nil when the URI template does not parse
}

// AddResources registers resources with r. It panics on a URI registered
// twice.
func (r *Registry) AddResources(resources ...Resource) {
	for _, res := range resources {
		d := res.Descriptor()
		for _, have := range r.feat.desc.Resources {
			if have.URI == d.URI {
				panic(fmt.Sprintf("warden: resource %q registered twice", d.URI))
			}
		}
		r.feat.resources = append(r.feat.resources, res)
		r.feat.desc.Resources = append(r.feat.desc.Resources, d)
	}
}

// AddTemplates registers resource templates with r. It panics on a URI
// template registered twice. A template that does not parse is still
// declared (the host refuses the module, naming it) but never matches.
func (r *Registry) AddTemplates(templates ...ResourceTemplate) {
	for _, t := range templates {
		d := t.Descriptor()
		for _, have := range r.feat.desc.ResourceTemplates {
			if have.URITemplate == d.URITemplate {
				panic(fmt.Sprintf("warden: resource template %q registered twice", d.URITemplate))
			}
		}
		tmpl, _ := uritemplate.New(d.URITemplate)
		r.feat.templates = append(r.feat.templates, registeredTemplate{t, tmpl})
		r.feat.desc.ResourceTemplates = append(r.feat.desc.ResourceTemplates, d)
	}
}

// AddPrompts registers prompts with r. It panics on a name registered
// twice.
func (r *Registry) AddPrompts(prompts ...Prompt) {
	for _, p := range prompts {
		d := p.Descriptor()
		for _, have := range r.feat.desc.Prompts {
			if have.Name == d.Name {
				panic(fmt.Sprintf("warden: prompt %q registered twice", d.Name))
			}
		}
		r.feat.prompts = append(r.feat.prompts, p)
		r.feat.desc.Prompts = append(r.feat.desc.Prompts, d)
	}
}

// RegisterResources adds resources to the module; call it from init.
func RegisterResources(resources ...Resource) { module.AddResources(resources...) }

// RegisterTemplates adds resource templates to the module; call it from init.
func RegisterTemplates(templates ...ResourceTemplate) { module.AddTemplates(templates...) }

// RegisterPrompts adds prompts to the module; call it from init.
func RegisterPrompts(prompts ...Prompt) { module.AddPrompts(prompts...) }

// ReadResource runs one warden_read_resource request against r and returns
// the response JSON. Like Dispatch it never panics.
func (r *Registry) ReadResource(request []byte, host HostFuncs) []byte {
	var req tool.ResourceRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return encodeError(Failed("decode request: %v", err), nil)
	}
	ctx := NewContext(req.CallID, "", host)
	for _, res := range r.feat.resources {
		if res.Descriptor().URI == req.URI {
			return respond(func() (any, error) { return res.Read(ctx, req.URI) })
		}
	}
	for _, rt := range r.feat.templates {
		if rt.tmpl == nil {
			continue
		}
		if values := rt.tmpl.Match(req.URI); values != nil {
			vars := map[string]string{}
			for _, name := range rt.tmpl.Varnames() {
				if v := values.Get(name); v.Valid() {
					vars[name] = v.String()
				}
			}
			return respond(func() (any, error) { return rt.t.Read(ctx, req.URI, vars) })
		}
	}
	return encodeError(NotFound("this module has no resource %q", req.URI), nil)
}

// GetPrompt runs one warden_get_prompt request against r.
func (r *Registry) GetPrompt(request []byte, host HostFuncs) []byte {
	var req tool.PromptRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return encodeError(Failed("decode request: %v", err), nil)
	}
	if req.Arguments == nil {
		req.Arguments = map[string]string{}
	}
	ctx := NewContext(req.CallID, "", host)
	for _, p := range r.feat.prompts {
		if p.Descriptor().Name == req.Name {
			return respond(func() (any, error) { return p.Get(ctx, req.Arguments) })
		}
	}
	return encodeError(NotFound("this module has no prompt %q", req.Name), nil)
}

// Complete runs one warden_complete request against r. A prompt or
// template that is not a Completer completes nothing.
func (r *Registry) Complete(request []byte, host HostFuncs) []byte {
	var req tool.CompleteRequest
	if err := json.Unmarshal(request, &req); err != nil {
		return encodeError(Failed("decode request: %v", err), nil)
	}
	ctx := NewContext(req.CallID, "", host)
	resolved := map[string]string{}
	if req.Context != nil && req.Context.Arguments != nil {
		resolved = req.Context.Arguments
	}
	var target any
	switch req.Ref.Type {
	case "ref/prompt":
		for _, p := range r.feat.prompts {
			if p.Descriptor().Name == req.Ref.Name {
				target = p
			}
		}
	case "ref/resource":
		for _, rt := range r.feat.templates {
			if rt.t.Descriptor().URITemplate == req.Ref.URI {
				target = rt.t
			}
		}
	}
	if target == nil {
		return encodeError(NotFound("this module has nothing to complete for %s %q", req.Ref.Type, req.Ref.Name+req.Ref.URI), nil)
	}
	c, ok := target.(Completer)
	if !ok {
		return encodeCompletion(Completions())
	}
	return respond(func() (any, error) {
		res, err := c.Complete(ctx, req.Argument.Name, req.Argument.Value, resolved)
		if err == nil && res == nil {
			res = Completions()
		}
		return completionEnvelope{res}, err
	})
}

type completionEnvelope struct {
	Completion *tool.Completion `json:"completion"`
}

func encodeCompletion(c *tool.Completion) []byte {
	b, _ := json.Marshal(completionEnvelope{c})
	return b
}

// respond runs f, turning a panic into a "failed" error, and encodes its
// result or error as the response.
func respond(f func() (any, error)) (out []byte) {
	defer func() {
		if p := recover(); p != nil {
			out = encodeError(ErrorWithDetails(Failed("panic: %v", p),
				map[string]string{"panic": fmt.Sprint(p), "stack": string(debug.Stack())}), nil)
		}
	}()
	v, err := f()
	if err != nil {
		return encodeError(err, nil)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return encodeError(Failed("encode response: %v", err), nil)
	}
	if string(b) == "null" {
		return encodeError(Failed("returned no result"), nil)
	}
	return b
}

// ReadResource runs a request against the module's registry, as the
// warden_read_resource export does; for tests.
func ReadResource(request []byte, host HostFuncs) []byte { return module.ReadResource(request, host) }

// GetPrompt runs a request as the warden_get_prompt export does; for tests.
func GetPrompt(request []byte, host HostFuncs) []byte { return module.GetPrompt(request, host) }

// Complete runs a request as the warden_complete export does; for tests.
func Complete(request []byte, host HostFuncs) []byte { return module.Complete(request, host) }
