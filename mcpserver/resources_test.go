package mcpserver

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// fakeFeatures is fakeTools that also serves resources and prompts.
type fakeFeatures struct {
	*fakeTools
	fmu      sync.Mutex
	served   ServedFeatures
	read     func(call FeatureCall, uri string) (*tool.ResourceResult, error)
	watchers map[int]func(string)
	nextW    int
}

func (f *fakeFeatures) options(opts Options) Options {
	opts.Features = f
	return opts
}

func (f *fakeFeatures) Features() ServedFeatures {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	return f.served
}

func (f *fakeFeatures) setFeatures(s ServedFeatures) {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	f.served = s
}

func (f *fakeFeatures) ReadResource(_ context.Context, call FeatureCall, uri string) (*tool.ResourceResult, error) {
	f.fmu.Lock()
	read := f.read
	f.fmu.Unlock()
	if read != nil {
		return read(call, uri)
	}
	text := "read " + uri + " of " + call.Owner
	if uri == "fx://blob" {
		blob := "AQID"
		return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, MimeType: "application/octet-stream", Blob: &blob}}}, nil
	}
	return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, MimeType: "text/plain", Text: &text}}}, nil
}

func (f *fakeFeatures) GetPrompt(_ context.Context, call FeatureCall, name string, args map[string]string) (*tool.PromptResult, error) {
	if name == "broken" {
		return nil, tool.Errorf(tool.KindTrapped, "broken trapped: unreachable")
	}
	return &tool.PromptResult{Description: "d", Messages: []tool.PromptMessage{
		{Role: "user", Content: tool.TextContent("hello " + args["who"] + " from " + call.Owner)},
		{Role: "assistant", Content: tool.Content{Type: "image", Data: "AQID", MimeType: "image/png"}},
	}}, nil
}

func (f *fakeFeatures) Complete(_ context.Context, call FeatureCall, req tool.CompleteRequest) (*tool.Completion, error) {
	return &tool.Completion{Values: []string{req.Argument.Value + "-" + call.Owner}, Total: 1}, nil
}

func (f *fakeFeatures) WatchResources(fn func(string)) func() {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	if f.watchers == nil {
		f.watchers = map[int]func(string){}
	}
	id := f.nextW
	f.nextW++
	f.watchers[id] = fn
	return func() {
		f.fmu.Lock()
		defer f.fmu.Unlock()
		delete(f.watchers, id)
	}
}

func (f *fakeFeatures) changed(uri string) {
	f.fmu.Lock()
	var fs []func(string)
	for _, fn := range f.watchers {
		fs = append(fs, fn)
	}
	f.fmu.Unlock()
	for _, fn := range fs {
		fn(uri)
	}
}

