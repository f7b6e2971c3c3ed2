package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/tool"
)

// fastSide is one server of the fast-path tests: its tool calls, and a raw
// stdio client of it served as ServeStdio serves, with or without the fast
// path.
type fastSide struct {
	s    *Server
	fast *fastTransport // nil: the go-sdk's path only
	// ready tells, with the fast path, that a session's initialize reply
	// has been written (see initialize).
	ready chan struct{}
	mu    sync.Mutex
	calls []string
}

func newFastSide(t testing.TB, fast bool, call func(ctx context.Context, c Call) (*tool.Result, error)) *fastSide {
	tools := &fakeFeatures{fakeTools: newFakeTools(desc("echo"), desc("shaped"), desc("block")), served: servedFixture()}
	side := &fastSide{}
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		side.mu.Lock()
		side.calls = append(side.calls, c.Name+" "+string(c.Arguments)+" "+c.Session)
		side.mu.Unlock()
		return call(ctx, c)
	})
	side.s = New(tools, tools.options(Options{Logger: slog.New(slog.DiscardHandler)}))
	if fast {
		side.ready = make(chan struct{}, 64)
		side.fast = &fastTransport{hooks: fastHooks{initialized: func() {
			select {
			case side.ready <- struct{}{}:
			default: // sessions no test waits for (the fuzzer's)
			}
		}}}
	}
	return side
}

// initialize initializes c's session, and waits, with the fast path, until
// the fast path serves it: the client can read the initialize reply
// before the server has seen its write return.
func (f *fastSide) initialize(c *rawClient) {
	c.t.Helper()
	c.initialize()
	if f.fast != nil {
		<-f.ready
	}
}

// client opens a new stdio session of the side's server.
func (f *fastSide) client(t *testing.T) *rawClient {
	fast := f.fast
	if fast != nil {
		fast = &fastTransport{hooks: fast.hooks}
		f.fast = fast
	}
	c := newRawClientServed(t, func(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
		return f.s.serveStdio(ctx, r, w, fast)
	})
	c.patience = 20 * time.Second
	return c
}

// exchange sends line and returns every line the server wrote up to the
// reply to id (or, for a notification, up to the reply of a ping sent
// after it), leaving out notifications/*/list_changed, whose timing is the
// debouncer's.
func exchange(t *testing.T, c *rawClient, id, line string) []string {
	t.Helper()
	c.t = t
	c.send(line)
	want := id
	if id == "" {
		want = `"sync"`
		c.send(`{"jsonrpc":"2.0","id":"sync","method":"ping"}`)
	}
	var out []string
	for {
		l := c.next()
		if strings.Contains(l, `/list_changed"`) {
			continue
		}
		out = append(out, l)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == nil && string(m.ID) == want {
			return out
		}
	}
}

// differentialResult is the tool of the differential test: echo answers
// as the fixtures do, shaped makes its result of the arguments
// (shapedResult), block waits for its call to be cancelled.
func differentialResult(ctx context.Context, c Call) (*tool.Result, error) {
	switch c.Name {
	case "echo":
		return &tool.Result{Content: []tool.Content{tool.TextContent("called echo")}}, nil
	case "block":
		<-ctx.Done()
		return tool.ErrorResult(tool.Errorf(tool.KindCancelled, "cancelled: %v", context.Cause(ctx))), nil
	}
	return shapedResult(ctx, c)
}

// fastShapes are the tools/call params the fast path decides on: the
// plain call it takes in every spelling, and near misses it must leave to
// the go-sdk (a third member, a name or arguments of another type, a
// member twice, an escaped key, no arguments).
var fastShapes = []string{
	`{"name":"shaped","arguments":{"text":@}}`,
	`{"arguments":{"text":@},"name":"shaped"}`,
	` { "name" : "shaped" , "arguments" : { "text" : @ } } `,
	`{"name":@,"arguments":{}}`,
	`{"name":"shaped","arguments":@}`,
	`{"name":"shaped","arguments":{"text":@},"_meta":{}}`,
	`{"name":"shaped","arguments":{"text":@},"_meta":{"progressToken":@}}`,
	`{"name":"shaped","arguments":{"text":@},"_meta":{"io.modelcontextprotocol/protocolVersion":@}}`,
	`{"name":"shaped","arguments":{"text":@},"task":{}}`,
	`{"name":"shaped","name":@,"arguments":{}}`,
	`{"n\u0061me":"shaped","arguments":{"text":@}}`,
	`{"name":"shaped"}`,
	`{"name":"shaped","arguments":null}`,
	`{"name":"shaped","arguments":[@]}`,
	`{"name":1,"arguments":{}}`,
	`{"name":"shaped","arguments":{"text":@},"requestState":@}`,
	`{"name":"shaped","arguments":{"text":@},"inputResponses":{}}`,
	`{"name":"Shaped","arguments":{"text":@}}`,
	`{"Name":"shaped","Arguments":{"text":@}}`,
}

