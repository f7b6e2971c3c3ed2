package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// Features is what Options.Features holds: resources, resource templates
// and prompts served besides the tools (and completions of their
// arguments). The server lists them with the go-sdk, resyncing them with
// the tools (Tools.Subscribe), and routes each request to the owner that
// declared it.
//
// Each feature names its policy subject (the descriptor's Tool): the tool
// whose policy a read, get or completion runs under, "" for none. The
// server applies the subject's OAuth scopes, rates and call limits in the
// door every request into module code goes through, and hands the methods
// below a [Pass] for it; they must refuse a request whose Pass does not
// admit the subject they resolve, and apply the rest of the subject's
// policy (exposure, gates, grants) as a call of the tool would.
type Features interface {
	// Features lists everything served besides tools, each with its owner
	// (a module's name). A URI, URI template or prompt name that two owners
	// declare is served by neither, and logged naming both. A feature whose
	// subject is not served to clients (hidden) is not listed.
	Features() ServedFeatures
	// ReadResource reads uri for the owner that declared it (or declared
	// the template it matched). A failure is a *tool.Error of its kind.
	ReadResource(ctx context.Context, call FeatureCall, uri string) (*tool.ResourceResult, error)
	// GetPrompt gets a prompt of the owner.
	GetPrompt(ctx context.Context, call FeatureCall, name string, args map[string]string) (*tool.PromptResult, error)
	// Complete completes an argument of one of the owner's prompts or
	// resource templates.
	Complete(ctx context.Context, call FeatureCall, req tool.CompleteRequest) (*tool.Completion, error)
	// WatchResources registers f to hear the URI of each resource whose
	// content changed (notifications/resources/updated) and returns a
	// function that unregisters it.
	WatchResources(f func(uri string)) (cancel func())
}

// FeatureRouter is what Options.FeatureRouter holds: the routing of a
// Features whose owners route requests themselves and whose policy subjects may change between two resyncs (a
// tool hidden by a config reload, a module reloaded whose prompt now names
// another tool). The door takes each request's policy subject from it at
// the request, not from the last resync, so that the tool whose scopes,
// rates and limits it applies is the tool the owner's code then runs as
// (and the Pass admits it), and a request for a feature of a tool hidden
// meanwhile is not found, without naming the tool. A URI that several of an
// owner's templates match is read by the template the owner picks (a
// module: the first it declared), which the go-sdk's order of URI
// templates does not know.
type FeatureRouter interface {
	// ResourceSubject is the policy subject of a read of uri from owner,
	// and whether owner serves that read to clients: ok is false for a
	// URI it does not serve, or one it would read as a tool not served
	// (hidden), which is then not found.
	ResourceSubject(owner, uri string) (subject string, ok bool)
	// CompletionSubject is the same for the prompt or resource template
	// ref names (a prompts/get is ref/prompt): the subject a get or a
	// completion of it runs as, and whether owner serves it to clients.
	CompletionSubject(owner string, ref tool.CompleteRef) (subject string, ok bool)
}

// ServedFeatures is what a Features serves besides tools.
type ServedFeatures struct {
	Resources []OwnedResource
	Templates []OwnedTemplate
	Prompts   []OwnedPrompt
	// ResourcesIncomplete, when set, says why the resource list is not
	// complete (e.g. more memory topics than are listed); resources/list
	// then carries it under _meta[tool.MetaIncomplete].
	ResourcesIncomplete string
	// Subscribable reports whether a client may subscribe to uri: a
	// resource whose owner announces changes. nil: every served URI.
	Subscribable func(uri string) bool
}

// OwnedResource is a resource and the owner that serves it. Its Tool is
// its policy subject.
type OwnedResource struct {
	Owner string
	tool.ResourceDescriptor
}

// OwnedTemplate is a resource template and its owner; its Tool is its
// policy subject.
type OwnedTemplate struct {
	Owner string
	tool.ResourceTemplateDescriptor
}

// OwnedPrompt is a prompt and its owner; its Tool is its policy subject.
type OwnedPrompt struct {
	Owner string
	tool.PromptDescriptor
}

