package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/hostfuncs"
	hfclient "github.com/warden-run/warden/hostfuncs/client"
	"github.com/warden-run/warden/tool"
)

// These tests serve fake tools that ask the client, through the real
// hostfuncs/client imports as a guest does, to the real go-sdk client: over
// sessions (2025-11-25, the server sends requests of its own) and over the
// 2026-07-28 protocol (input-required results, requestState, replay).

// hostAsk asks c's client through the warden.ask import, as a guest does,
// with every client feature granted. A guest that gets ErrInputRequired is
// stopped by a panic; hostAsk turns that back into the error.
func hostAsk(ctx context.Context, c Call, reqs ...tool.ClientRequest) (results []json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && tool.IsInputRequired(e) {
				results, err = nil, tool.ErrInputRequired
				return
			}
			panic(r)
		}
	}()
	body, err := json.Marshal(map[string]any{"requests": reqs})
	if err != nil {
		return nil, err
	}
	var ask hostfuncs.Capability
	for _, cap := range hfclient.New(0).List() {
		if cap.Name() == "ask" {
			ask = cap
		}
	}
	call := &hostfuncs.Call{
		Tool: c.Name, Grants: tool.Capabilities{Client: tool.ClientFeatures},
		Observer: c.Observer, Client: c.Client,
		Hold: func(time.Duration) func() { return func() {} },
	}
	out, err := ask.Serve(ctx, call, body)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any)["results"].([]json.RawMessage), nil
}

func elicitReq(key, message string) tool.ClientRequest {
	return tool.ClientRequest{Key: key, Method: tool.MethodElicit, Params: json.RawMessage(fmt.Sprintf(`{"message":%q}`, message))}
}

// toolText is the tool's own text in a message as the client receives it:
// after warden's line naming the tool (hfclient.Attribution), quoted.
func toolText(message string) string {
	header, quoted, ok := strings.Cut(message, "\n")
	if !ok || !strings.HasPrefix(header, "Question from tool ") {
		return "(not attributed) " + message
	}
	lines := strings.Split(quoted, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "> ")
	}
	return strings.Join(lines, "\n")
}

func sampleReq(key, prompt string) tool.ClientRequest {
	return tool.ClientRequest{Key: key, Method: tool.MethodSample, Params: json.RawMessage(fmt.Sprintf(
		`{"messages":[{"role":"user","content":{"type":"text","text":%q}}],"maxTokens":10}`, prompt))}
}

func rootsReq(key string) tool.ClientRequest {
	return tool.ClientRequest{Key: key, Method: tool.MethodRoots}
}

// asking is a Tools whose tools ask what their "text" argument says (the
// part before any ":"), and answer with every result, as a JSON array.
type asking struct {
	*fakeTools
	calls  atomic.Int64 // every run, replays included
	errors chan *tool.Error
}

// toolMode is what the "text" argument selects.
var toolModes = map[string][][]tool.ClientRequest{
	"plain":   nil,
	"elicit":  {{elicitReq("", "name?")}},
	"roots":   {{rootsReq("")}},
	"two":     {{elicitReq("", "first?")}, {elicitReq("", "second?")}},
	"samekey": {{elicitReq("q", "first?")}, {elicitReq("q", "second?")}},
	"mixed":   {{elicitReq("", "first?")}, {sampleReq("", "hello")}, {rootsReq("")}},
	"batch":   {{elicitReq("e", "first?"), sampleReq("s", "hello"), rootsReq("r")}},
	// A key of the tool's own that is also the name a keyless request gets.
	"collide": {{elicitReq("elicit-1", "first?"), elicitReq("", "second?")}},
}

