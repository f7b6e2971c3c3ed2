package mcpserver

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/mcptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tl.Name)
	}
	return names
}

func TestHotReloadResyncsAndNotifiesListChanged(t *testing.T) {
	// Accepted by Validate, refused by the go-sdk (x-mcp-header on an object):
	// AddTool panics on it, which must cost this tool and nothing else.
	refused := desc("refused")
	refused.InputSchema = json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","x-mcp-header":"Region"}}}`)
	invalid := desc("invalid")
	invalid.InputSchema = json.RawMessage(`{"type":"array"}`)

	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := newFakeTools(desc("a"), desc("b"))
			s, logs := newServer(t, tools, Options{})
			changed := make(chan struct{}, 16)
			client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			listening := mcptest.ListenAcknowledged(client)
			cs := connectWith(t, s, tr, client)
			if got := toolNames(t, cs); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("tools %v", got)
			}
			if tr.protocol == "" {
				// 2026-07-28 delivers list_changed on a subscriptions/listen
				// stream, which the client opens in the background; the
				// server acknowledges it once it is subscribed.
				select {
				case <-listening:
				case <-time.After(30 * time.Second):
					t.Fatal("no notifications/subscriptions/acknowledged")
				}
			}

			changedB := desc("b")
			changedB.Description = "b, reloaded"
			tools.reload(desc("a"), changedB, desc("c"), refused, invalid)
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no notifications/tools/list_changed")
			}
			eventually(t, "the new tool set", func() bool {
				return slices.Equal(toolNames(t, cs), []string{"a", "b", "c"})
			})
			var bDesc string
			for tl, err := range cs.Tools(context.Background(), nil) {
				if err == nil && tl.Name == "b" {
					bDesc = tl.Description
				}
			}
			if bDesc != "b, reloaded" {
				t.Errorf("b's description %q, want the reloaded one", bDesc)
			}
			if !strings.Contains(logs.String(), "refused") || !strings.Contains(logs.String(), "x-mcp-header") {
				t.Errorf("the refused tool was not logged:\n%s", logs)
			}
			// The server survived the panic and still serves calls.
			if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "c"}); err != nil || res.IsError {
				t.Fatalf("call after reload: %+v %v", res, err)
			}

			tools.reload(desc("c"))
			eventually(t, "a and b removed", func() bool {
				return slices.Equal(toolNames(t, cs), []string{"c"})
			})
		})
	}
}

func TestUnchangedReloadDoesNotTouchTheToolSet(t *testing.T) {
	tools := newFakeTools(desc("a"))
	s, _ := newServer(t, tools, Options{})
	before := s.resyncs.Load()
	tools.reload(desc("a"))
	eventually(t, "the resync", func() bool { return s.resyncs.Load() > before })
	s.syncMu.Lock()
	n := len(s.registered)
	s.syncMu.Unlock()
	if n != 1 {
		t.Fatalf("%d tools registered", n)
	}
	s.Close()
	if tools.subscribers() != 0 {
		t.Errorf("Close left %d subscribers", tools.subscribers())
	}
}

func TestCancellationStopsTheCallAndTheServerKeepsServing(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			tools := newFakeTools(desc("block"), desc("quick"))
			started := make(chan struct{}, 1)
			ended := make(chan error, 1)
			tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
				if c.Name == "quick" {
					return &tool.Result{Content: []tool.Content{tool.TextContent("quick")}}, nil
				}
				started <- struct{}{}
				<-ctx.Done()
				ended <- ctx.Err()
				return tool.ErrorResult(tool.Errorf(tool.KindCancelled, "cancelled")), nil
			})
			s, _ := newServer(t, tools, Options{})
			cs := connect(t, s, tr, nil)

			ctx, cancel := context.WithCancel(context.Background())
			callErr := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block"})
				callErr <- err
			}()
			<-started
			cancel()
			select {
			case err := <-ended:
				if err != context.Canceled {
					t.Errorf("tool's ctx ended with %v, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the tool's context was never cancelled")
			}
			if err := <-callErr; err == nil {
				t.Errorf("cancelled call returned no error")
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "quick"})
			if err != nil || res.IsError {
				t.Fatalf("the next call failed: %+v %v", res, err)
			}
		})
	}
}

func TestExcessCallsWaitThenFailClearly(t *testing.T) {
	tools := newFakeTools(desc("hold"))
	release := make(chan struct{})
	holding := make(chan struct{}, 1)
	var calls atomic.Int32
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if calls.Add(1) == 1 {
			holding <- struct{}{}
			<-release
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("ok")}}, nil
	})
	s, _ := newServer(t, tools, Options{MaxInFlight: 1, QueueWait: 20 * time.Millisecond})
	cs := connect(t, s, transports[0], nil)
	first := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold"})
		first <- err
	}()
	<-holding
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold"})
	if err != nil {
		t.Fatalf("busy call: protocol error %v, want an error result", err)
	}
	if !res.IsError || res.Meta[tool.MetaKind] != string(tool.KindTimeout) ||
		!strings.Contains(res.Content[0].(*mcp.TextContent).Text, "server busy") {
		t.Errorf("busy call = %+v", res)
	}
	if calls.Load() != 1 {
		t.Errorf("the busy call reached the tool")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold"})
	if err != nil || res.IsError {
		t.Fatalf("call after the slot freed: %+v %v", res, err)
	}
}