// FeatureCall is one resource read, prompt get or completion.
type FeatureCall struct {
	// Owner is the owner that declared the feature.
	Owner string
	// Session is as in Call.
	Session string
	// Observer receives the run's progress and log lines; never nil.
	Observer tool.Observer
	// Client is as in Call: what the run may ask of the client; nil for a
	// completion, which has no way to ask.
	Client tool.Client
	// Pass is as in Call.
	Pass *Pass
}

// featureState is the server's side of the features: what the go-sdk
// server holds, by key, with the owner and a fingerprint.
type featureState struct {
	resources map[string]registeredFeature // by URI
	templates map[string]registeredFeature // by URI template
	prompts   map[string]registeredFeature // by name
	// incomplete is ServedFeatures.ResourcesIncomplete of the last resync.
	incomplete   string
	subscribable func(uri string) bool
	conflicts    map[string]bool // logged conflicts, to log each once
}

type registeredFeature struct {
	owner, subject string
	fingerprint    []byte
}

func newFeatureState() *featureState {
	return &featureState{
		resources: map[string]registeredFeature{},
		templates: map[string]registeredFeature{},
		prompts:   map[string]registeredFeature{},
		conflicts: map[string]bool{},
	}
}

// featureOptions sets the go-sdk options the features need: the
// completion and subscription handlers. Called by New; nothing without
// Options.Features.
func (s *Server) featureOptions(opts *mcp.ServerOptions) {
	if s.opts.Features == nil {
		return
	}
	// Declared from the start, like tools: a module still loading (or added
	// by a hot reload) may bring resources and prompts, and a client
	// decides at initialize whether to ask for them at all.
	opts.Capabilities.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
	opts.Capabilities.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	opts.Capabilities.Completions = &mcp.CompletionCapabilities{}
	opts.CompletionHandler = s.complete
	opts.SubscribeHandler = s.subscribe
	opts.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
}

// startFeatures follows resource changes. Called by New after the first
// resync.
func (s *Server) startFeatures() func() {
	f := s.opts.Features
	if f == nil {
		return func() {}
	}
	s.sdk.AddReceivingMiddleware(s.featureMiddleware)
	return f.WatchResources(func(uri string) {
		if err := s.sdk.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
			s.log.Warn("resource update not sent", "uri", uri, "error", err)
		}
	})
}

// featureMiddleware marks an incomplete resources/list.
func (s *Server) featureMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.ListResourcesResult)
		if err != nil || !ok {
			return res, err
		}
		s.syncMu.Lock()
		incomplete := s.feat.incomplete
		s.syncMu.Unlock()
		if incomplete != "" {
			if r.Meta == nil {
				r.Meta = mcp.Meta{}
			}
			r.Meta[tool.MetaIncomplete] = incomplete
		}
		return res, err
	}
}

