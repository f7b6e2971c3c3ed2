package serve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// notes collects the notifications a client receives.
type notes struct {
	mu       sync.Mutex
	progress []mcp.ProgressNotificationParams
	logs     []mcp.LoggingMessageParams
}

func (n *notes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.progress = append(n.progress, *req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.logs = append(n.logs, *req.Params)
		},
	}
}

// take returns and forgets what arrived so far.
func (n *notes) take() ([]mcp.ProgressNotificationParams, []mcp.LoggingMessageParams) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, l := n.progress, n.logs
	n.progress, n.logs = nil, nil
	return p, l
}

func (n *notes) lastProgress() (mcp.ProgressNotificationParams, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.progress) == 0 {
		return mcp.ProgressNotificationParams{}, false
	}
	return n.progress[len(n.progress)-1], true
}

// TestProgressAndLogging calls the hostcalls fixture, which logs one info and
// one debug line and reports progress 1/3, 2/3, 3/3 (its fs and env requests
// are denied: nothing is granted). A client that sent a progressToken gets
// notifications/progress for it; log lines reach the client as
// notifications/message at the level it asked for: logging/setLevel in a
// 2025-11-25 session, the request's _meta level at 2026-07-28.
func TestProgressAndLogging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "hostcalls")
	hs := startHTTP(t, e)
	for _, tc := range []struct{ transport, protocol string }{
		{"stdio", "2025-11-25"},
		{"stdio", "2026-07-28"},
		{"http", "2025-11-25"},
		{"http", "2026-07-28"},
	} {
		t.Run(tc.transport+"/"+tc.protocol, func(t *testing.T) {
			n := &notes{}
			var cs *mcp.ClientSession
			if tc.transport == "stdio" {
				cs, _ = stdioServer(t, e, tc.protocol, n.options())
			} else {
				cs = hs.connect(t, tc.protocol, n.options(), nil)
			}
			stateless := tc.protocol >= "2026-07-28"

			// The capabilities a tool requests (not what it is granted) are
			// listed under _meta, for a client to show before granting.
			for tl, err := range cs.Tools(context.Background(), nil) {
				if err != nil {
					t.Fatalf("tools/list: %v", err)
				}
				sameJSON(t, "hostcalls _meta", tl.Meta, `{"warden/capabilities":{"fs":{"read":["."]},"env":["HOME"]}}`)
			}

			hostcalls := func(level mcp.LoggingLevel, token any) *mcp.CallToolResult {
				t.Helper()
				params := &mcp.CallToolParams{Name: "hostcalls", Arguments: map[string]any{}}
				if stateless {
					params.Meta = mcp.Meta{mcp.MetaKeyLogLevel: string(level)}
				} else if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: level}); err != nil {
					t.Fatalf("logging/setLevel %s: %v", level, err)
				}
				if token != nil {
					params.SetProgressToken(token)
				}
				res, err := cs.CallTool(context.Background(), params)
				if err != nil {
					t.Fatalf("hostcalls: %v", err)
				}
				if res.IsError {
					t.Fatalf("hostcalls failed: %s", dump(res))
				}
				// Both requests were refused: nothing is granted.
				out := dump(res.StructuredContent)
				if !strings.Contains(out, `"fs":{"error":{"kind":"denied"`) || !strings.Contains(out, `"env":{"error":{"kind":"denied"`) {
					t.Errorf("hostcalls without grants: %s, want fs and env denied", out)
				}
				return res
			}
			// waitDone waits for the 3/3 report of the call with token, which
			// the server sends before the call's result.
			waitDone := func(token string) {
				t.Helper()
				eventually(t, "progress 3/3 for "+token, func() bool {
					p, ok := n.lastProgress()
					return ok && p.ProgressToken == token && p.Progress == 3
				})
			}

			// Without a token: no progress. At debug: both log lines.
			hostcalls("debug", nil)
			hostcalls("info", "tok-1")
			waitDone("tok-1")
			progress, logs := n.take()
			if got := logLines(logs); len(got) != 3 ||
				!strings.HasPrefix(got[0], "info tool hostcalls: hostcalls: starting ") ||
				got[1] != "debug tool hostcalls: hostcalls: done" ||
				!strings.HasPrefix(got[2], "info tool hostcalls: hostcalls: starting ") {
				t.Errorf("log notifications at debug, then at info = %q\nwant [info starting, debug done] then [info starting]", got)
			}
			checkProgress(t, progress, "tok-1")

			// At warning: no log line; a numeric token works as well.
			hostcalls("warning", 42)
			eventually(t, "progress 3/3 for token 42", func() bool {
				p, ok := n.lastProgress()
				return ok && fmt.Sprint(p.ProgressToken) == "42" && p.Progress == 3
			})
			progress, logs = n.take()
			if len(logs) != 0 {
				t.Errorf("log notifications at level warning: %q, want none", logLines(logs))
			}
			for i := range progress {
				progress[i].ProgressToken = fmt.Sprint(progress[i].ProgressToken)
			}
			checkProgress(t, progress, "42")
		})
	}
}

func logLines(logs []mcp.LoggingMessageParams) []string {
	var out []string
	for _, l := range logs {
		out = append(out, fmt.Sprintf("%s %s: %v", l.Level, l.Logger, l.Data))
	}
	return out
}

// checkProgress checks one call's progress notifications. The server may
// coalesce reports a slow client has not yet taken (only the newest matters),
// so the exact contract is: all for this token, strictly increasing, each
// one of the fixture's reports, ending with 3/3 "done".
func checkProgress(t *testing.T, progress []mcp.ProgressNotificationParams, token string) {
	t.Helper()
	reports := map[float64]string{1: "calling fs", 2: "calling env", 3: "done"}
	if len(progress) == 0 {
		t.Fatalf("no progress notification for token %s", token)
	}
	last := 0.0
	for _, p := range progress {
		if p.ProgressToken != token || p.Progress <= last || p.Total != 3 || reports[p.Progress] != p.Message {
			t.Errorf("progress notifications %s: want only token %s, increasing, from %v", dump(progress), token, reports)
			return
		}
		last = p.Progress
	}
	if last != 3 {
		t.Errorf("progress notifications %s: the last is not 3/3", dump(progress))
	}
	t.Logf("token %s: %d of 3 progress reports reached the client", token, len(progress))
}
