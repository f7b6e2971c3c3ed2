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

// TestPassAdmits: a Pass admits only the request the door made it for; no
// Pass admits nothing; the operator's LocalPass admits what it is given.
func TestPassAdmits(t *testing.T) {
	door := &Pass{method: MethodReadResource, subject: "danger"}
	for _, c := range []struct {
		pass            *Pass
		method, subject string
		want            string
	}{
		{door, MethodReadResource, "danger", ""},
		{door, MethodReadResource, "other", `resources/read as tool "other" was admitted by the server's request pipeline as resources/read as tool "danger"; refused`},
		{door, MethodGetPrompt, "danger", `prompts/get as tool "danger" was admitted by the server's request pipeline as resources/read as tool "danger"; refused`},
		{nil, MethodCallTool, "danger", `tools/call as tool "danger" did not come through the server's request pipeline; refused`},
		{&Pass{}, MethodCallTool, "danger", `tools/call as tool "danger" did not come through the server's request pipeline; refused`},
		{LocalPass(), MethodCallTool, "danger", ""},
	} {
		err := c.pass.Admits(c.method, c.subject)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v admits %s as %s: %v", c.pass, c.method, c.subject, err)
			}
			continue
		}
		if te, ok := err.(*tool.Error); !ok || te.Kind != tool.KindInternal || te.Message != c.want {
			t.Errorf("%+v admits %s as %s: %v, want internal: %s", c.pass, c.method, c.subject, err, c.want)
		}
	}
}

// limitedFeatures is fakeFeatures with per-tool call limits.
type limitedFeatures struct {
	*fakeFeatures
	limits map[string]CallLimits
}

func (l *limitedFeatures) options(opts Options) Options {
	opts = l.fakeFeatures.options(opts)
	opts.CallLimits = l.CallLimits
	return opts
}

func (l *limitedFeatures) CallLimits(name string) CallLimits { return l.limits[name] }

// TestFeaturesShareTheToolsRate: a resource read, prompt get and
// completion that run as a tool count against that tool's rate, as its
// calls do (one bucket), and are refused over it with the tool's setting;
// a feature that runs as no tool is not; the Features method gets the
// Pass of its subject.
func TestFeaturesShareTheToolsRate(t *testing.T) {
	f := &limitedFeatures{fakeFeatures: &fakeFeatures{fakeTools: newFakeTools(desc("alpha"))},
		limits: map[string]CallLimits{"alpha": {Rate: &RateLimit{Rate: 0.5, Burst: 1, Setting: "tools.limits.alpha.rate"}}}}
	f.setFeatures(ServedFeatures{
		Resources: []OwnedResource{
			{Owner: "m", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://alpha", Name: "alpha", Tool: "alpha"}},
			{Owner: "m", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://free", Name: "free"}},
		},
		Prompts: []OwnedPrompt{{Owner: "m", PromptDescriptor: tool.PromptDescriptor{Name: "p", Tool: "alpha", Arguments: []tool.PromptArgument{{Name: "who"}}}}},
	})
	var subjects []string
	f.read = func(call FeatureCall, uri string) (*tool.ResourceResult, error) {
		subjects = append(subjects, call.Pass.Method()+" "+call.Pass.Subject())
		text := "read " + uri
		return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, Text: &text}}}, nil
	}
	clock := &fakeClock{now: time.Unix(1000, 0)}
	s, _ := newServer(t, f, Options{Now: clock.Now})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://alpha"}); err != nil {
		t.Fatalf("first read: %v", err)
	}
	over := "rate_limited: tool alpha is over its rate of 30/m calls (burst 1, tools.limits.alpha.rate); retry in 2s"
	_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://alpha"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError || rpcErr.Message != over ||
		string(rpcErr.Data) != `{"warden/kind":"rate_limited"}` {
		t.Errorf("second read = %v, want %s", err, over)
	}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p"})
	if !errors.As(err, &rpcErr) || rpcErr.Message != over {
		t.Errorf("prompt over the tool's rate = %v", err)
	}
	_, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"}, Argument: mcp.CompleteParamsArgument{Name: "who"}})
	if !errors.As(err, &rpcErr) || rpcErr.Message != over {
		t.Errorf("completion over the tool's rate = %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"})
	if err != nil || !res.IsError || text(res) != over {
		t.Errorf("a call of the tool after its resource spent the rate = %v %v", err, res)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://free"}); err != nil {
		t.Errorf("a resource that runs as no tool: %v", err)
	}
	clock.advance(2 * time.Second)
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://alpha"}); err != nil {
		t.Errorf("after the bucket refilled: %v", err)
	}
	if got := strings.Join(subjects, ","); got != "resources/read alpha,resources/read ,resources/read alpha" {
		t.Errorf("passes = %s", got)
	}
}

