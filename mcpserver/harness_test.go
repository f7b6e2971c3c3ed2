package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// fakeTools is a Tools whose set and behaviour each test controls.
type fakeTools struct {
	mu    sync.Mutex
	descs []tool.Descriptor
	subs  map[int]func()
	next  int
	call  func(ctx context.Context, c Call) (*tool.Result, error)
}

func newFakeTools(descs ...tool.Descriptor) *fakeTools {
	f := &fakeTools{subs: map[int]func(){}}
	f.set(descs...)
	f.call = func(ctx context.Context, c Call) (*tool.Result, error) {
		return &tool.Result{Content: []tool.Content{tool.TextContent("called " + c.Name)}}, nil
	}
	return f
}

func (f *fakeTools) List() []tool.Descriptor {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]tool.Descriptor(nil), f.descs...)
}

func (f *fakeTools) Call(ctx context.Context, c Call) (*tool.Result, error) {
	f.mu.Lock()
	call := f.call
	f.mu.Unlock()
	return call(ctx, c)
}

func (f *fakeTools) Subscribe(fn func()) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.next
	f.next++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs, id)
	}
}

func (f *fakeTools) setCall(fn func(ctx context.Context, c Call) (*tool.Result, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.call = fn
}

// set replaces the tool set without telling subscribers.
func (f *fakeTools) set(descs ...tool.Descriptor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.descs = append([]tool.Descriptor(nil), descs...)
	sort.Slice(f.descs, func(i, j int) bool { return f.descs[i].Name < f.descs[j].Name })
}

// reload replaces the tool set and tells subscribers, as a hot reload does.
func (f *fakeTools) reload(descs ...tool.Descriptor) {
	f.set(descs...)
	f.mu.Lock()
	var subs []func()
	for _, fn := range f.subs {
		subs = append(subs, fn)
	}
	f.mu.Unlock()
	for _, fn := range subs {
		fn()
	}
}

func (f *fakeTools) subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

func desc(name string) tool.Descriptor {
	return tool.Descriptor{
		Name:        name,
		Description: "the " + name + " tool",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger logs everything, at debug and up, into the returned buffer.
func testLogger() (*slog.Logger, *syncBuffer) {
	var buf syncBuffer
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), &buf
}

// A transport is one way a client reaches the server: stdio (in memory,
// newline-delimited JSON like a pipe) or streamable HTTP, each at the
// session protocol (2025-11-25) and the stateless one (2026-07-28).
type transport struct {
	name     string
	http     bool
	protocol string // "" for the client's default, the latest
}

var transports = []transport{
	{name: "stdio/2025-11-25", protocol: "2025-11-25"},
	{name: "stdio/2026-07-28"},
	{name: "http/2025-11-25", http: true, protocol: "2025-11-25"},
	{name: "http/2026-07-28", http: true},
}

// connect connects a go-sdk client to s over tr and checks the protocol
// it negotiated. Everything is torn down at the end of the test.
func connect(t *testing.T, s *Server, tr transport, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs := connectWith(t, s, tr, mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts))
	want := tr.protocol
	if want == "" {
		want = firstStatelessVersion
	}
	if got := cs.InitializeResult().ProtocolVersion; got != want {
		t.Errorf("negotiated protocol %q, want %q", got, want)
	}
	return cs
}

// connectWith connects client to s over tr. Everything is torn down at the
// end of the test.
func connectWith(t *testing.T, s *Server, tr transport, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var ct mcp.Transport
	var stop func()
	if tr.http {
		hs := httptest.NewServer(s.Handler(HTTPOptions{}))
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL + PathMCP}
		stop = hs.Close
	} else {
		st, cl := mcp.NewInMemoryTransports()
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, st) }()
		ct = cl
		stop = func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
		}
	}
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: tr.protocol})
	if err != nil {
		cancel()
		stop()
		t.Fatalf("connect over %s: %v", tr.name, err)
	}
	t.Cleanup(func() {
		cs.Close()
		stop()
		cancel()
	})
	return cs
}

// eventually polls cond until it holds or the test's patience runs out. It
// waits for an event; it asserts nothing about how long the event took.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A fake is a test's Tools with the hooks it serves besides (Options'
// contract fields), as App is with App.ServerOptions. The fakes embed one
// another; each that adds a hook, or overrides a method a hook calls,
// has its own options, which starts from its embedded fake's.
type fake interface {
	Tools
	// options returns opts with the fake's hooks set.
	options(opts Options) Options
}

// options: a fakeTools serves tools only.
func (f *fakeTools) options(opts Options) Options { return opts }

func newServer(t *testing.T, tools fake, opts Options) (*Server, *syncBuffer) {
	t.Helper()
	var logs *syncBuffer
	if opts.Logger == nil {
		opts.Logger, logs = testLogger()
	}
	s := New(tools, tools.options(opts))
	t.Cleanup(func() { s.Close() })
	return s, logs
}