// FuzzFastPathDifferential is the differential test of the stdio fast
// path: two servers of the same tools, one serving stdio as ServeStdio does
// (with the fast path) and one through the go-sdk alone, get the same
// lines: a tools/call before initialize, then every method shape of
// FuzzMethodParams and every tools/call shape of fastShapes, each filled
// with the fuzzed value in each of its ways, and the whole params a raw
// fuzzed value. Every line each server writes in answer (replies and
// notifications, in order) must be byte for byte the same, the tools must
// have been called with the same calls, and the fast path must have taken
// the plain calls.
func FuzzFastPathDifferential(f *testing.F) {
	for _, s := range methodSeeds {
		f.Add(s.value, s.raw)
	}
	f.Add("nan", `{"text":"nan"}`)
	f.Add("e<b>&'\u2028", `{"name":"shaped","arguments":{}}`)
	f.Add("shaped", `{"name":"shaped","arguments":{"text":"x"},"name":"echo"}`)
	fast := newFastSide(f, true, differentialResult)
	slow := newFastSide(f, false, differentialResult)
	defer fast.s.Close()
	defer slow.s.Close()
	f.Fuzz(func(t *testing.T, value, raw string) {
		sides := []*fastSide{fast, slow}
		clients := make([]*rawClient, 2)
		for i, side := range sides {
			side.mu.Lock()
			side.calls = nil
			side.mu.Unlock()
			clients[i] = side.client(t)
		}
		compare := func(id, line string) {
			t.Helper()
			a := exchange(t, clients[0], id, line)
			b := exchange(t, clients[1], id, line)
			if !slices.Equal(a, b) {
				t.Fatalf("%.300s:\nfast path: %.600q\ngo-sdk:    %.600q", line, a, b)
			}
		}
		// Before initialize: the go-sdk refuses the call; so must the fast path.
		compare(`"early"`, message(`"early"`, "tools/call", `{"name":"shaped","arguments":{"text":"x"}}`))
		compare(`"init"`, initLine)
		compare("", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		methods := slices.Clone(clientMethods)
		for _, shape := range fastShapes {
			methods = append(methods, paramShape{"tools/call", true, shape})
		}
		n := 0
		for _, m := range methods {
			shapes := []string{raw}
			for _, fill := range fillings(value, raw) {
				shapes = append(shapes, strings.ReplaceAll(m.params, "@", fill))
			}
			for _, params := range shapes {
				if !json.Valid([]byte(params)) {
					continue
				}
				if !m.call {
					compare("", message("", m.method, params))
					continue
				}
				n++
				id := fmt.Sprint(n)
				compare(id, message(id, m.method, params))
			}
		}
		for i := range sides {
			sides[i].mu.Lock()
		}
		defer func() {
			for i := range sides {
				sides[i].mu.Unlock()
			}
		}()
		// The sessions are named conn-N on each server, counting its own
		// connections; the tests open them in step.
		if !slices.Equal(fast.calls, slow.calls) {
			t.Fatalf("the tools were called differently:\nfast path: %q\ngo-sdk:    %q", fast.calls, slow.calls)
		}
		if fast.fast.taken.Load() == 0 {
			t.Fatal("the fast path took no call")
		}
	})
}

// TestFastPathCancellation checks that a notifications/cancelled reaches a
// call on the fast path, as it reaches one on the go-sdk's, with the same
// reply, and that the server goes on serving.
func TestFastPathCancellation(t *testing.T) {
	var replies []string
	for _, fast := range []bool{true, false} {
		started := make(chan struct{}, 1)
		side := newFastSide(t, fast, func(ctx context.Context, c Call) (*tool.Result, error) {
			if c.Name == "block" {
				started <- struct{}{}
			}
			return differentialResult(ctx, c)
		})
		defer side.s.Close()
		c := side.client(t)
		side.initialize(c)
		c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
		<-started
		reply := exchange(t, c, "7", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"no"}}`)
		replies = append(replies, strings.Join(reply, "\n"))
		if fast && side.fast.taken.Load() != 1 {
			t.Errorf("the fast path took %d calls, want the blocking one", side.fast.taken.Load())
		}
		c.wantEchoCall("8")
	}
	if replies[0] != replies[1] {
		t.Fatalf("cancelled call:\nfast path: %s\ngo-sdk:    %s", replies[0], replies[1])
	}
	if !strings.Contains(replies[0], `"isError":true`) || !strings.Contains(replies[0], "context canceled") {
		t.Fatalf("the call was not cancelled: %s", replies[0])
	}
}

// TestFastPathDrainsAtEOF checks that a client that writes calls and
// closes its input at once, as a shell pipeline does, gets every reply
// from the fast path too.
func TestFastPathDrainsAtEOF(t *testing.T) {
	release := make(chan struct{})
	side := newFastSide(t, true, func(ctx context.Context, c Call) (*tool.Result, error) {
		<-release
		return differentialResult(ctx, c)
	})
	defer side.s.Close()
	c := side.client(t)
	side.initialize(c)
	for i := range 3 {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, i))
	}
	c.in.Close()
	close(release)
	got := map[string]bool{}
	for range 3 {
		r := parseReply(t, c.next())
		if r.Error != nil || !strings.Contains(string(r.Result), "called echo") {
			t.Fatalf("reply %s: %+v %s", r.ID, r.Error, r.Result)
		}
		got[string(r.ID)] = true
	}
	if len(got) != 3 || side.fast.taken.Load() != 3 {
		t.Fatalf("replies to %v, %d calls on the fast path; want 0, 1 and 2, all three", got, side.fast.taken.Load())
	}
}

// TestFastPathKeepsThePendingBound checks that calls on the fast path count
// against the connection's bound on unanswered requests, as the guard
// counts every call it hands on.
func TestFastPathKeepsThePendingBound(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	side := newFastSide(t, true, func(ctx context.Context, c Call) (*tool.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return differentialResult(ctx, c)
	})
	defer side.s.Close()
	c := side.client(t)
	c.initialize()
	for i := range DefaultMaxPending {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{}}}`, i))
	}
	c.send(`{"jsonrpc":"2.0","id":"over","method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	wantError(t, c.next(), codeServerBusy, `"over"`)
	once.Do(func() { close(release) })
	for range DefaultMaxPending {
		if r := parseReply(t, c.next()); r.Error != nil {
			t.Fatalf("reply %s: %+v", r.ID, r.Error)
		}
	}
}

// servedSide opens a stdio session of the side's server as client does,
// with the session's own stop and end: stop ends its serving context, and
// done is closed when the session's serve has returned. wrap, when set,
// wraps the server's output.
func (f *fastSide) servedSide(t *testing.T, wrap func(io.WriteCloser) io.WriteCloser) (c *rawClient, stop func(), done chan struct{}) {
	done = make(chan struct{})
	stopped := make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(stopped) }) }
	fast := f.fast
	c = newRawClientServed(t, func(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
		defer close(done)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-stopped:
				cancel()
			case <-ctx.Done():
			}
		}()
		if wrap != nil {
			w = wrap(w)
		}
		return f.s.serveStdio(ctx, r, w, fast)
	})
	c.patience = 20 * time.Second
	return c, stop, done
}

// seenCall is one tools/call the fast path decided on.
type seenCall struct {
	id    string
	taken bool
}

// watchCalls reports each tools/call the side's next session reads.
func (f *fastSide) watchCalls() <-chan seenCall {
	seen := make(chan seenCall, 64)
	f.fast.hooks.seen = func(req *jsonrpc.Request, taken bool) {
		id, _ := json.Marshal(req.ID.Raw())
		seen <- seenCall{string(id), taken}
	}
	return seen
}

// TestFastPathServeWaitsForItsCalls checks that a stdio session told to
// stop does not return while a tool call on the fast path still runs: the
// caller tears down the app the call runs on once it returns. The go-sdk's
// Close waits only for the calls it counts, which the fast ones are not.
func TestFastPathServeWaitsForItsCalls(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var returned atomic.Bool
	side := newFastSide(t, true, func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name == "block" {
			close(entered)
			<-release // deaf to its cancellation, as a call in a stuck host is
			defer returned.Store(true)
		}
		return differentialResult(ctx, c)
	})
	defer side.s.Close()
	awaiting := make(chan struct{}, 1)
	side.fast.hooks.awaiting = func() { awaiting <- struct{}{} }
	c, stop, done := side.servedSide(t, nil)
	side.initialize(c)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	<-entered
	if n := side.fast.taken.Load(); n != 1 {
		t.Fatalf("the fast path took %d calls, want the blocking one", n)
	}
	stop()
	select {
	case <-done:
		t.Fatal("the session returned while its fast-path call still ran")
	case <-awaiting:
	}
	close(release)
	<-done
	if !returned.Load() {
		t.Fatal("the session returned before its fast-path call did")
	}
}

// TestFastPathRefusesCallsOnceShuttingDown checks that once a stdio
// session begins to shut down (the go-sdk's Close waiting for a call of
// its own), a plain tools/call read after that is left to the go-sdk,
// which refuses new calls then, instead of starting on the fast path
// outside the calls the go-sdk's Close waits for.
func TestFastPathRefusesCallsOnceShuttingDown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	side := newFastSide(t, true, func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name == "block" {
			close(entered)
			<-release
		}
		return differentialResult(ctx, c)
	})
	defer side.s.Close()
	seen := side.watchCalls()
	shutdown := make(chan struct{}, 1)
	side.fast.hooks.shutdown = func() { shutdown <- struct{}{} }
	c, stop, done := side.servedSide(t, nil)
	side.initialize(c)
	// A call with _meta is the go-sdk's: its Close waits for it.
	c.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"block","arguments":{},"_meta":{}}}`)
	if s := <-seen; s.id != `"slow"` || s.taken {
		t.Fatalf("seen %+v, want the go-sdk's call", s)
	}
	<-entered
	stop()
	<-shutdown
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if s := <-seen; s.id != "9" || s.taken {
		t.Fatalf("seen %+v: a plain call read once the session was shutting down started on the fast path", s)
	}
	close(release)
	<-done
	if n := side.fast.taken.Load(); n != 0 {
		t.Fatalf("the fast path took %d calls, want none", n)
	}
}