func newAsking(names ...string) *asking {
	if len(names) == 0 {
		names = []string{"ask"}
	}
	var descs []tool.Descriptor
	for _, n := range names {
		descs = append(descs, desc(n))
	}
	a := &asking{fakeTools: newFakeTools(descs...), errors: make(chan *tool.Error, 16)}
	a.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		a.calls.Add(1)
		var args struct{ Text string }
		json.Unmarshal(c.Arguments, &args)
		mode, _, _ := strings.Cut(args.Text, ":")
		rounds, ok := toolModes[mode]
		if !ok {
			return tool.ErrorResult(tool.Errorf(tool.KindInvalidArguments, "no mode %q", mode)), nil
		}
		var all []json.RawMessage
		for _, reqs := range rounds {
			results, err := hostAsk(ctx, c, reqs...)
			if err != nil {
				var te *tool.Error
				if !errors.As(err, &te) {
					te = tool.Errorf(tool.KindInternal, "%v", err)
				}
				if !tool.IsInputRequired(err) {
					a.errors <- te
				}
				return tool.ErrorResult(te), nil
			}
			all = append(all, results...)
		}
		out, _ := json.Marshal(all)
		return &tool.Result{Content: []tool.Content{tool.TextContent(string(out))}}, nil
	})
	return a
}

// person is the client side: handlers that answer, and count.
type person struct {
	elicits, samples atomic.Int64
	// block, when set, makes the elicitation handler wait for its context
	// to end, signalling blocked and then unblocked.
	block     bool
	blocked   chan struct{}
	unblocked chan struct{}
}

func newPerson() *person {
	return &person{blocked: make(chan struct{}, 16), unblocked: make(chan struct{}, 16)}
}

func (p *person) options(mrtr bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if p.block {
				p.blocked <- struct{}{}
				<-ctx.Done()
				p.unblocked <- struct{}{}
				return nil, ctx.Err()
			}
			p.elicits.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": toolText(req.Params.Message)}}, nil
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			p.samples.Add(1)
			prompt := req.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "test-model", Role: "assistant",
				Content: &mcp.TextContent{Text: "the model read " + prompt}}, nil
		},
	}
	if !mrtr {
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return o
}

// connectPerson connects a client with p's handlers and a root.
func connectPerson(t *testing.T, s *Server, tr transport, p *person, mrtr bool) *mcp.ClientSession {
	t.Helper()
	cs := connect(t, s, tr, p.options(mrtr))
	return cs
}

func withRoots(o *mcp.ClientOptions) *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, o)
	c.AddRoots(&mcp.Root{URI: "file:///work", Name: "work"})
	return c
}

func callText(t *testing.T, cs *mcp.ClientSession, name, text string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call %s %q: %v", name, text, err)
	}
	return res
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T", res.Content[0])
	}
	return tc.Text
}

// answers decodes a tool's output and checks each result in turn.
func answers(t *testing.T, res *mcp.CallToolResult, want ...string) {
	t.Helper()
	if res.IsError || res.NeedsInput() {
		t.Fatalf("result is an error or needs input: %+v %s", res, resultText(t, res))
	}
	var got []json.RawMessage
	if err := json.Unmarshal([]byte(resultText(t, res)), &got); err != nil {
		t.Fatalf("tool output %q: %v", resultText(t, res), err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d results %s, want %d", len(got), resultText(t, res), len(want))
	}
	for i, w := range want {
		if !strings.Contains(string(got[i]), w) {
			t.Errorf("result %d is %s, want it to hold %s", i, got[i], w)
		}
	}
}

func rpcCode(t *testing.T, err error, code int64) *jsonrpc.Error {
	t.Helper()
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != code {
		t.Fatalf("error %v, want JSON-RPC error %d", err, code)
	}
	return rpcErr
}

func TestClientAnswersReachTheTool(t *testing.T) {
	cases := []struct {
		mode   string
		rounds int
		want   []string
	}{
		{"elicit", 1, []string{`"answer":"name?"`}},
		{"two", 2, []string{`"answer":"first?"`, `"answer":"second?"`}},
		{"samekey", 2, []string{`"answer":"first?"`, `"answer":"second?"`}},
		{"mixed", 3, []string{`"answer":"first?"`, `the model read hello`, `file:///work`}},
		{"batch", 1, []string{`"answer":"first?"`, `the model read hello`, `file:///work`}},
		{"collide", 1, []string{`"answer":"first?"`, `"answer":"second?"`}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := newAsking()
			s, _ := newServer(t, tools, Options{})
			p := newPerson()
			cs := connectWith(t, s, tr, withRoots(p.options(true)))
			mrtr := cs.InitializeResult().ProtocolVersion >= protocolMRTR
			for _, tc := range cases {
				before, elicits, samples := tools.calls.Load(), p.elicits.Load(), p.samples.Load()
				answers(t, callText(t, cs, "ask", tc.mode), tc.want...)
				// Each question reached the person once, replays or not.
				wantElicits, wantSamples := 0, 0
				for _, w := range tc.want {
					if strings.Contains(w, "answer") {
						wantElicits++
					}
					if strings.Contains(w, "model") {
						wantSamples++
					}
				}
				if n := p.elicits.Load() - elicits; n != int64(wantElicits) {
					t.Errorf("%s: %d elicitations, want %d", tc.mode, n, wantElicits)
				}
				if n := p.samples.Load() - samples; n != int64(wantSamples) {
					t.Errorf("%s: %d samplings, want %d", tc.mode, n, wantSamples)
				}
				// A session asks mid-call; 2026-07-28 replays the call once
				// per round of answers.
				runs := int64(1)
				if mrtr {
					runs += int64(tc.rounds)
				}
				if n := tools.calls.Load() - before; n != runs {
					t.Errorf("%s: the tool ran %d times, want %d", tc.mode, n, runs)
				}
			}
		})
	}
}