// TestConcurrentCallsWithCancellationsLeakNothing runs 100 calls at once,
// cancels a random third of them mid-call, and checks that once everything
// is closed the goroutine count is back where it started.
func TestConcurrentCallsWithCancellationsLeakNothing(t *testing.T) {
	for _, tr := range []transport{transports[1], transports[2], transports[3]} {
		t.Run(tr.name, func(t *testing.T) {
			before := settledGoroutines(t, -1)

			tools := newFakeTools(desc("work"))
			tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
				for i := 1; i <= 5; i++ {
					c.Observer.Progress(tool.Progress{Progress: float64(i), Total: 5})
					c.Observer.Log(0, "step")
					select {
					case <-ctx.Done():
						return tool.ErrorResult(tool.Errorf(tool.KindCancelled, "cancelled")), nil
					case <-time.After(time.Millisecond):
					}
				}
				return &tool.Result{Content: []tool.Content{tool.TextContent("done")}}, nil
			})
			logger, _ := testLogger()
			s := New(tools, Options{MaxInFlight: 8, QueueWait: time.Minute, Logger: logger})
			ctx, cancelAll := context.WithCancel(context.Background())
			client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
				LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) {},
			})
			var ct mcp.Transport
			var hs *httptest.Server
			served := make(chan error, 1)
			if tr.http {
				hs = httptest.NewServer(s.Handler(HTTPOptions{}))
				ct = &mcp.StreamableClientTransport{Endpoint: hs.URL + PathMCP, HTTPClient: hs.Client()}
			} else {
				st, cl := mcp.NewInMemoryTransports()
				go func() { served <- s.Serve(ctx, st) }()
				ct = cl
			}
			cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: tr.protocol})
			if err != nil {
				t.Fatal(err)
			}
			if tr.protocol != "" {
				if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
					t.Fatal(err)
				}
			}

			var wg sync.WaitGroup
			var cancelled, completed atomic.Int32
			for i := range 100 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					callCtx, cancel := context.WithCancel(ctx)
					defer cancel()
					if rand.IntN(3) == 0 {
						time.AfterFunc(time.Duration(rand.IntN(3000))*time.Microsecond, cancel)
					}
					params := &mcp.CallToolParams{Name: "work", Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug"}}
					params.SetProgressToken(i)
					res, err := cs.CallTool(callCtx, params)
					switch {
					case err != nil && callCtx.Err() != nil:
						cancelled.Add(1)
					case err != nil:
						t.Errorf("call %d: %v", i, err)
					case res.IsError && res.Meta[tool.MetaKind] != string(tool.KindCancelled):
						t.Errorf("call %d: %+v", i, res)
					default:
						completed.Add(1)
					}
				}()
			}
			wg.Wait()
			if completed.Load() == 0 {
				t.Errorf("no call completed (%d cancelled)", cancelled.Load())
			}
			// The server still serves after all that.
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "work"}); err != nil || res.IsError {
				t.Fatalf("call after the storm: %+v %v", res, err)
			}
			if n := s.admit.inUse(); n != 0 {
				t.Errorf("%d call slots still taken", n)
			}

			cs.Close()
			cancelAll()
			if hs != nil {
				hs.Client().CloseIdleConnections()
				hs.Close()
			} else if err := <-served; err != nil {
				t.Errorf("Serve: %v", err)
			}
			s.Close()
			settledGoroutines(t, before)
		})
	}
}

// settledGoroutines waits for the goroutine count to settle at or below
// want (or, with want < 0, to stop changing) and returns it.
func settledGoroutines(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := -1
	for {
		n := runtime.NumGoroutine()
		if (want >= 0 && n <= want) || (want < 0 && n == last) {
			return n
		}
		if time.Now().After(deadline) {
			if want >= 0 {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Fatalf("%d goroutines, want at most %d:\n%s", n, want, buf)
			}
			return n
		}
		last = n
		time.Sleep(20 * time.Millisecond)
	}
}

// endingTools is a fakeTools that records ended sessions.
type endingTools struct {
	*fakeTools
	ended chan string
}

func (e endingTools) options(opts Options) Options {
	opts.EndSession = e.EndSession
	return opts
}

func (e endingTools) EndSession(_ context.Context, session string) { e.ended <- session }

func TestEndedSessionsAreReported(t *testing.T) {
	tools := endingTools{newFakeTools(desc("a")), make(chan string, 4)}
	s, _ := newServer(t, tools, Options{})
	hs := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer hs.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL + PathMCP},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.ID()
	for range 2 {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case got := <-tools.ended:
		t.Fatalf("session %q ended while open", got)
	default:
	}
	cs.Close()
	select {
	case got := <-tools.ended:
		if got != id || id == "" {
			t.Errorf("ended %q, want %q", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("EndSession never called")
	}
	select {
	case got := <-tools.ended:
		t.Errorf("session %q ended twice", got)
	case <-time.After(50 * time.Millisecond):
	}
}
