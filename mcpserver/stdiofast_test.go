package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

// fastSide is one server of the fast-path tests: its tool calls, and a raw
// stdio client of it served as ServeStdio serves, with or without the fast
// path.
type fastSide struct {
	s     *Server
	fast  *fastTransport // nil: the go-sdk's path only
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
		side.fast = &fastTransport{}
	}
	return side
}

// client opens a new stdio session of the side's server.
func (f *fastSide) client(t *testing.T) *rawClient {
	fast := f.fast
	if fast != nil {
		fast = &fastTransport{}
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
		c.initialize()
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
	c.initialize()
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