// gateWriter holds the server's output line that contains hold until
// released, and tells held when it does.
type gateWriter struct {
	io.WriteCloser
	hold    string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gateWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), g.hold) {
		g.once.Do(func() {
			close(g.held)
			<-g.release
		})
	}
	return g.WriteCloser.Write(p)
}

// TestFastPathAnswersAfterTheInitializeReply checks that a client that
// pipelines its first call behind initialize gets the initialize reply
// first: the go-sdk records the session's params before it writes that
// reply, and a fast call in between would overtake it.
func TestFastPathAnswersAfterTheInitializeReply(t *testing.T) {
	side := newFastSide(t, true, differentialResult)
	defer side.s.Close()
	seen := side.watchCalls()
	gate := &gateWriter{hold: `"id":"init"`, held: make(chan struct{}), release: make(chan struct{})}
	c, _, _ := side.servedSide(t, func(w io.WriteCloser) io.WriteCloser {
		gate.WriteCloser = w
		return gate
	})
	c.send(initLine)
	<-gate.held // the session's params are set; its reply is not written
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
	if s := <-seen; s.id != "5" || s.taken {
		t.Fatalf("seen %+v: the fast path took a call before the initialize reply was written", s)
	}
	close(gate.release)
	if r := parseReply(t, c.next()); string(r.ID) != `"init"` || r.Error != nil {
		t.Fatalf("first reply %s (%+v), want initialize's", r.ID, r.Error)
	}
	if r := parseReply(t, c.next()); string(r.ID) != "5" || r.Error != nil || !strings.Contains(string(r.Result), "called echo") {
		t.Fatalf("second reply %s: %+v %s", r.ID, r.Error, r.Result)
	}
	// Once the reply is out, plain calls take the fast path again.
	c.wantEchoCall("6")
	if s := <-seen; s.id != "6" || !s.taken {
		t.Fatalf("seen %+v, want the call on the fast path", s)
	}
}