func servedFixture() ServedFeatures {
	return ServedFeatures{
		Resources: []OwnedResource{
			{Owner: "a", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://text", Name: "text", MimeType: "text/plain", Description: "d"}},
			{Owner: "a", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://blob", Name: "blob"}},
			{Owner: "a", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://dup", Name: "dup"}},
			{Owner: "b", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://dup", Name: "dup"}},
		},
		Templates: []OwnedTemplate{{Owner: "b", ResourceTemplateDescriptor: tool.ResourceTemplateDescriptor{URITemplate: "fx://item/{id}", Name: "item"}}},
		Prompts: []OwnedPrompt{
			{Owner: "b", PromptDescriptor: tool.PromptDescriptor{Name: "greet", Description: "d", Arguments: []tool.PromptArgument{{Name: "who", Required: true}}}},
			{Owner: "a", PromptDescriptor: tool.PromptDescriptor{Name: "broken", Description: "d"}},
			{Owner: "a", PromptDescriptor: tool.PromptDescriptor{Name: "twice"}},
			{Owner: "c", PromptDescriptor: tool.PromptDescriptor{Name: "twice"}},
		},
		ResourcesIncomplete: "more exist",
	}
}

func TestFeaturesServed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := &fakeFeatures{fakeTools: newFakeTools(desc("echo"))}
			f.setFeatures(servedFixture())
			s, logs := newServer(t, f, Options{})
			cs := connect(t, s, tr, nil)
			ctx := context.Background()
			caps := cs.InitializeResult().Capabilities
			if caps.Prompts == nil || caps.Resources == nil || caps.Completions == nil || !caps.Resources.ListChanged {
				t.Fatalf("capabilities = %+v", caps)
			}
			if tr.protocol == "2025-11-25" && !caps.Resources.Subscribe {
				t.Fatalf("resources.subscribe not declared: %+v", caps.Resources)
			}

			lr, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, r := range lr.Resources {
				uris = append(uris, r.URI)
			}
			if strings.Join(uris, ",") != "fx://blob,fx://text" {
				t.Fatalf("resources = %v (the duplicate must be served by neither)", uris)
			}
			if lr.Meta[tool.MetaIncomplete] != "more exist" {
				t.Fatalf("resources/list _meta = %v", lr.Meta)
			}
			if !strings.Contains(logs.String(), "modules=\"a, b\"") || !strings.Contains(logs.String(), "modules=\"a, c\"") {
				t.Fatalf("conflicts not logged naming both modules:\n%s", logs)
			}
			lt, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "fx://item/{id}" {
				t.Fatalf("templates = %+v, %v", lt, err)
			}
			lp, err := cs.ListPrompts(ctx, nil)
			if err != nil || len(lp.Prompts) != 2 {
				t.Fatalf("prompts = %+v, %v", lp, err)
			}

			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://text"})
			if err != nil || rr.Contents[0].Text != "read fx://text of a" || rr.Contents[0].MIMEType != "text/plain" {
				t.Fatalf("read text = %+v, %v", rr, err)
			}
			rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://blob"})
			if err != nil || string(rr.Contents[0].Blob) != "\x01\x02\x03" {
				t.Fatalf("read blob = %+v, %v", rr, err)
			}
			rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://item/7"})
			if err != nil || rr.Contents[0].Text != "read fx://item/7 of b" {
				t.Fatalf("read template = %+v, %v", rr, err)
			}
			_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://dup"})
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != mcp.CodeResourceNotFound {
				t.Fatalf("read of a duplicate = %v, want resource not found", err)
			}

			gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "x"}})
			if err != nil || len(gp.Messages) != 2 || gp.Messages[0].Content.(*mcp.TextContent).Text != "hello x from b" {
				t.Fatalf("prompt = %+v, %v", gp, err)
			}
			if img, ok := gp.Messages[1].Content.(*mcp.ImageContent); !ok || gp.Messages[1].Role != "assistant" || string(img.Data) != "\x01\x02\x03" {
				t.Fatalf("prompt image = %+v", gp.Messages[1])
			}
			_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "broken"})
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError || !strings.Contains(je.Message, "trapped") || !strings.Contains(string(je.Data), `"warden/kind":"trapped"`) {
				t.Fatalf("broken prompt = %v", err)
			}

			cr, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "wo"}})
			if err != nil || strings.Join(cr.Completion.Values, ",") != "wo-b" {
				t.Fatalf("complete = %+v, %v", cr, err)
			}
			cr, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "fx://item/{id}"}, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}})
			if err != nil || strings.Join(cr.Completion.Values, ",") != "1-b" {
				t.Fatalf("complete template = %+v, %v", cr, err)
			}
			_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "nope"}, Argument: mcp.CompleteParamsArgument{Name: "x"}})
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("complete of an unknown prompt = %v", err)
			}
			// Tools are still served.
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo"}); err != nil || res.IsError {
				t.Fatalf("tool call = %+v, %v", res, err)
			}
		})
	}
}