// mrtrClient connects over stateless HTTP at 2026-07-28 with the automatic
// retries off, so that the test plays the client's part by hand.
func mrtrClient(t *testing.T, s *Server, p *person) *mcp.ClientSession {
	t.Helper()
	cs := connectWith(t, s, transport{name: "http/2026-07-28", http: true}, withRoots(p.options(false)))
	if v := cs.InitializeResult().ProtocolVersion; v != protocolMRTR {
		t.Fatalf("negotiated %s", v)
	}
	return cs
}

func callWith(cs *mcp.ClientSession, name, text string, responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: name, Arguments: map[string]any{"text": text},
		InputResponses: responses, RequestState: state,
	})
}

func needsInput(t *testing.T, res *mcp.CallToolResult, keys ...string) {
	t.Helper()
	if !res.NeedsInput() {
		t.Fatalf("result does not need input: %+v", res)
	}
	if res.RequestState == "" {
		t.Fatal("input-required result without a requestState")
	}
	if len(res.InputRequests) != len(keys) {
		t.Fatalf("input requests %v, want keys %v", res.InputRequests, keys)
	}
	for _, k := range keys {
		if _, ok := res.InputRequests[k]; !ok {
			t.Fatalf("input requests %v, want key %q", res.InputRequests, k)
		}
	}
}

func accept(answer string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}
}

func TestInputRequiredByHand(t *testing.T) {
	tools := newAsking()
	s, _ := newServer(t, tools, Options{})
	cs := mrtrClient(t, s, newPerson())

	// Two asks: two rounds, each with its own state.
	r1, err := callWith(cs, "ask", "two", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, r1, "elicit-1")
	if p, ok := r1.InputRequests["elicit-1"].(*mcp.ElicitParams); !ok || toolText(p.Message) != "first?" {
		t.Fatalf("input request %#v", r1.InputRequests["elicit-1"])
	}
	r2, err := callWith(cs, "ask", "two", mcp.InputResponseMap{"elicit-1": accept("one")}, r1.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, r2, "elicit-2")
	if p := r2.InputRequests["elicit-2"].(*mcp.ElicitParams); toolText(p.Message) != "second?" {
		t.Fatalf("second round asked %q", p.Message)
	}
	if r2.RequestState == r1.RequestState {
		t.Fatal("the second round reused the first round's state")
	}
	// The second round's state carries the first answer: the retry need not
	// send it again.
	r3, err := callWith(cs, "ask", "two", mcp.InputResponseMap{"elicit-2": accept("two")}, r2.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	answers(t, r3, `"answer":"one"`, `"answer":"two"`)

	// A batch of three is one round.
	b1, err := callWith(cs, "ask", "batch", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, b1, "e", "s", "r")
	switch b1.InputRequests["s"].(type) {
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
	default:
		t.Errorf("s is %T", b1.InputRequests["s"])
	}
	if _, ok := b1.InputRequests["r"].(*mcp.ListRootsParams); !ok {
		t.Errorf("r is %T", b1.InputRequests["r"])
	}
	b2, err := callWith(cs, "ask", "batch", mcp.InputResponseMap{
		"e": accept("E"),
		"s": &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "S"}},
		"r": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///R"}}},
	}, b1.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	answers(t, b2, `"answer":"E"`, `"text":"S"`, `file:///R`)

	// Part of a batch answered: asked again for the rest only, and the
	// answer given is kept.
	p1, _ := callWith(cs, "ask", "batch", nil, "")
	p2, err := callWith(cs, "ask", "batch", mcp.InputResponseMap{"e": accept("E")}, p1.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, p2, "s", "r")
	p3, err := callWith(cs, "ask", "batch", mcp.InputResponseMap{
		"s": &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "S"}},
		"r": &mcp.ListRootsResult{Roots: []*mcp.Root{}},
	}, p2.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	answers(t, p3, `"answer":"E"`, `"text":"S"`, `"roots":[]`)
}