// resyncFeatures makes the go-sdk server's resources, templates and
// prompts equal to what Options.Features serves. Callers hold syncMu.
func (s *Server) resyncFeatures() {
	f := s.opts.Features
	if f == nil {
		return
	}
	served := f.Features()
	st := s.feat
	st.incomplete = served.ResourcesIncomplete
	st.subscribable = served.Subscribable

	updated := syncFeatures(s, "resource", served.Resources, st.resources,
		func(r OwnedResource) (string, string, string) { return r.URI, r.Owner, r.Tool },
		func(r OwnedResource) error { return r.Validate("resource") },
		func(r OwnedResource) error {
			s.sdk.AddResource(resourceFor(&r.ResourceDescriptor), s.readHandler(r.Owner, r.Tool))
			return nil
		},
		s.sdk.RemoveResources)
	syncFeatures(s, "resource template", served.Templates, st.templates,
		func(t OwnedTemplate) (string, string, string) { return t.URITemplate, t.Owner, t.Tool },
		func(t OwnedTemplate) error { return t.Validate("resource template") },
		func(t OwnedTemplate) error { return s.addTemplate(&t.ResourceTemplateDescriptor, t.Owner) },
		s.sdk.RemoveResourceTemplates)
	syncFeatures(s, "prompt", served.Prompts, st.prompts,
		func(p OwnedPrompt) (string, string, string) { return p.Name, p.Owner, p.Tool },
		func(p OwnedPrompt) error { return p.Validate("prompt") },
		func(p OwnedPrompt) error {
			s.sdk.AddPrompt(promptFor(&p.PromptDescriptor), s.promptHandler(p.Owner, p.Tool, p.Name))
			return nil
		},
		s.sdk.RemovePrompts)

	// A resource whose declaration changed on a reload may read
	// differently now: tell its subscribers.
	for _, uri := range updated {
		go s.sdk.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

// syncFeatures makes the go-sdk server's features of one kind (registered,
// by key) equal to items: a key declared by one owner, valid and accepted
// by the protocol layer, is registered (again if its declaration changed);
// the rest are removed. It returns the keys registered again.
func syncFeatures[T any](s *Server, kind string, items []T, registered map[string]registeredFeature,
	keyOf func(T) (key, owner, subject string), validate, add func(T) error, remove func(...string)) (changed []string) {
	byKey := map[string][]T{}
	for _, it := range items {
		key, _, _ := keyOf(it)
		byKey[key] = append(byKey[key], it)
	}
	seen := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		all := byKey[key]
		owners := make([]string, len(all))
		for i, it := range all {
			_, owners[i], _ = keyOf(it)
		}
		if !s.unique(kind, key, owners) {
			continue
		}
		it := all[0]
		_, _, subject := keyOf(it)
		if err := validate(it); err != nil {
			s.log.Error("skipping invalid "+kind, "key", key, "owner", owners[0], "error", err)
			continue
		}
		fp := fingerprint(it)
		old, had := registered[key]
		if had && bytes.Equal(old.fingerprint, fp) {
			seen[key] = true
			continue
		}
		if err := add(it); err != nil {
			s.log.Error("skipping "+kind+" the protocol layer refused", "key", key, "error", err)
			continue
		}
		seen[key] = true
		if had {
			changed = append(changed, key)
		}
		registered[key] = registeredFeature{owner: owners[0], subject: subject, fingerprint: fp}
	}
	var gone []string
	for key := range registered {
		if !seen[key] {
			gone = append(gone, key)
			delete(registered, key)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	return changed
}

// unique reports whether exactly one owner declares key; otherwise it logs
// the conflict (once while it lasts) naming every owner.
func (s *Server) unique(kind, key string, owners []string) bool {
	id := kind + "\x00" + key
	if len(owners) == 1 {
		delete(s.feat.conflicts, id)
		return true
	}
	if !s.feat.conflicts[id] {
		s.feat.conflicts[id] = true
		s.log.Error(fmt.Sprintf("%s declared by more than one module; serving none of them", kind),
			"key", key, "modules", strings.Join(owners, ", "))
	}
	return false
}

func fingerprint(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// addTemplate registers a template; AddResourceTemplate panics on a
// template the go-sdk cannot parse, which must cost one template only.
func (s *Server) addTemplate(t *tool.ResourceTemplateDescriptor, owner string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description,
		MIMEType: t.MimeType, Annotations: annotationsFor(t.Annotations), Icons: iconsFor(t.Icons),
	}, s.readHandler(owner, t.Tool))
	return nil
}

func resourceFor(r *tool.ResourceDescriptor) *mcp.Resource {
	out := &mcp.Resource{
		URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MimeType,
		Annotations: annotationsFor(r.Annotations), Icons: iconsFor(r.Icons),
	}
	if r.Size != nil {
		out.Size = *r.Size
	}
	return out
}

func promptFor(p *tool.PromptDescriptor) *mcp.Prompt {
	out := &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Icons: iconsFor(p.Icons)}
	for _, a := range p.Arguments {
		out.Arguments = append(out.Arguments, &mcp.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
	}
	return out
}

func iconsFor(icons []tool.Icon) []mcp.Icon {
	var out []mcp.Icon
	for _, icon := range icons {
		out = append(out, mcp.Icon{Source: icon.Src, MIMEType: icon.MimeType, Sizes: icon.Sizes, Theme: mcp.IconTheme(icon.Theme)})
	}
	return out
}

// featureError maps a feature's failure onto a JSON-RPC error: an unknown
// resource is MCP's resource-not-found error, bad arguments are invalid
// params, and every other failure (the sandbox's included) an internal
// error whose data carries its kind, like a tool result's _meta.
func featureError(err error, uri string) error {
	var te *tool.Error
	if !errors.As(err, &te) {
		te = tool.Errorf(tool.KindInternal, "%v", err)
	}
	switch {
	case te.Kind == tool.KindNotFound && uri != "":
		return mcp.ResourceNotFoundError(uri)
	case te.Kind == tool.KindNotFound:
		// Worded like the go-sdk's own answer to a name it does not serve
		// (`unknown prompt "x"`), which a feature no longer served (its tool
		// hidden since the list was synced) must be indistinguishable from.
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: te.Message}
	case te.Kind == tool.KindInvalidArguments:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: te.Error()}
	}
	data, _ := json.Marshal(map[string]string{tool.MetaKind: string(te.Kind)})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: te.Error(), Data: data}
}

