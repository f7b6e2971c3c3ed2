package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs/memory"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// The app serves, besides tools, the resources, resource templates and
// prompts its modules declare (runtime.Module.Features), and, when config
// server.resources.memory is on, the project memory's topics as
// memory://<topic> resources.

var _ mcpserver.Features = (*App)(nil)

// MemoryOwner is the owner of the memory resources: not a valid module
// name, so no module can claim it.
const MemoryOwner = "warden:memory"

// memoryTemplate reads any topic, listed or not.
const memoryTemplate = "memory://{+topic}"

// resourceState is the App's part of serving resources.
type resourceState struct {
	mu       sync.Mutex
	next     int
	watchers map[int]func(uri string)
	stop     func()
}

// watchMemory follows writes to the memory store, for the memory resources.
func (a *App) watchMemory() {
	if a.caps == nil || a.caps.memory == nil {
		return
	}
	a.res.stop = a.caps.memory.Watch(func(c memory.Change) {
		if !a.Config().Server.Resources.Memory {
			return
		}
		uri := memoryURI(c.Topic)
		a.res.mu.Lock()
		fs := make([]func(string), 0, len(a.res.watchers))
		for _, f := range a.res.watchers {
			fs = append(fs, f)
		}
		a.res.mu.Unlock()
		// The write's own call goes on; the notifications and the list's
		// resync (a topic may have appeared or gone) follow it.
		go func() {
			a.notify()
			for _, f := range fs {
				f(uri)
			}
		}()
	})
}

func memoryURI(topic string) string { return "memory://" + topic }

// WatchResources implements mcpserver.Features.
func (a *App) WatchResources(f func(uri string)) (cancel func()) {
	a.res.mu.Lock()
	defer a.res.mu.Unlock()
	if a.res.watchers == nil {
		a.res.watchers = map[int]func(string){}
	}
	id := a.res.next
	a.res.next++
	a.res.watchers[id] = f
	return func() {
		a.res.mu.Lock()
		defer a.res.mu.Unlock()
		delete(a.res.watchers, id)
	}
}

// Features implements mcpserver.Features: every loaded module's features,
// owned by the module, and the memory topics.
func (a *App) Features() mcpserver.ServedFeatures {
	var out mcpserver.ServedFeatures
	cfg := a.Config()
	for _, m := range a.catalog.Table().Modules() {
		f := m.Features()
		// As tools/list leaves out a hidden tool (or one held back while a
		// rival loads), a feature that runs as one is not listed, and so
		// not served: the server serves what it lists.
		listed := func(subject string) bool { return a.listedAs(cfg, m, subject) }
		for _, r := range f.Resources {
			if listed(r.Tool) {
				out.Resources = append(out.Resources, mcpserver.OwnedResource{Owner: m.Name(), ResourceDescriptor: r})
			}
		}
		for _, t := range f.ResourceTemplates {
			if listed(t.Tool) {
				out.Templates = append(out.Templates, mcpserver.OwnedTemplate{Owner: m.Name(), ResourceTemplateDescriptor: t})
			}
		}
		for _, p := range f.Prompts {
			if listed(p.Tool) {
				out.Prompts = append(out.Prompts, mcpserver.OwnedPrompt{Owner: m.Name(), PromptDescriptor: p})
			}
		}
	}
	if a.Config().Server.Resources.Memory && a.caps.memory != nil {
		topics, truncated, err := a.caps.memory.Topics()
		if err != nil {
			a.log.Warn("memory topics not listed as resources", "error", err)
			out.ResourcesIncomplete = "memory topics could not be listed: " + err.Error()
		}
		for _, e := range topics {
			size := e.Size
			out.Resources = append(out.Resources, mcpserver.OwnedResource{Owner: MemoryOwner, ResourceDescriptor: tool.ResourceDescriptor{
				URI: memoryURI(e.Topic), Name: e.Topic, MimeType: "text/markdown", Size: &size,
				Description: "project memory " + e.Topic,
			}})
		}
		if truncated {
			out.ResourcesIncomplete = fmt.Sprintf("only the first %d memory topics are listed; read others through %s", len(topics), memoryTemplate)
		}
		out.Templates = append(out.Templates, mcpserver.OwnedTemplate{Owner: MemoryOwner, ResourceTemplateDescriptor: tool.ResourceTemplateDescriptor{
			URITemplate: memoryTemplate, Name: "memory", MimeType: "text/markdown",
			Description: "a topic of the project memory store, e.g. memory://arch/db",
		}})
	}
	return out
}

// listedAs reports whether a feature of m that runs as the tool subject is
// listed: one that runs as no tool always is; one that runs as a tool is
// when List lists that very tool of m (served under its name, not lost to
// a rival module, exposed, not held back).
func (a *App) listedAs(cfg *config.Config, m *runtime.Module, subject string) bool {
	if subject == "" {
		return true
	}
	t := subjectTool(m, subject)
	if served, ok := a.catalog.Table().Tool(subject); !ok || t == nil || served != t || !cfg.Exposed(subject) {
		return false
	}
	bound, _, granted := cfg.GrantModule(t.Descriptor.Name)
	return a.catalog.HeldBy(cfg, bound, granted, t) == ""
}