// TestFastPathRunsOnAWarmWorker checks that a call on the fast path is
// handed from the reader to a warm-stack worker once: the tool runs on a
// worker (warmStacks.work) inside the fast path's own run, which writes the
// reply from there, rather than on a goroutine of run's that hands the
// chain to a worker in turn.
func TestFastPathRunsOnAWarmWorker(t *testing.T) {
	stacks := make(chan string, 1)
	side := newFastSide(t, true, func(ctx context.Context, c Call) (*tool.Result, error) {
		buf := make([]byte, 64<<10)
		select {
		case stacks <- string(buf[:runtime.Stack(buf, false)]):
		default:
		}
		return differentialResult(ctx, c)
	})
	defer side.s.Close()
	c := side.client(t)
	side.initialize(c)
	reply := exchange(t, c, "7", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	stack := <-stacks
	if side.fast.taken.Load() != 1 {
		t.Fatalf("the fast path took %d calls, want 1", side.fast.taken.Load())
	}
	for _, frame := range []string{"mcpserver.(*warmStacks).work(", "mcpserver.(*fastConnection).run("} {
		if !strings.Contains(stack, frame) {
			t.Errorf("the tool ran without %s on its stack:\n%s", frame, stack)
		}
	}
	if !strings.Contains(strings.Join(reply, "\n"), `"id":7`) {
		t.Fatalf("no reply to the call: %q", reply)
	}
	c.wantEchoCall("8")
}