func TestRequestStateRefusals(t *testing.T) {
	tools := newAsking("ask", "other")
	s, _ := newServer(t, tools, Options{})
	cs := mrtrClient(t, s, newPerson())
	first := func(t *testing.T, text string) string {
		t.Helper()
		res, err := callWith(cs, "ask", text, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		needsInput(t, res, "elicit-1")
		return res.RequestState
	}
	answer := mcp.InputResponseMap{"elicit-1": accept("yes")}
	refused := func(t *testing.T, name, text, state string, responses mcp.InputResponseMap, want string) {
		t.Helper()
		before := tools.calls.Load()
		_, err := callWith(cs, name, text, responses, state)
		rpcErr := rpcCode(t, err, jsonrpc.CodeInvalidParams)
		if !strings.Contains(rpcErr.Message, want) {
			t.Errorf("message %q does not say %q", rpcErr.Message, want)
		}
		if tools.calls.Load() != before {
			t.Error("the tool ran on a refused state")
		}
	}

	t.Run("tampered", func(t *testing.T) {
		state := first(t, "elicit")
		b := []byte(state)
		for _, i := range []int{0, len(b) / 2, strings.IndexByte(state, '.') + 1, len(b) - 1} {
			c := append([]byte(nil), b...)
			if c[i] == 'A' {
				c[i] = 'B'
			} else {
				c[i] = 'A'
			}
			refused(t, "ask", "elicit", string(c), answer, "requestState refused")
		}
		refused(t, "ask", "elicit", "not-a-state", answer, "requestState refused")
		// The genuine state was not spent by the forgeries.
		res, err := callWith(cs, "ask", "elicit", answer, state)
		if err != nil {
			t.Fatal(err)
		}
		answers(t, res, `"answer":"yes"`)
	})
	t.Run("replayed", func(t *testing.T) {
		state := first(t, "elicit")
		res, err := callWith(cs, "ask", "elicit", answer, state)
		if err != nil {
			t.Fatal(err)
		}
		answers(t, res, `"answer":"yes"`)
		refused(t, "ask", "elicit", state, answer, "already used")
		refused(t, "ask", "elicit", state, mcp.InputResponseMap{"elicit-1": accept("no")}, "already used")
	})
	t.Run("other arguments", func(t *testing.T) {
		state := first(t, "elicit:a")
		refused(t, "ask", "elicit:b", state, answer, "another request")
	})
	t.Run("other tool", func(t *testing.T) {
		state := first(t, "elicit")
		refused(t, "other", "elicit", state, answer, "another request")
	})
	t.Run("wrong kind of answer", func(t *testing.T) {
		state := first(t, "elicit")
		refused(t, "ask", "elicit", state, mcp.InputResponseMap{"elicit-1": &mcp.ListRootsResult{Roots: []*mcp.Root{}}}, "not a result of elicitation/create")
	})
	t.Run("answers to what was not asked", func(t *testing.T) {
		// A state for the first question does not answer the second one
		// under the same key.
		r1, _ := callWith(cs, "ask", "samekey", nil, "")
		needsInput(t, r1, "q")
		r2, err := callWith(cs, "ask", "samekey", mcp.InputResponseMap{"q": accept("one")}, r1.RequestState)
		if err != nil {
			t.Fatal(err)
		}
		needsInput(t, r2, "q")
		if p := r2.InputRequests["q"].(*mcp.ElicitParams); toolText(p.Message) != "second?" {
			t.Fatalf("asked %q again", p.Message)
		}
	})
}

func TestAnswersWithoutState(t *testing.T) {
	// The ephemeral flow: a client may answer a tool's first question with
	// the call itself, but never one of warden's own (a gate's "yes"),
	// which needs a state proving it was asked.
	tools := newAsking()
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		res, err := c.Client.Ask(ctx, []tool.ClientRequest{elicitReq("warden/confirm", "run it?")})
		if err != nil {
			return tool.ErrorResult(tool.Errorf(tool.KindFailed, "%v", err)), nil
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent(string(res[0]))}}, nil
	})
	s, _ := newServer(t, tools, Options{})
	cs := mrtrClient(t, s, newPerson())
	res, err := callWith(cs, "ask", "", mcp.InputResponseMap{"warden/confirm": accept("yes")}, "")
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, res, "warden/confirm")
	// With the state it was issued, the same answer is taken.
	res, err = callWith(cs, "ask", "", mcp.InputResponseMap{"warden/confirm": accept("yes")}, res.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resultText(t, res), `"answer":"yes"`) {
		t.Fatalf("result %s", resultText(t, res))
	}

	// A tool's own first question may be answered up front.
	tools2 := newAsking()
	s2, _ := newServer(t, tools2, Options{})
	cs2 := mrtrClient(t, s2, newPerson())
	res, err = callWith(cs2, "ask", "elicit", mcp.InputResponseMap{"elicit-1": accept("early")}, "")
	if err != nil {
		t.Fatal(err)
	}
	answers(t, res, `"answer":"early"`)
}