var _ mcpserver.FeatureRouter = (*App)(nil)

// ResourceSubject implements mcpserver.FeatureRouter: a read of uri from a
// module runs as the tool of the resource or template the module routes
// uri to (runtime.Module.ResourceOwner: its resource of that URI, else the
// first template it declared that matches), which is served when that
// tool's features are listed. The memory resources run as no tool.
func (a *App) ResourceSubject(owner, uri string) (subject string, ok bool) {
	if owner == MemoryOwner {
		return "", true
	}
	m, err := a.module(owner)
	if err != nil {
		return "", false
	}
	if subject, ok = m.ResourceOwner(uri); !ok {
		return "", false
	}
	return subject, a.listedAs(a.Config(), m, subject)
}

// CompletionSubject implements mcpserver.FeatureRouter: a get or a
// completion of the prompt or template ref from owner runs as the tool it
// names, and is served while that tool is (listedAs).
func (a *App) CompletionSubject(owner string, ref tool.CompleteRef) (subject string, ok bool) {
	if owner == MemoryOwner {
		return "", true
	}
	m, err := a.module(owner)
	if err != nil {
		return "", false
	}
	if subject, ok = completionSubject(m.Features(), ref); !ok {
		return "", false
	}
	return subject, a.listedAs(a.Config(), m, subject)
}

// module returns the loaded module called name.
func (a *App) module(name string) (*runtime.Module, error) {
	for _, m := range a.catalog.Table().Modules() {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, tool.Errorf(tool.KindNotFound, "module %s is not loaded", name)
}

// ReadResource implements mcpserver.Features: the read runs as the tool
// its declaration names, under that tool's policy (admit).
func (a *App) ReadResource(ctx context.Context, call mcpserver.FeatureCall, uri string) (*tool.ResourceResult, error) {
	notServed := func() error { return tool.Errorf(tool.KindNotFound, "no resource %q is served", uri) }
	if call.Owner == MemoryOwner {
		if err := call.Pass.Admits(mcpserver.MethodReadResource, ""); err != nil {
			return nil, err
		}
		return a.readMemory(ctx, uri)
	}
	m, err := a.module(call.Owner)
	if err != nil {
		return nil, err
	}
	subject, ok := m.ResourceOwner(uri)
	if !ok {
		return nil, tool.Errorf(tool.KindNotFound, "module %s serves no resource %q", m.Name(), uri)
	}
	return runFeature(a, ctx, feature{method: mcpserver.MethodReadResource, target: uri, what: "resource " + uri,
		m: m, subject: subject, call: call, args: map[string]string{"uri": uri}, notServed: notServed},
		func(ctx context.Context, req runtime.CallRequest) (*tool.ResourceResult, *tool.Error) {
			return m.ReadResource(ctx, uri, req)
		})
}

func (a *App) readMemory(ctx context.Context, uri string) (*tool.ResourceResult, error) {
	if !a.Config().Server.Resources.Memory || a.caps.memory == nil {
		return nil, tool.Errorf(tool.KindNotFound, "memory resources are off (server.resources.memory)")
	}
	topic, ok := strings.CutPrefix(uri, "memory://")
	if !ok {
		return nil, tool.Errorf(tool.KindNotFound, "%q is not a memory:// URI", uri)
	}
	// The read runs as no tool: the caller's roles cap it
	// (access.roles.<r>.memory_resources), no grant does.
	if why := a.Policy().Person(principal.From(ctx)).MemoryResource(topic); why != "" {
		return nil, tool.Errorf(tool.KindDenied, "%s", why)
	}
	value, _, _, err := a.caps.memory.Read(topic)
	if err != nil {
		if te, ok := err.(*tool.Error); ok {
			return nil, te
		}
		return nil, tool.Errorf(tool.KindNotFound, "memory %q: %v", topic, err)
	}
	text := string(value)
	return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, MimeType: "text/markdown", Text: &text}}}, nil
}

// GetPrompt implements mcpserver.Features: the prompt runs as the tool it
// names, under that tool's policy (admit).
func (a *App) GetPrompt(ctx context.Context, call mcpserver.FeatureCall, name string, args map[string]string) (*tool.PromptResult, error) {
	m, err := a.module(call.Owner)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(m.Features().Prompts, func(p tool.PromptDescriptor) bool { return p.Name == name })
	if i < 0 {
		return nil, tool.Errorf(tool.KindNotFound, "module %s serves no prompt %q", m.Name(), name)
	}
	notServed := func() error { return tool.Errorf(tool.KindNotFound, "unknown prompt %q", name) }
	subject, request := m.Features().Prompts[i].Tool, map[string]any{"prompt": name, "arguments": args}
	return runFeature(a, ctx, feature{method: mcpserver.MethodGetPrompt, target: name, what: "prompt " + name,
		m: m, subject: subject, call: call, args: request, notServed: notServed},
		func(ctx context.Context, req runtime.CallRequest) (*tool.PromptResult, *tool.Error) {
			res, terr := m.GetPrompt(ctx, name, args, req)
			if terr != nil {
				return nil, terr
			}
			if bad := a.foreignEmbedded(m, "messages", promptBlocks(res)); bad != nil {
				return nil, bad
			}
			return res, nil
		})
}