// TestFeaturesCapabilitiesOnlyWhenServed: with nothing served, neither
// prompts, resources nor completions are declared.
// TestFeaturesCapabilitiesDeclaredWithFeatures: a server whose Tools serve
// features declares resources, prompts and completions from the start,
// before any is served (modules still loading, or added by a hot reload,
// may bring them; a client decides at initialize whether to ask), and
// answers their lists, empty; one whose Tools do not declares none.
func TestFeaturesCapabilitiesDeclaredWithFeatures(t *testing.T) {
	for _, tools := range []fake{newFakeTools(desc("echo")), &fakeFeatures{fakeTools: newFakeTools(desc("echo"))}} {
		features := tools.options(Options{}).Features != nil
		for _, tr := range transports {
			s, _ := newServer(t, tools, Options{})
			cs := connect(t, s, tr, nil)
			caps := cs.InitializeResult().Capabilities
			declared := caps.Prompts != nil && caps.Resources != nil && caps.Completions != nil
			none := caps.Prompts == nil && caps.Resources == nil && caps.Completions == nil
			if features && !declared || !features && !none {
				t.Fatalf("%s: %T: capabilities = %+v", tr.name, tools, caps)
			}
			if !features {
				continue
			}
			if caps.Resources.Subscribe != true || !caps.Resources.ListChanged || !caps.Prompts.ListChanged {
				t.Fatalf("%s: resources %+v prompts %+v", tr.name, caps.Resources, caps.Prompts)
			}
			prompts, err := cs.ListPrompts(context.Background(), nil)
			if err != nil || len(prompts.Prompts) != 0 {
				t.Fatalf("%s: prompts/list with none served = %v, %v", tr.name, prompts, err)
			}
		}
	}
}

// TestFeaturesHostileAndReload: a failing or malformed read is an error the
// client gets while the server keeps serving; a reload changes the lists.
func TestFeaturesHostileAndReload(t *testing.T) {
	f := &fakeFeatures{fakeTools: newFakeTools(desc("echo"))}
	f.setFeatures(servedFixture())
	s, _ := newServer(t, f, Options{})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()
	f.fmu.Lock()
	f.read = func(call FeatureCall, uri string) (*tool.ResourceResult, error) {
		switch uri {
		case "fx://text":
			return nil, tool.Errorf(tool.KindBadOutput, "resource fx://text response is 2000000 bytes, over the output limit of 1048576")
		default:
			blob := "%%%"
			return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, Blob: &blob}}}, nil
		}
	}
	f.fmu.Unlock()
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://text"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, "over the output limit") || !strings.Contains(string(je.Data), "bad_output") {
		t.Fatalf("huge read = %v", err)
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://blob"})
	if !errors.As(err, &je) || !strings.Contains(je.Message, "not base64") {
		t.Fatalf("bad blob = %v", err)
	}

	changed := make(chan struct{}, 8)
	cs2 := connect(t, s, transports[0], &mcp.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- struct{}{} },
	})
	served := servedFixture()
	served.Resources = append(served.Resources, OwnedResource{Owner: "a", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://new", Name: "new"}})
	f.setFeatures(served)
	f.reload(desc("echo"))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/list_changed after a reload")
	}
	lr, err := cs2.ListResources(ctx, nil)
	if err != nil || len(lr.Resources) != 3 {
		t.Fatalf("resources after reload = %+v, %v", lr, err)
	}
}

// TestResourceSubscribe: a subscribed session hears of a changed resource;
// an unsubscribed one does not; unknown URIs cannot be subscribed.
func TestResourceSubscribe(t *testing.T) {
	f := &fakeFeatures{fakeTools: newFakeTools(desc("echo"))}
	f.setFeatures(servedFixture())
	s, _ := newServer(t, f, Options{})
	updates := make(chan string, 8)
	cs := connect(t, s, transports[0], &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	})
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fx://text"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fx://item/3"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "fx://unknown"}); err == nil {
		t.Fatal("subscribed to a URI nothing serves")
	}
	f.changed("fx://blob") // not subscribed: no notification
	f.changed("fx://text")
	select {
	case uri := <-updates:
		if uri != "fx://text" {
			t.Fatalf("updated %s, want fx://text", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "fx://text"}); err != nil {
		t.Fatal(err)
	}
	f.changed("fx://text")
	f.changed("fx://item/3")
	select {
	case uri := <-updates:
		if uri != "fx://item/3" {
			t.Fatalf("updated %s after unsubscribing, want fx://item/3", uri)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/resources/updated")
	}
}

// loadingFeatures is fakeFeatures whose features arrive with a background
// load.
type loadingFeatures struct {
	*fakeFeatures
	lt *loadingTools
}

func (l *loadingFeatures) options(opts Options) Options {
	opts = l.fakeFeatures.options(opts)
	opts.Loader = l
	return opts
}

func (l *loadingFeatures) Loading() []string                  { return l.lt.Loading() }
func (l *loadingFeatures) AwaitLoad(ctx context.Context) bool { return l.lt.AwaitLoad(ctx) }

// TestFeaturesWhileLoading: a resource read and a prompt get of features a
// loading module will serve wait for it; a list answered while loading
// names the loading modules.
func TestFeaturesWhileLoading(t *testing.T) {
	ft := newFakeTools(desc("echo"))
	lt := &loadingTools{fakeTools: ft, loading: []string{"late"}, ended: make(chan struct{}), awaiting: make(chan struct{}, 8)}
	f := &loadingFeatures{fakeFeatures: &fakeFeatures{fakeTools: ft}, lt: lt}
	s, _ := newServer(t, f, Options{ListWait: -1})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()
	lr, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(lr.Prompts) != 0 || lr.Meta[tool.MetaLoading] == nil {
		t.Fatalf("prompts/list while loading = %+v, %v", lr, err)
	}
	got := make(chan error, 1)
	go func() {
		gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "x"}})
		if err == nil && gp.Messages[0].Content.(*mcp.TextContent).Text != "hello x from b" {
			err = errors.New("wrong prompt")
		}
		got <- err
	}()
	<-lt.awaiting // the get waits for the load
	f.setFeatures(servedFixture())
	lt.finish("late")
	if err := <-got; err != nil {
		t.Fatalf("prompt after the load: %v", err)
	}
}

