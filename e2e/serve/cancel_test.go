package serve

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCancellation: a client that gives up on a call (its context ends) gets
// its cancellation at once, the server stops the guest — a CPU-bound loop
// (stopped by the instrumented checks) and a guest blocked in sleep — long
// before the tool's 60 s timeout, and keeps serving. Over stdio and a
// 2025-11-25 HTTP session the client sends notifications/cancelled; a
// stateless 2026-07-28 client closes the request's stream instead.
func TestCancellation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "loop: {timeout: 60s}\nsleep: {timeout: 60s}", "echo", "loop", "sleep")
	hs := startHTTP(t, e)
	for _, tc := range []struct{ transport, protocol string }{
		{"stdio", "2025-11-25"},
		{"stdio", "2026-07-28"},
		{"http", "2025-11-25"},
		{"http", "2026-07-28"},
	} {
		t.Run(tc.transport+"/"+tc.protocol, func(t *testing.T) {
			var cs *mcp.ClientSession
			var stderr *logBuffer
			if tc.transport == "stdio" {
				cs, stderr = stdioServer(t, e, tc.protocol, nil)
			} else {
				cs, stderr = hs.connect(t, tc.protocol, nil, nil), hs.stderr
			}
			for _, name := range []string{"loop", "sleep", "loop"} {
				stopped := len(stderr.lines(`msg="tool call failed"`, "tool="+name, "kind=cancelled"))
				ctx, cancel := context.WithCancel(context.Background())
				var cancelled time.Time
				timer := time.AfterFunc(200*time.Millisecond, func() {
					cancelled = time.Now()
					cancel()
				})
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
				returned := time.Now()
				timer.Stop()
				cancel()
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("%s cancelled by the client: %s, %v; want context.Canceled", name, dump(res), err)
				}
				// The server logs the cancelled call once the guest stopped.
				eventually(t, name+" stopped by the server", func() bool {
					return len(stderr.lines(`msg="tool call failed"`, "tool="+name, "kind=cancelled")) > stopped
				})
				t.Logf("%s: client returned %v after cancel; server had stopped the guest by %v after cancel",
					name, returned.Sub(cancelled), time.Since(cancelled))
				wantEcho(t, cs, "served after cancelling "+name)
			}
		})
	}
}
