package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// instanceMemory is /healthz's instanceMemory (runtime.InstanceMemory).
type instanceMemory struct {
	Limit, Used, Peak   uint64
	Idle, Parked        int
	Evictions, Refusals uint64
}

func healthzMemory(t *testing.T, s *httpServer) instanceMemory {
	t.Helper()
	resp, err := http.Get("http://" + s.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		InstanceMemory *instanceMemory `json:"instanceMemory"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.InstanceMemory == nil {
		t.Fatalf("/healthz has no instanceMemory (%v)", err)
	}
	return *h.InstanceMemory
}

// rssBytes is the resident set of process pid (Linux), 0 elsewhere.
func rssBytes(pid int) uint64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestInstanceMemoryBudget: 300 HTTP sessions, each calling echo once and
// staying open (each would keep its instance for an hour), all succeed; the
// instances never hold more than server.max_instance_memory (/healthz), the
// least recently used sessions' instances are evicted, and the first
// session, whose state went, finds it reset and told so in _meta.
func TestInstanceMemoryBudget(t *testing.T) {
	t.Parallel()
	const sessions, workers = 300, 8
	e := newEnv(t, "", "echo", "state")
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every session stays open, with its connections: room for them all.
	fmt.Fprintf(f, "server:\n  max_instance_memory: 64MiB\n  max_connections: 4096\n")
	f.Close()
	s := startHTTP(t, e)

	first := s.connect(t, "2025-11-25", nil, nil)
	if got := text(t, call(t, first, "state", nil)); got != "1" {
		t.Fatalf("first session's first state call counted %s", got)
	}
	rssBefore := rssBytes(s.cmd.Process.Pid)

	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range workers {
		wg.Go(func() {
			for i := range next {
				msg := fmt.Sprintf("session %d", i)
				// Closed at cleanup: every session stays open.
				cs, err := newClient(nil).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: s.url()},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				var res *mcp.CallToolResult
				if err == nil {
					t.Cleanup(func() { cs.Close() })
					res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": msg}})
				}
				if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != msg {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s: %v %s", msg, err, dump(res)))
					mu.Unlock()
				}
			}
		})
	}
	for i := range sessions {
		next <- i
		if i%50 == 0 {
			if m := healthzMemory(t, s); m.Used > m.Limit || m.Peak > m.Limit {
				t.Errorf("after %d sessions: instance memory over the budget: %+v", i, m)
			}
		}
	}
	close(next)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed; first: %s", len(failures), sessions, failures[0])
	}
	m := healthzMemory(t, s)
	rssAfter := rssBytes(s.cmd.Process.Pid)
	t.Logf("after %d sessions: instance memory %+v; RSS %d MiB -> %d MiB (%+d MiB)", sessions, m,
		rssBefore>>20, rssAfter>>20, (int64(rssAfter)-int64(rssBefore))>>20)
	if m.Limit != 64<<20 || m.Used > m.Limit || m.Peak > m.Limit || m.Evictions == 0 || m.Refusals != 0 {
		t.Fatalf("instance memory: %+v", m)
	}
	// A generous ceiling (the budget is 64 MiB; the Go heap and the
	// sessions' own protocol state come on top): unbounded, 300 sessions
	// took over 2 GB.
	if rssAfter > rssBefore+512<<20 {
		t.Errorf("RSS grew by %d MiB over 300 sessions", (rssAfter-rssBefore)>>20)
	}

	// The first session was used least recently: its state is gone, and
	// its next call says so.
	res := call(t, first, "state", nil)
	if got := text(t, res); got != "1" || res.Meta["warden/fresh_state"] != "evicted: server.max_instance_memory" {
		t.Fatalf("first session after the eviction: %s", dump(res))
	}
	if got := text(t, call(t, first, "state", nil)); got != "2" {
		t.Fatalf("first session's state after the fresh start counted %s", got)
	}
	wantEcho(t, first, "still serving")
}