// featureDoor is the door of a feature request of method: its failures,
// refusals included, are JSON-RPC errors (featureError; uri, when set,
// makes a not-found MCP's resource-not-found error).
func featureDoor[R any](method, owner, name, what, subject, uri string, stopped func(mcp.InputRequestMap, string) R) *door[R] {
	return &door[R]{
		method: method, owner: owner, name: name, what: what, subject: subject,
		refused: func(r *tool.Result) (R, error) {
			var zero R
			return zero, featureError(r.Error, "")
		},
		stopped: stopped,
		failed: func(err error) (R, error) {
			var zero R
			return zero, featureError(err, uri)
		},
	}
}

// readHandler reads a resource (or a URI a template matched) of owner,
// through the door as subject.
func (s *Server) readHandler(owner, subject string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		subject, ok := s.readSubject(owner, subject, uri)
		if !ok {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		d := featureDoor(MethodReadResource, owner, uri, "resource "+uri, subject, uri,
			func(inputs mcp.InputRequestMap, state string) *mcp.ReadResourceResult {
				return &mcp.ReadResourceResult{InputRequests: inputs, RequestState: state}
			})
		d.session, d.extra, d.progress = req.Session, req.Extra, req.Params.GetProgressToken()
		d.capsOf, d.state, d.responses = req.ClientCapabilities, req.Params.RequestState, req.Params.InputResponses
		return enter(s, ctx, d, func(ctx context.Context, e entry) (*mcp.ReadResourceResult, error) {
			res, err := s.opts.Features.ReadResource(ctx, featureCall(owner, e), uri)
			if err != nil {
				return nil, err
			}
			out := &mcp.ReadResourceResult{Contents: make([]*mcp.ResourceContents, 0, len(res.Contents))}
			for _, c := range res.Contents {
				rc := &mcp.ResourceContents{URI: c.URI, MIMEType: c.MimeType}
				switch {
				case c.Text != nil:
					rc.Text = *c.Text
				case c.Blob != nil:
					data, err := tool.DecodeBase64(*c.Blob)
					if err != nil {
						return nil, tool.Errorf(tool.KindBadOutput, "resource %s: blob is not base64: %v", uri, err)
					}
					rc.Blob = data
					if len(data) == 0 {
						rc.Blob = []byte{}
					}
				}
				out.Contents = append(out.Contents, rc)
			}
			return out, nil
		})
	}
}

// readSubject is the policy subject of a read of uri from owner, whose
// resource or template (the one the go-sdk routed uri to) declares
// declared: the owner's own answer when it routes reads itself
// (Options.FeatureRouter), and ok false when it does not serve the read.
func (s *Server) readSubject(owner, declared, uri string) (subject string, ok bool) {
	if r := s.opts.FeatureRouter; r != nil {
		return r.ResourceSubject(owner, uri)
	}
	return declared, true
}

