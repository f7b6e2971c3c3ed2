package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
)

var (
	fairFlood    = flag.Int("fair.flood", 40, "BenchmarkFairShare: concurrent callers of the slow tool")
	fairFast     = flag.Int("fair.fast", 4, "BenchmarkFairShare: clients calling the fast tool in a loop, each its own session")
	fairDuration = flag.Duration("fair.duration", 20*time.Second, "BenchmarkFairShare: how long the fast clients call, alone and then under the flood")
	fairDelay    = flag.Duration("fair.delay", 500*time.Millisecond, "BenchmarkFairShare: how long the slow tool's HTTP request waits for its answer")
	fairSessions = flag.String("fair.sessions", "1,40", "BenchmarkFairShare: numbers of sessions the flood is spread over (1: one client sends it all; at most fair.flood); caller i uses session i mod this")
	fairModules  = flag.Int("fair.modules", 1, "BenchmarkFairShare: slow modules (slow, slow_2, ...) the flood is spread over; caller i calls module i mod this")
)

// slowTool is the name of the i-th slow module (from 0) and of its tool.
func slowTool(i int) string {
	if i == 0 {
		return "slow"
	}
	return fmt.Sprintf("slow_%d", i+1)
}

// slowToolTimeout is the slow tool's deadline: tools.defaults.timeout,
// which the benchmark's config leaves at its default.
const slowToolTimeout = 30 * time.Second

// BenchmarkFairShare: does a flood of calls to one slow tool leave room for
// the other tools (issue 18)? A fresh `warden serve --http` with default
// limits serves two modules: slow (bench/testdata/slow), whose calls wait
// fair.delay for a loopback HTTP server of the benchmark through its net
// grant, and the bundled echo. First fair.fast clients call echo in a loop
// for fair.duration, alone; then they do the same while fair.flood callers
// call slow in a loop, spread over fair.sessions sessions (and, with
// fair.modules, over as many slow modules). It reports the
// fast calls' latency and failures in both phases, and the slow calls'
// completions, latency (against their 30 s timeout) and refusals by kind.
//
//	go test ./bench -run '^$' -bench FairShare -benchtime 1x -timeout 30m
//
// The slow tool waits rather than computes, so on a small machine the
// figures measure admission, not CPU contention. Nothing is asserted of the
// times; a failed fast call is logged with its error.
func BenchmarkFairShare(b *testing.B) {
	fx.setup(b)
	delay := newDelayServer(*fairDelay)
	defer delay.Close()
	config := writeFairConfig(b, delay)
	if *fairModules < 1 || *fairModules > *fairFlood {
		b.Fatalf("-fair.modules=%d: want 1 to fair.flood (%d)", *fairModules, *fairFlood)
	}
	for _, sessions := range ints(b, "fair.sessions", *fairSessions) {
		sessions = min(sessions, *fairFlood)
		name := fmt.Sprintf("flood=%d/sessions=%d", *fairFlood, sessions)
		if *fairModules > 1 {
			name = fmt.Sprintf("flood=%d/modules=%d/sessions=%d", *fairFlood, *fairModules, sessions)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				runFairShare(b, config, delay, sessions)
			}
		})
	}
}

// writeFairConfig installs the slow modules and echo in a fresh tools dir
// and writes a config that grants the slow ones the delay server's
// address, and nothing else beyond the defaults.
func writeFairConfig(b *testing.B, delay *delayServer) string {
	b.Helper()
	dir := b.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		b.Fatal(err)
	}
	var grants strings.Builder
	for i := range *fairModules {
		copyFile(b, testwasm.BuildGoFileVars(b, "testdata/slow", map[string]string{"name": slowTool(i)}),
			filepath.Join(tools, slowTool(i)+".wasm"))
		fmt.Fprintf(&grants, "    %s:\n      net: [\"http://%s\"]\n", slowTool(i), delay.Listener.Addr())
	}
	// fx.setup built the bundled echo next to its config.
	copyFile(b, filepath.Join(filepath.Dir(fx.config), "tools", "echo.wasm"), filepath.Join(tools, "echo.wasm"))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	config := filepath.Join(dir, "config.yaml")
	err = os.WriteFile(config, []byte(fmt.Sprintf(`project:
  root: %s
tools:
  dir: %s
  cache_dir: %s
  grants:
    echo: {}
%slog:
  level: warn
`, dir, tools, filepath.Join(base, "warden-bench", "compiled"), grants.String())), 0o644)
	if err != nil {
		b.Fatal(err)
	}
	return config
}