// Complete implements mcpserver.Features: the completion runs as the tool
// its prompt or template names, under that tool's policy (admit). Memory
// topics complete from the store's list.
func (a *App) Complete(ctx context.Context, call mcpserver.FeatureCall, c tool.CompleteRequest) (*tool.Completion, error) {
	if call.Owner == MemoryOwner {
		if err := call.Pass.Admits(mcpserver.MethodComplete, ""); err != nil {
			return nil, err
		}
		return a.completeMemory(ctx, c.Argument.Value), nil
	}
	m, err := a.module(call.Owner)
	if err != nil {
		return nil, err
	}
	subject, found := completionSubject(m.Features(), c.Ref)
	notServed := func() error {
		return tool.Errorf(tool.KindNotFound, "completion/complete: no prompt or resource template %q (%s)", c.Ref.Name+c.Ref.URI, c.Ref.Type)
	}
	if !found {
		return nil, notServed()
	}
	what := "completion of prompt " + c.Ref.Name
	if c.Ref.Type == "ref/resource" {
		what = "completion of resource template " + c.Ref.URI
	}
	return runFeature(a, ctx, feature{method: mcpserver.MethodComplete, target: c.Ref.Name + c.Ref.URI, what: what,
		m: m, subject: subject, call: call, args: c, notServed: notServed},
		func(ctx context.Context, req runtime.CallRequest) (*tool.Completion, *tool.Error) {
			return m.Complete(ctx, c, req)
		})
}

// feature is one request for a feature of module m that runs as the tool
// subject ("" for none): how the audit names it (method, target), how
// messages do (what), and the arguments a record and a confirmation show.
type feature struct {
	method, target, what string
	m                    *runtime.Module
	subject              string
	call                 mcpserver.FeatureCall
	args                 any
	notServed            func() error
}

// runFeature is the one way the features run module code: observed
// (observeFeature), admitted under the subject's policy (admit, the app's
// half of the door), then run with the request admit built.
func runFeature[R any](a *App, ctx context.Context, f feature, run func(context.Context, runtime.CallRequest) (R, *tool.Error)) (R, error) {
	var res R
	err := a.observeFeature(ctx, f.method, f.target, f.m, f.subject, f.call, f.args, func(ctx context.Context) error {
		e, err := a.featureEntrance(f.method, f.what, f.m, f.subject, f.call, f.args, f.notServed)
		if err != nil {
			return err
		}
		ctx, req, _, err := a.admit(ctx, e)
		if err != nil {
			return err
		}
		var terr *tool.Error
		if res, terr = run(ctx, req); terr != nil {
			return terr
		}
		return nil
	})
	if err != nil {
		var zero R
		return zero, err
	}
	return res, nil
}

// completionSubject is the tool a completion of ref runs as: the one its
// prompt or resource template names.
func completionSubject(f *tool.Features, ref tool.CompleteRef) (subject string, found bool) {
	switch ref.Type {
	case "ref/prompt":
		if i := slices.IndexFunc(f.Prompts, func(p tool.PromptDescriptor) bool { return p.Name == ref.Name }); i >= 0 {
			return f.Prompts[i].Tool, true
		}
	case "ref/resource":
		if i := slices.IndexFunc(f.ResourceTemplates, func(t tool.ResourceTemplateDescriptor) bool { return t.URITemplate == ref.URI }); i >= 0 {
			return f.ResourceTemplates[i].Tool, true
		}
	}
	return "", false
}

func (a *App) completeMemory(ctx context.Context, prefix string) *tool.Completion {
	out := &tool.Completion{Values: []string{}}
	if !a.Config().Server.Resources.Memory || a.caps.memory == nil {
		return out
	}
	person := a.Policy().Person(principal.From(ctx))
	topics, truncated, err := a.caps.memory.Topics()
	if err != nil {
		return out
	}
	for _, e := range topics {
		if strings.HasPrefix(e.Topic, prefix) && person.MemoryResource(e.Topic) == "" {
			if len(out.Values) == tool.MaxCompletionValues {
				out.HasMore = true
				break
			}
			out.Values = append(out.Values, e.Topic)
		}
	}
	out.HasMore = out.HasMore || truncated
	return out
}

// spentStates is the ledger of spent requestStates replicas share (for
// mcpserver.Options.SpentStates): the memory store's database on the
// PostgreSQL backend, nil (each process its own) on the file backend.
func (a *App) spentStates() mcpserver.SpentStates {
	if l := a.caps.memory.SpentStates(); l != nil {
		return l
	}
	return nil
}
