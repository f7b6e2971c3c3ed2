package serve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCancellation: a client that gives up on a call (its context ends) gets
// its cancellation at once, the server stops the guest long before the
// tool's 60 s timeout, and keeps serving. Over stdio and a 2025-11-25 HTTP
// session the client sends notifications/cancelled; a stateless 2026-07-28
// client closes the request's stream instead.
//
// The test cancels each call only once the server has handed it to the
// tool, so that the server, not just the client, sees the cancellation and
// must stop the call: the loop and sleep fixtures once serve logs "tool call
// started" (debug level) for them, the busy fixture once it reports
// progress, i.e. while it certainly runs — spinning (stopped by the
// instrumented checks) or blocked in sleep.
func TestCancellation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "loop: {timeout: 60s}\nsleep: {timeout: 60s}\nbusy: {timeout: 60s}", "echo", "loop", "sleep", "busy")
	e.setLogLevel(t, "debug") // for "tool call started"
	hs := startHTTP(t, e)
	for _, tc := range []struct{ transport, protocol string }{
		{"stdio", "2025-11-25"},
		{"stdio", "2026-07-28"},
		{"http", "2025-11-25"},
		{"http", "2026-07-28"},
	} {
		t.Run(tc.transport+"/"+tc.protocol, func(t *testing.T) {
			var mu sync.Mutex
			running := map[string]chan struct{}{} // by progress token
			opts := &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					if ch, ok := running[fmt.Sprint(req.Params.ProgressToken)]; ok && req.Params.Message == "running" {
						close(ch)
						delete(running, fmt.Sprint(req.Params.ProgressToken))
					}
				},
			}
			var cs *mcp.ClientSession
			var stderr *logBuffer
			if tc.transport == "stdio" {
				cs, stderr = stdioServer(t, e, tc.protocol, opts)
			} else {
				cs, stderr = hs.connect(t, tc.protocol, opts, nil), hs.stderr
			}
			stoppedLines := func(name string) int {
				return len(stderr.lines(`msg="tool call failed"`, "tool="+name, "kind=cancelled"))
			}
			startedLines := func(name string) int {
				return len(stderr.lines(`msg="tool call started"`, "tool="+name))
			}

			for i, c := range []struct {
				tool string
				mode string // busy's mode; "" for loop and sleep
			}{{"loop", ""}, {"sleep", ""}, {"busy", "loop"}, {"busy", "sleep"}, {"loop", ""}, {"busy", "loop"}} {
				what := c.tool
				if c.mode != "" {
					what += "/" + c.mode
				}
				before, startedBefore := stoppedLines(c.tool), startedLines(c.tool)
				ctx, cancel := context.WithCancel(context.Background())
				params := &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}}
				var started chan struct{}
				if c.mode != "" {
					params.Arguments = map[string]any{"mode": c.mode}
					token := fmt.Sprintf("busy-%d", i)
					params.SetProgressToken(token)
					started = make(chan struct{})
					mu.Lock()
					running[token] = started
					mu.Unlock()
				}
				var cancelled time.Time
				dispatched := make(chan struct{})
				go func() {
					defer close(dispatched)
					if started != nil {
						select {
						case <-started:
						case <-time.After(30 * time.Second):
						}
					} else {
						// Polls the server's log: nothing else tells that
						// the server dispatched the call.
						for deadline := time.Now().Add(30 * time.Second); startedLines(c.tool) == startedBefore && time.Now().Before(deadline); {
							time.Sleep(5 * time.Millisecond)
						}
					}
					cancelled = time.Now()
					cancel()
				}()
				res, err := cs.CallTool(ctx, params)
				returned := time.Now()
				cancel()
				<-dispatched
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s cancelled by the client: %s, %v; want context.Canceled", what, dump(res), err)
				}
				if started != nil {
					select {
					case <-started:
					default:
						t.Fatalf("%s: cancelled without having reported that it runs", what)
					}
				} else if startedLines(c.tool) == startedBefore {
					t.Fatalf("%s: cancelled before the server dispatched it", what)
				}
				// The server logs the call as cancelled once the guest stopped.
				eventually(t, what+" stopped by the server", func() bool { return stoppedLines(c.tool) > before })
				t.Logf("%s: client returned %v after cancel; server logged the stop by %v after cancel", what, returned.Sub(cancelled), time.Since(cancelled))
				wantEcho(t, cs, "served after cancelling "+what)
			}
		})
	}
}