func copyFile(b *testing.B, from, to string) {
	data, err := os.ReadFile(from)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// runFairShare is one op: a fresh server, the fast clients alone, then the
// fast clients under the flood.
func runFairShare(b *testing.B, config string, delay *delayServer, floodSessions int) {
	b.StopTimer()
	defer b.StartTimer()
	s := startHTTPWardenCalling(b, config, "echo")
	defer s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+2*(*fairDuration))
	defer cancel()
	// Separate HTTP clients, without a bound on connections: a fast call
	// must never wait for a connection the flood holds, or the figures
	// would measure this process's connection pool rather than warden.
	fastHTTP := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *fairFast}}
	floodHTTP := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *fairFlood}}
	defer fastHTTP.CloseIdleConnections()
	defer floodHTTP.CloseIdleConnections()

	var open []*mcp.ClientSession
	defer func() { // before the server stops (deferred earlier)
		for _, cs := range open {
			cs.Close()
		}
	}()
	connectAll := func(n int, hc *http.Client, warmUp func(*mcp.ClientSession) error) []*mcp.ClientSession {
		all := make([]*mcp.ClientSession, n)
		for i := range all {
			cs, err := s.connectVia(ctx, sessionProtocol, hc)
			if err != nil {
				b.Fatalf("connect: %v", err)
			}
			open = append(open, cs)
			// A session's first call pays for its instance; the
			// phases measure the steady state.
			if err := warmUp(cs); err != nil {
				b.Fatalf("warm-up: %v", err)
			}
			all[i] = cs
		}
		return all
	}
	fast := connectAll(*fairFast, fastHTTP, func(cs *mcp.ClientSession) error { return callOnce(ctx, cs, "echo") })
	var warmed int
	flood := connectAll(floodSessions, floodHTTP, func(cs *mcp.ClientSession) error {
		// Session j's first caller is caller j, which calls module j mod
		// fair.modules.
		tool := slowTool(warmed % *fairModules)
		warmed++
		if kind, text := callSlow(ctx, cs, tool, delay.URL); kind != "" {
			return fmt.Errorf("%s: %s: %s", tool, kind, text)
		}
		return nil
	})

	b.StartTimer()
	alone := runCalls(*fairFast, *fairDuration, func(i int) (string, string) { return callEcho(ctx, fast[i]) })

	delay.reset()
	var stopFlood atomic.Bool
	var slow *callStats
	floodDone := make(chan struct{})
	go func() {
		defer close(floodDone)
		slow = runCallsUntil(*fairFlood, &stopFlood, func(i int) (string, string) {
			return callSlow(ctx, flood[i%len(flood)], slowTool(i%*fairModules), delay.URL)
		})
	}()
	// The fast clients start once the flood has reached the slow tool.
	select {
	case <-delay.arrived():
	case <-ctx.Done():
		b.Fatal("no call of the slow tool reached the delay server")
	}
	underFlood := runCalls(*fairFast, *fairDuration, func(i int) (string, string) { return callEcho(ctx, fast[i]) })
	stopFlood.Store(true)
	<-floodDone
	b.StopTimer()

	for _, phase := range []struct {
		name  string
		stats *callStats
	}{{"alone", alone}, {"flood", underFlood}} {
		b.ReportMetric(phase.stats.percentile(50), "fast-"+phase.name+"-p50-ms")
		b.ReportMetric(phase.stats.percentile(99), "fast-"+phase.name+"-p99-ms")
		b.ReportMetric(float64(len(phase.stats.ok)), "fast-"+phase.name+"-calls")
		b.ReportMetric(float64(phase.stats.failures()), "fast-"+phase.name+"-failures")
		for _, e := range phase.stats.examples {
			b.Logf("fast call failed (%s phase): %s", phase.name, e)
		}
	}
	if p := alone.percentile(99); p > 0 {
		b.ReportMetric(underFlood.percentile(99)/p, "fast-p99-ratio")
	}
	b.ReportMetric(float64(len(slow.ok)), "slow-completed")
	b.ReportMetric(slow.percentile(50), "slow-p50-ms")
	b.ReportMetric(slow.percentile(99), "slow-p99-ms")
	b.ReportMetric(float64(slowToolTimeout.Milliseconds()), "slow-timeout-ms")
	b.ReportMetric(float64(delay.peak.Load()), "slow-running-max")
	b.ReportMetric(float64(slow.failed["busy"]), "slow-busy")
	b.ReportMetric(float64(slow.failed["timeout"]), "slow-timeout")
	b.ReportMetric(float64(slow.failed["unavailable"]), "slow-unavailable")
	b.ReportMetric(float64(slow.failures()-slow.failed["busy"]-slow.failed["timeout"]-slow.failed["unavailable"]), "slow-other-failures")
	for _, e := range slow.examples {
		b.Logf("slow call failed: %s", e)
	}
}