// refSubject is readSubject for a prompt or a template's completion.
func (s *Server) refSubject(owner, declared string, ref tool.CompleteRef) (subject string, ok bool) {
	if r := s.opts.FeatureRouter; r != nil {
		return r.CompletionSubject(owner, ref)
	}
	return declared, true
}

// featureCall is the FeatureCall of a request the door admitted.
func featureCall(owner string, e entry) FeatureCall {
	return FeatureCall{Owner: owner, Session: e.Session, Observer: e.Observer, Client: e.Client, Pass: e.Pass}
}

// promptHandler gets the prompt name of owner, through the door as subject.
func (s *Server) promptHandler(owner, subject, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		args := req.Params.Arguments
		if args == nil {
			args = map[string]string{}
		}
		argsJSON, _ := json.Marshal(args)
		subject, ok := s.refSubject(owner, subject, tool.CompleteRef{Type: "ref/prompt", Name: name})
		if !ok {
			return nil, featureError(tool.Errorf(tool.KindNotFound, "unknown prompt %q", name), "")
		}
		d := featureDoor(MethodGetPrompt, owner, name, "prompt "+name, subject, "",
			func(inputs mcp.InputRequestMap, state string) *mcp.GetPromptResult {
				return &mcp.GetPromptResult{InputRequests: inputs, RequestState: state}
			})
		d.args, d.session, d.extra, d.progress = argsJSON, req.Session, req.Extra, req.Params.GetProgressToken()
		d.capsOf, d.state, d.responses = req.ClientCapabilities, req.Params.RequestState, req.Params.InputResponses
		return enter(s, ctx, d, func(ctx context.Context, e entry) (*mcp.GetPromptResult, error) {
			res, err := s.opts.Features.GetPrompt(ctx, featureCall(owner, e), name, args)
			if err != nil {
				return nil, err
			}
			out := &mcp.GetPromptResult{Description: res.Description, Messages: make([]*mcp.PromptMessage, 0, len(res.Messages))}
			for i := range res.Messages {
				m := &res.Messages[i]
				c, err := contentFor(&m.Content)
				if err != nil {
					return nil, tool.Errorf(tool.KindBadOutput, "prompt %s messages[%d]: %v", name, i, err)
				}
				out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: c})
			}
			return out, nil
		})
	}
}

// complete routes a completion to the owner of the prompt or template,
// through the door as its subject. A completion has no client link: it
// cannot ask the client anything.
func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	if p.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: missing ref"}
	}
	reg, ok := s.completionTarget(p.Ref)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("completion/complete: no prompt or resource template %q (%s)", p.Ref.Name+p.Ref.URI, p.Ref.Type)}
	}
	creq := tool.CompleteRequest{
		Ref:      tool.CompleteRef{Type: p.Ref.Type, Name: p.Ref.Name, URI: p.Ref.URI},
		Argument: tool.CompleteArgument{Name: p.Argument.Name, Value: p.Argument.Value},
	}
	if p.Context != nil {
		creq.Context = &tool.CompleteContext{Arguments: p.Context.Arguments}
	}
	name := p.Ref.Name + p.Ref.URI
	if reg.subject, ok = s.refSubject(reg.owner, reg.subject, creq.Ref); !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("completion/complete: no prompt or resource template %q (%s)", name, p.Ref.Type)}
	}
	d := featureDoor(MethodComplete, reg.owner, name, "completion", reg.subject, "",
		func(mcp.InputRequestMap, string) *mcp.CompleteResult { return nil }) // no link: never stops for answers
	d.session, d.extra = req.Session, req.Extra
	return enter(s, ctx, d, func(ctx context.Context, e entry) (*mcp.CompleteResult, error) {
		c, err := s.opts.Features.Complete(ctx, featureCall(reg.owner, e), creq)
		if err != nil {
			return nil, err
		}
		values := c.Values
		if values == nil {
			values = []string{}
		}
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: c.Total, HasMore: c.HasMore}}, nil
	})
}