// FuzzDoorTarget: the HTTP scope check reads what a request names from
// the client's raw params before the go-sdk does; whatever the bytes, it
// does not panic, a tools/call's subject is the name it read, and a
// feature's subject is the one the server registered for what it read.
func FuzzDoorTarget(f *testing.F) {
	for _, seed := range []struct{ method, params string }{
		{"tools/call", `{"name":"alpha","arguments":{}}`},
		{"tools/call", `{"name":"a","name":"alpha"}`},
		{"resources/read", `{"uri":"fx://alpha"}`},
		{"resources/read", `{"uri":"fx://item/7"}`},
		{"resources/read", `{"URI":"fx://alpha"}`},
		{"prompts/get", `{"name":"p","arguments":{"who":"x"}}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"who","value":""}}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"fx://item/{id}"}}`},
		{"completion/complete", `{"ref":null}`},
		{"resources/read", `[`},
		{"ping", `{}`},
	} {
		f.Add(seed.method, []byte(seed.params))
	}
	ff := &fakeFeatures{fakeTools: newFakeTools(desc("alpha"))}
	ff.setFeatures(ServedFeatures{
		Resources: []OwnedResource{{Owner: "m", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://alpha", Name: "alpha", Tool: "alpha"}}},
		Templates: []OwnedTemplate{{Owner: "m", ResourceTemplateDescriptor: tool.ResourceTemplateDescriptor{URITemplate: "fx://item/{id}", Name: "item", Tool: "alpha"}}},
		Prompts:   []OwnedPrompt{{Owner: "m", PromptDescriptor: tool.PromptDescriptor{Name: "p", Tool: "alpha"}}},
	})
	logger, _ := testLogger()
	s := New(ff, ff.options(Options{Logger: logger}))
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		name, subject, ok := s.doorTarget(method, params)
		switch {
		case !ok && (name != "" && method == MethodCallTool):
			t.Errorf("tools/call %q: not a door target", name)
		case ok && method == MethodCallTool && subject != name:
			t.Errorf("tools/call %q runs as %q", name, subject)
		case ok && method != MethodCallTool && subject != "alpha":
			t.Errorf("%s %q: subject %q, want the registered alpha", method, name, subject)
		}
	})
}