// callEcho calls echo and checks its answer. It returns the failure's
// class (see [classify]) and text, or "" when the call succeeded.
func callEcho(ctx context.Context, cs *mcp.ClientSession) (kind, text string) {
	const msg = "hello, warden"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs{Text: msg}})
	kind, text = classify(res, err)
	if kind == "" && text != msg {
		return "wrong-answer", text
	}
	return kind, text
}

// callSlow calls a slow tool with the delay server's URL.
func callSlow(ctx context.Context, cs *mcp.ClientSession, tool, url string) (kind, text string) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]string{"url": url}})
	kind, text = classify(res, err)
	if kind == "" && text != "ok" {
		return "wrong-answer", text
	}
	return kind, text
}

// classify names why a call failed, "" when it did not, and returns the
// result's text. A refusal of warden's admission (its message says
// "server busy", whatever its kind) is "busy"; another tool error is its
// kind from _meta "warden/kind" (a call that ran past its deadline is
// "timeout"); an error of the protocol is "protocol".
func classify(res *mcp.CallToolResult, err error) (kind, text string) {
	if err != nil {
		return "protocol", err.Error()
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError {
		return "", text
	}
	if strings.Contains(text, "server busy") {
		return "busy", text
	}
	if k, ok := res.Meta["warden/kind"].(string); ok {
		return k, text
	}
	return "no-kind", text
}

// callStats is what a phase's calls did.
type callStats struct {
	ok       []time.Duration // latencies of the calls that succeeded
	failed   map[string]int  // failed calls by class
	examples []string        // the first two failures of each class
}

func (c *callStats) failures() int {
	n := 0
	for _, v := range c.failed {
		n += v
	}
	return n
}

// percentile returns the q-th percentile of the successful calls'
// latency in ms, 0 without any.
func (c *callStats) percentile(q int) float64 {
	if len(c.ok) == 0 {
		return 0
	}
	return float64(c.ok[min(len(c.ok)-1, len(c.ok)*q/100)].Microseconds()) / 1000
}

// runCalls has n callers call in a loop for d; caller i's calls are
// call(i).
func runCalls(n int, d time.Duration, call func(i int) (kind, text string)) *callStats {
	var stop atomic.Bool
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	return runCallsUntil(n, &stop, call)
}

// runCallsUntil has n callers call in a loop until stop is set, and
// waits for their last calls.
func runCallsUntil(n int, stop *atomic.Bool, call func(i int) (kind, text string)) *callStats {
	stats := &callStats{failed: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for !stop.Load() {
				start := time.Now()
				kind, text := call(i)
				took := time.Since(start)
				mu.Lock()
				if kind == "" {
					stats.ok = append(stats.ok, took)
				} else {
					stats.failed[kind]++
					if stats.failed[kind] <= 2 {
						stats.examples = append(stats.examples, fmt.Sprintf("%s after %v: %s", kind, took.Round(time.Millisecond), text))
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(stats.ok)
	return stats
}

// delayServer is the loopback HTTP server behind the slow tool: it answers
// "ok" after a fixed delay, and counts the requests it is serving at once.
type delayServer struct {
	*httptest.Server
	delay time.Duration
	peak  atomic.Int64 // most requests served at once since reset

	running atomic.Int64
	mu      sync.Mutex
	first   chan struct{} // closed by the first request since reset
	once    *sync.Once
}

func newDelayServer(delay time.Duration) *delayServer {
	d := &delayServer{delay: delay}
	d.reset()
	d.Server = httptest.NewServer(d)
	return d
}

// reset clears the peak and rearms arrived.
func (d *delayServer) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.peak.Store(0)
	d.first, d.once = make(chan struct{}), new(sync.Once)
}

// arrived is closed once a request has come since the last reset.
func (d *delayServer) arrived() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.first
}

func (d *delayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := d.running.Add(1)
	defer d.running.Add(-1)
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	d.mu.Lock()
	first, once := d.first, d.once
	d.mu.Unlock()
	once.Do(func() { close(first) })
	select {
	case <-time.After(d.delay):
		io.WriteString(w, "ok")
	case <-r.Context().Done():
	}
}