func TestClientWithoutElicitation(t *testing.T) {
	noElicit := func() *mcp.ClientOptions {
		return &mcp.ClientOptions{
			Capabilities:   &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		}
	}
	t.Run("session", func(t *testing.T) {
		tools := newAsking()
		s, _ := newServer(t, tools, Options{})
		cs := connect(t, s, transport{name: "stdio/2025-11-25", protocol: "2025-11-25"}, noElicit())
		res := callText(t, cs, "ask", "elicit")
		te := <-tools.errors
		if te.Kind != tool.KindUnsupported || !strings.Contains(te.Message, "elicitation") {
			t.Fatalf("the tool saw %v, want kind unsupported", te)
		}
		if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindUnsupported) {
			t.Fatalf("result %+v", res)
		}
		// Roots it declared: those work.
		answers(t, callText(t, cs, "ask", "roots"), `"roots":[]`)
	})
	t.Run("2026-07-28", func(t *testing.T) {
		for _, tr := range []transport{{name: "http/2026-07-28", http: true}, {name: "stdio/2026-07-28"}} {
			tools := newAsking()
			s, _ := newServer(t, tools, Options{})
			cs := connect(t, s, tr, noElicit())
			_, err := callWith(cs, "ask", "mixed", nil, "")
			rpcErr := rpcCode(t, err, mcp.CodeMissingRequiredClientCapabilities)
			var data mcp.MissingRequiredClientCapabilityData
			if err := json.Unmarshal(rpcErr.Data, &data); err != nil || data.RequiredCapabilities == nil {
				t.Fatalf("%s: data %s: %v", tr.name, rpcErr.Data, err)
			}
			var raw map[string]map[string]any
			json.Unmarshal(rpcErr.Data, &raw)
			if _, ok := raw["requiredCapabilities"]["elicitation"]; !ok {
				t.Errorf("%s: data %s does not require elicitation", tr.name, rpcErr.Data)
			}
			if _, ok := raw["requiredCapabilities"]["roots"]; ok {
				t.Errorf("%s: data %s requires roots, which the client declared", tr.name, rpcErr.Data)
			}
			if !strings.Contains(rpcErr.Message, "elicitation") {
				t.Errorf("%s: message %q", tr.name, rpcErr.Message)
			}
			if te := <-tools.errors; te.Kind != tool.KindUnsupported {
				t.Errorf("%s: the tool saw %v", tr.name, te)
			}
			// A tool that asks nothing still runs.
			answers(t, callText(t, cs, "ask", "plain"))
		}
	})
	t.Run("2026-07-28 without roots", func(t *testing.T) {
		tools := newAsking()
		s, _ := newServer(t, tools, Options{})
		o := newPerson().options(false)
		o.Capabilities = &mcp.ClientCapabilities{} // no roots; elicitation and sampling by their handlers
		cs := connect(t, s, transport{name: "http/2026-07-28", http: true}, o)
		_, err := callWith(cs, "ask", "batch", nil, "")
		rpcErr := rpcCode(t, err, mcp.CodeMissingRequiredClientCapabilities)
		if got := string(rpcErr.Data); got != `{"requiredCapabilities":{"roots":{}}}` {
			t.Errorf("data %s", got)
		}
		<-tools.errors
		// What it declared it is asked for.
		res, err := callWith(cs, "ask", "elicit", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		needsInput(t, res, "elicit-1")
	})
}