// TestFeaturesHoldTheToolsSlot: a resource read that runs as a tool holds
// one of that tool's call slots (tools.limits.<tool>.max_in_flight) while
// it runs: a call of the tool meanwhile waits for it, and is refused when
// the wait runs out, naming the limit; once the read ends, the call runs.
func TestFeaturesHoldTheToolsSlot(t *testing.T) {
	f := &limitedFeatures{fakeFeatures: &fakeFeatures{fakeTools: newFakeTools(desc("alpha"))},
		limits: map[string]CallLimits{"alpha": {MaxInFlight: 1, InFlightSetting: "tools.limits.alpha.max_in_flight"}}}
	f.setFeatures(ServedFeatures{Resources: []OwnedResource{
		{Owner: "m", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://alpha", Name: "alpha", Tool: "alpha"}}}})
	entered, release := make(chan struct{}), make(chan struct{})
	f.read = func(call FeatureCall, uri string) (*tool.ResourceResult, error) {
		close(entered)
		<-release
		text := "read"
		return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, Text: &text}}}, nil
	}
	s, _ := newServer(t, f, Options{QueueWait: 50 * time.Millisecond})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()
	read := make(chan error, 1)
	go func() {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://alpha"})
		read <- err
	}()
	<-entered
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"})
	want := "timeout: server busy: waited 50ms (server.queue_wait) for a call slot: 1 calls of alpha are running, its limit (tools.limits.alpha.max_in_flight); retry later"
	if err != nil || !res.IsError || text(res) != want {
		t.Errorf("a call while the tool's resource runs = %v %q\nwant %q", err, text(res), want)
	}
	close(release)
	if err := <-read; err != nil {
		t.Fatalf("the read: %v", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"}); err != nil || res.IsError {
		t.Errorf("the call once the read ended: %v %+v", err, res)
	}
}

// ownerLimitedFeatures also answers the limits of a feature that runs as
// no tool: those of its owner's instances.
type ownerLimitedFeatures struct {
	*limitedFeatures
	owners map[string]CallLimits
}

func (l *ownerLimitedFeatures) options(opts Options) Options {
	opts = l.limitedFeatures.options(opts)
	opts.OwnerLimits = l.OwnerLimits
	return opts
}

func (l *ownerLimitedFeatures) OwnerLimits(owner string) CallLimits { return l.owners[owner] }

// TestSubjectlessFeatureHoldsItsModulesSlot: a feature that runs as no
// tool still runs on one of its module's instances, so it waits for and
// holds one of the module's slots as a call of the module's tools does: a
// client reading it cannot take the module's instances past the server's
// fair queue (its calls waiting inside the runtime instead, ahead of other
// clients'), and a call of the module's tool while it runs is told the
// module is busy.
func TestSubjectlessFeatureHoldsItsModulesSlot(t *testing.T) {
	module := CallLimits{Module: "m", MaxInstances: 1, InstancesSetting: "tools.limits.m.max_instances"}
	f := &ownerLimitedFeatures{limitedFeatures: &limitedFeatures{fakeFeatures: &fakeFeatures{fakeTools: newFakeTools(desc("alpha"))},
		limits: map[string]CallLimits{"alpha": module}}, owners: map[string]CallLimits{"m": module}}
	f.setFeatures(ServedFeatures{Resources: []OwnedResource{
		{Owner: "m", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://free", Name: "free"}}}})
	entered, release := make(chan struct{}), make(chan struct{})
	f.read = func(call FeatureCall, uri string) (*tool.ResourceResult, error) {
		close(entered)
		<-release
		text := "read"
		return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, Text: &text}}}, nil
	}
	s, _ := newServer(t, f, Options{QueueWait: 50 * time.Millisecond})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()
	read := make(chan error, 1)
	go func() {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://free"})
		read <- err
	}()
	<-entered
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"})
	want := "timeout: server busy: waited 50ms (server.queue_wait) for a call slot: 1 calls of module m are running, one on each of its instances (tools.limits.m.max_instances); retry later"
	if err != nil || !res.IsError || text(res) != want {
		t.Errorf("a call while the module's tool-less resource runs = %v %q\nwant %q", err, text(res), want)
	}
	close(release)
	if err := <-read; err != nil {
		t.Fatalf("the read: %v", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"}); err != nil || res.IsError {
		t.Errorf("the call once the read ended: %v %+v", err, res)
	}
}

// passRecorder is fakeFeatures that keeps the Pass of every request that
// reached it.
type passRecorder struct {
	*fakeFeatures
	mu     sync.Mutex
	passes []*Pass
}

// options: the recorder is the Features, for its GetPrompt and Complete.
func (r *passRecorder) options(opts Options) Options {
	opts = r.fakeFeatures.options(opts)
	opts.Features = r
	return opts
}

func (r *passRecorder) keep(p *Pass) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.passes = append(r.passes, p)
}

func (r *passRecorder) GetPrompt(ctx context.Context, call FeatureCall, name string, args map[string]string) (*tool.PromptResult, error) {
	r.keep(call.Pass)
	return r.fakeFeatures.GetPrompt(ctx, call, name, args)
}

func (r *passRecorder) Complete(ctx context.Context, call FeatureCall, req tool.CompleteRequest) (*tool.Completion, error) {
	r.keep(call.Pass)
	return r.fakeFeatures.Complete(ctx, call, req)
}

// TestClientsNeverGetALocalPass: whatever a client sends, over stdio or
// HTTP, at either revision, the Pass that reaches the app is the door's,
// for that request's method and subject: never the operator's LocalPass
// (which skips the client's scopes, rates and slots), and not one that
// admits another tool.
func TestClientsNeverGetALocalPass(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := &passRecorder{fakeFeatures: &fakeFeatures{fakeTools: newFakeTools(desc("alpha"))}}
			f.setFeatures(ServedFeatures{
				Resources: []OwnedResource{{Owner: "m", ResourceDescriptor: tool.ResourceDescriptor{URI: "fx://alpha", Name: "alpha", Tool: "alpha"}}},
				Prompts:   []OwnedPrompt{{Owner: "m", PromptDescriptor: tool.PromptDescriptor{Name: "p", Tool: "alpha"}}},
			})
			f.read = func(call FeatureCall, uri string) (*tool.ResourceResult, error) {
				f.keep(call.Pass)
				text := "read"
				return &tool.ResourceResult{Contents: []tool.ResourceContents{{URI: uri, Text: &text}}}, nil
			}
			f.fakeTools.call = func(_ context.Context, c Call) (*tool.Result, error) {
				f.keep(c.Pass)
				return &tool.Result{Content: []tool.Content{tool.TextContent("called")}}, nil
			}
			s, _ := newServer(t, f, Options{})
			cs := connect(t, s, tr, nil)
			ctx := context.Background()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "alpha"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "fx://alpha"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "p"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "p"},
				Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}}); err != nil {
				t.Fatal(err)
			}
			methods := []string{MethodCallTool, MethodReadResource, MethodGetPrompt, MethodComplete}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.passes) != len(methods) {
				t.Fatalf("%d requests reached the app, want %d", len(f.passes), len(methods))
			}
			for i, p := range f.passes {
				if p == nil || p.local || p.Method() != methods[i] || p.Subject() != "alpha" {
					t.Errorf("request %d (%s): pass %+v, want the door's for %s as alpha", i, methods[i], p, methods[i])
					continue
				}
				if err := p.Admits(methods[i], "beta"); err == nil {
					t.Errorf("%s: the pass admits another tool", methods[i])
				}
			}
		})
	}
}