// routedFeatures is fakeFeatures whose owner routes requests itself
// (FeatureRouter), with a routing that changes before the server resyncs:
// the prompt greet and the template fx://item/{id} were registered as tool
// "hidden"'s, and that tool is now hidden.
type routedFeatures struct {
	*fakeFeatures
	mu     sync.Mutex
	hidden bool
	gets   int // module runs of greet
}

// options: the router is the Features too, for its GetPrompt.
func (r *routedFeatures) options(opts Options) Options {
	opts = r.fakeFeatures.options(opts)
	opts.Features = r
	opts.FeatureRouter = r
	return opts
}

func (r *routedFeatures) ResourceSubject(owner, uri string) (string, bool) { return "", true }

func (r *routedFeatures) CompletionSubject(owner string, ref tool.CompleteRef) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return "hidden", !r.hidden
}

func (r *routedFeatures) GetPrompt(ctx context.Context, call FeatureCall, name string, args map[string]string) (*tool.PromptResult, error) {
	r.mu.Lock()
	r.gets++
	r.mu.Unlock()
	return r.fakeFeatures.GetPrompt(ctx, call, name, args)
}

// TestFeatureSubjectAskedAtTheRequest: a prompt or completion whose tool
// was hidden after the last resync is not found at once, as an unknown
// name, naming no tool, and no module code runs; the door does not use the
// subject it registered with.
func TestFeatureSubjectAskedAtTheRequest(t *testing.T) {
	f := &routedFeatures{fakeFeatures: &fakeFeatures{fakeTools: newFakeTools(desc("echo"))}}
	f.setFeatures(ServedFeatures{
		Templates: []OwnedTemplate{{Owner: "b", ResourceTemplateDescriptor: tool.ResourceTemplateDescriptor{URITemplate: "fx://item/{id}", Name: "item", Tool: "hidden"}}},
		Prompts:   []OwnedPrompt{{Owner: "b", PromptDescriptor: tool.PromptDescriptor{Name: "greet", Tool: "hidden", Arguments: []tool.PromptArgument{{Name: "who"}}}}},
	})
	s, _ := newServer(t, f, Options{})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "x"}}); err != nil {
		t.Fatalf("greet while served: %v", err)
	}
	f.mu.Lock()
	f.hidden = true
	f.mu.Unlock()
	_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "x"}})
	if err == nil || !strings.Contains(err.Error(), `unknown prompt "greet"`) || strings.Contains(err.Error(), "hidden") {
		t.Fatalf("greet once hidden: %v, want unknown prompt naming no tool", err)
	}
	for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "greet"}, {Type: "ref/resource", URI: "fx://item/{id}"}} {
		_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}})
		if err == nil || !strings.Contains(err.Error(), "no prompt or resource template") || strings.Contains(err.Error(), "hidden") {
			t.Fatalf("complete %+v once hidden: %v", ref, err)
		}
	}
	f.mu.Lock()
	gets := f.gets
	f.mu.Unlock()
	if gets != 1 {
		t.Fatalf("the prompt's module code ran %d times, want once (before it was hidden)", gets)
	}
}
