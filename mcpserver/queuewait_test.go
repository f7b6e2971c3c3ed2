package mcpserver

import (
	"context"
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/tool"
)

// waitingForSlot reports whether a call is queued for a slot: with the
// only slot held, that call waits for it.
func waitingForSlot(s *Server) bool {
	s.admit.mu.Lock()
	defer s.admit.mu.Unlock()
	return s.admit.queued > 0
}

// A call that waits for a call slot is one observation of
// warden_queue_wait_seconds above 0; one that got a slot at once, an
// observation of 0.
func TestQueueWaitObserved(t *testing.T) {
	metrics := observe.NewMetrics(observe.Sources{})
	rec := observe.New(observe.Options{Metrics: metrics})
	entered, release := make(chan struct{}), make(chan struct{})
	tools := newFakeTools(desc("slow"), desc("quick"))
	tools.setCall(func(ctx context.Context, c Call) (*tool.Result, error) {
		if c.Name == "slow" {
			close(entered)
			<-release
		}
		return &tool.Result{Content: []tool.Content{tool.TextContent("ok")}}, nil
	})
	// QueueWait far beyond the test's length: the waiting call never times out.
	s, _ := newServer(t, tools, Options{MaxInFlight: 1, QueueWait: 1 << 40, QueueWaited: rec.QueueWaited})
	cs := connect(t, s, transports[0], nil)
	ctx := context.Background()

	slow := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"})
		slow <- err
	}()
	<-entered // slow holds the only slot
	quick := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "quick"})
		quick <- err
	}()
	for !waitingForSlot(s) {
		runtime.Gosched()
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if err := <-quick; err != nil {
		t.Fatal(err)
	}

	rr := httptest.NewRecorder()
	metrics.Handler().ServeHTTP(rr, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rr.Body)
	for _, want := range []string{
		`warden_queue_wait_seconds_bucket{le="0"} 1` + "\n",
		`warden_queue_wait_seconds_count 2` + "\n",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, grep(string(body), "warden_queue_wait"))
		}
	}
}

func grep(text, substr string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