func TestUnansweredAskIsBoundedByTheCall(t *testing.T) {
	// The person never answers; the call's own context (its deadline, or
	// client_wait) ends, and Ask returns with it.
	tools := newAsking()
	ends := make(chan context.CancelFunc, 1)
	inner := tools.call
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if strings.Contains(string(c.Arguments), "plain") {
			return inner(ctx, c)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ends <- cancel
		return inner(ctx, c)
	})
	s, _ := newServer(t, tools, Options{})
	p := newPerson()
	p.block = true
	cs := connectPerson(t, s, transport{name: "stdio/2025-11-25", protocol: "2025-11-25"}, p, false)

	for i := range 2 { // twice: the server is not stuck after the first
		done := make(chan *mcp.CallToolResult, 1)
		go func() { done <- callText(t, cs, "ask", "elicit") }()
		end := <-ends
		<-p.blocked // the person has the question and sits on it
		end()
		res := <-done
		if te := <-tools.errors; te.Kind != tool.KindCancelled {
			t.Fatalf("round %d: the tool saw %v", i, te)
		}
		if !res.IsError {
			t.Fatalf("round %d: result %+v", i, res)
		}
		<-p.unblocked // and the client was told to stop asking
		answers(t, callText(t, cs, "ask", "plain"))
	}
}

func TestCancelWhileWaitingForTheClient(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		tools := newAsking()
		s, _ := newServer(t, tools, Options{})
		p := newPerson()
		p.block = true
		cs := connectPerson(t, s, transport{name: "stdio/2025-11-25", protocol: "2025-11-25"}, p, false)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "elicit"}})
			done <- err
		}()
		<-p.blocked
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool: %v, want context.Canceled", err)
		}
		// The cancellation reached the server's call, which stopped waiting.
		if te := <-tools.errors; te.Kind != tool.KindCancelled {
			t.Errorf("the tool saw %v", te)
		}
		<-p.unblocked
		answers(t, callText(t, cs, "ask", "plain"))
	})
	t.Run("2026-07-28", func(t *testing.T) {
		// The server is not waiting: it answered input-required. The client
		// gives up while its person thinks; the server serves on.
		tools := newAsking()
		s, _ := newServer(t, tools, Options{})
		p := newPerson()
		p.block = true
		cs := connectWith(t, s, transport{name: "http/2026-07-28", http: true}, withRoots(p.options(true)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"text": "elicit"}})
			done <- err
		}()
		<-p.blocked
		cancel()
		if err := <-done; err == nil {
			t.Error("CallTool succeeded after its cancellation")
		}
		<-p.unblocked
		answers(t, callText(t, cs, "ask", "plain"))
		if n := tools.calls.Load(); n != 2 {
			t.Errorf("the tool ran %d times, want 2 (one round, and the plain call)", n)
		}
	})
}

// TestClientLinkIsSafeForConcurrentAsks: a link is the call's; two asks at
// once (a host function and a gate, say) must not race.
func TestClientLinkConcurrentAsks(t *testing.T) {
	tools := newAsking()
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = c.Client.Ask(ctx, []tool.ClientRequest{elicitReq("", fmt.Sprint("q", i))})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if !tool.IsInputRequired(err) {
				return tool.ErrorResult(tool.Errorf(tool.KindInternal, "%v", err)), nil
			}
		}
		return tool.ErrorResult(tool.ErrInputRequired), nil
	})
	s, _ := newServer(t, tools, Options{})
	cs := mrtrClient(t, s, newPerson())
	res, err := callWith(cs, "ask", "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) == 0 {
		t.Fatalf("result %+v", res)
	}
}