// completionTarget is the served prompt or resource template a
// completion's ref names.
func (s *Server) completionTarget(ref *mcp.CompleteReference) (registeredFeature, bool) {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	var reg registeredFeature
	var ok bool
	switch ref.Type {
	case "ref/prompt":
		reg, ok = s.feat.prompts[ref.Name]
	case "ref/resource":
		reg, ok = s.feat.templates[ref.URI]
	}
	return reg, ok
}

// resourceTarget is the served resource or template that serves uri, the
// one the go-sdk routes a read of uri to: the resource of that URI, else
// the first matching template in the order of their URI templates.
func (s *Server) resourceTarget(uri string) (registeredFeature, bool) {
	s.syncMu.Lock()
	reg, fixed := s.feat.resources[uri]
	templates := maps.Clone(s.feat.templates)
	s.syncMu.Unlock()
	if !fixed {
		for _, key := range slices.Sorted(maps.Keys(templates)) {
			if t, err := tool.ParseURITemplate(key); err == nil && t.Regexp().MatchString(uri) {
				reg, fixed = templates[key], true
				break
			}
		}
	}
	if !fixed {
		return registeredFeature{}, false
	}
	// The owner decides which of its templates reads uri, and so the
	// subject (readHandler asks it the same).
	var ok bool
	reg.subject, ok = s.readSubject(reg.owner, reg.subject, uri)
	return reg, ok
}

// subscribe accepts a subscription to a served resource (or a URI a
// template serves) whose owner announces changes.
func (s *Server) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	s.syncMu.Lock()
	subscribable := s.feat.subscribable
	s.syncMu.Unlock()
	if _, served := s.resourceTarget(uri); !served {
		return mcp.ResourceNotFoundError(uri)
	}
	if subscribable != nil && !subscribable(uri) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("resource %s does not announce changes", uri)}
	}
	return nil
}

// isFeatureList reports whether method lists resources, templates or
// prompts: while modules load it waits for them as tools/list does.
func isFeatureList(method string) bool {
	return method == "resources/list" || method == "resources/templates/list" || method == "prompts/list"
}

// markLoading names the modules still loading in a feature list's _meta.
func markLoading(res mcp.Result, loading []string) {
	if len(loading) == 0 {
		return
	}
	var meta *mcp.Meta
	switch r := res.(type) {
	case *mcp.ListResourcesResult:
		meta = &r.Meta
	case *mcp.ListResourceTemplatesResult:
		meta = &r.Meta
	case *mcp.ListPromptsResult:
		meta = &r.Meta
	default:
		return
	}
	if *meta == nil {
		*meta = mcp.Meta{}
	}
	(*meta)[tool.MetaLoading] = loading
}

// awaitsFeature reports whether req reads a resource, gets a prompt or
// completes for one that is not served (yet).
func (s *Server) awaitsFeature(method string, req mcp.Request) bool {
	if s.opts.Features == nil {
		return false
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	switch p := req.GetParams().(type) {
	case *mcp.ReadResourceParams:
		_, ok := s.feat.resources[p.URI]
		return method == "resources/read" && !ok // a template may serve it: waiting is bounded
	case *mcp.GetPromptParams:
		_, ok := s.feat.prompts[p.Name]
		return method == "prompts/get" && !ok
	case *mcp.CompleteParams:
		if p.Ref == nil {
			return false
		}
		_, prompt := s.feat.prompts[p.Ref.Name]
		_, template := s.feat.templates[p.Ref.URI]
		return method == "completion/complete" && !prompt && !template
	}
	return false
}

// awaitFeature waits, as a tools/call of an unknown tool does, for the
// modules still loading (up to QueueWait), resyncing after each.
func (s *Server) awaitFeature(ctx context.Context, l Loader, method string, req mcp.Request) {
	if s.resyncPending.Load() || s.resyncRunning.Load() {
		s.resync()
	}
	if len(l.Loading()) == 0 || !s.awaitsFeature(method, req) {
		return
	}
	wait, cancel := context.WithTimeout(ctx, s.opts.QueueWait)
	defer cancel()
	for {
		more := l.AwaitLoad(wait)
		s.resync()
		if !more || !s.awaitsFeature(method, req) {
			return
		}
	}
}