func TestDuplicateKeysInOneAskAreRefused(t *testing.T) {
	tools := newAsking()
	got := make(chan error, 1)
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		_, err := c.Client.Ask(ctx, []tool.ClientRequest{elicitReq("k", "a?"), elicitReq("k", "b?")})
		got <- err
		return tool.ErrorResult(tool.Errorf(tool.KindFailed, "%v", err)), nil
	})
	s, _ := newServer(t, tools, Options{})
	cs := mrtrClient(t, s, newPerson())
	res, err := callWith(cs, "ask", "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if res.NeedsInput() || !res.IsError {
		t.Fatalf("result %+v", res)
	}
	var te *tool.Error
	if err := <-got; !errors.As(err, &te) || te.Kind != tool.KindInvalidArguments {
		t.Fatalf("Ask: %v, want invalid_arguments", err)
	}
}

// TestWardenAnswerBoundToTheConfigAskedUnder: warden's own questions carry
// the digest of the config in force (internal/app, _meta "warden/config"),
// and a requestState seals the digest of each question, so an answer given
// under one config is not taken for the same question under another: the
// client is asked again, whether the answer comes with the retry or was
// recorded in the state of an earlier round.
func TestWardenAnswerBoundToTheConfigAskedUnder(t *testing.T) {
	var generation atomic.Value
	generation.Store("A")
	var ran atomic.Int64
	tools := newFakeTools(desc("guarded"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		confirm := tool.ClientRequest{Key: "warden/confirm", Method: tool.MethodElicit, Params: json.RawMessage(
			fmt.Sprintf(`{"message":"warden: run tool guarded?","_meta":{"warden/question":"confirm","warden/config":%q}}`, generation.Load()))}
		if _, err := c.Client.Ask(ctx, []tool.ClientRequest{confirm}); err != nil {
			return tool.ErrorResult(tool.ErrInputRequired), nil
		}
		var args struct{ Text string }
		json.Unmarshal(c.Arguments, &args)
		if args.Text == "then-ask" {
			if _, err := c.Client.Ask(ctx, []tool.ClientRequest{elicitReq("more", "more?")}); err != nil {
				return tool.ErrorResult(tool.ErrInputRequired), nil
			}
		}
		ran.Add(1)
		return &tool.Result{Content: []tool.Content{tool.TextContent("ran")}}, nil
	})
	s, _ := newServer(t, tools, Options{})
	cs := mrtrClient(t, s, newPerson())
	yes := mcp.InputResponseMap{"warden/confirm": &mcp.ElicitResult{Action: "accept"}}

	// The answer arrives after the config changed: asked again.
	r1, err := callWith(cs, "guarded", "once", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, r1, "warden/confirm")
	generation.Store("B")
	r2, err := callWith(cs, "guarded", "once", yes, r1.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, r2, "warden/confirm")
	if ran.Load() != 0 {
		t.Fatal("an answer given under another config let the call run")
	}
	if p := r2.InputRequests["warden/confirm"].(*mcp.ElicitParams); p.Meta["warden/config"] != "B" {
		t.Fatalf("asked again with _meta %v", p.Meta)
	}
	// Answered under the config in force: it runs.
	r3, err := callWith(cs, "guarded", "once", yes, r2.RequestState)
	if err != nil || r3.NeedsInput() || resultText(t, r3) != "ran" {
		t.Fatalf("answered under the config in force: %v %+v", err, r3)
	}

	// The answer recorded in an earlier round's state, replayed after the
	// config changed: asked again, the recorded answer is not used.
	ran.Store(0)
	q1, _ := callWith(cs, "guarded", "then-ask", nil, "")
	needsInput(t, q1, "warden/confirm")
	q2, err := callWith(cs, "guarded", "then-ask", yes, q1.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, q2, "more")
	generation.Store("C")
	q3, err := callWith(cs, "guarded", "then-ask", mcp.InputResponseMap{"more": accept("x")}, q2.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	needsInput(t, q3, "warden/confirm")
	if ran.Load() != 0 {
		t.Fatal("a recorded answer from another config let the call run")
	}
}
