package bench

// The scale benchmarks: what many installed tools and many sessions cost a
// `warden serve` process, as a client sees it (issue 12's proof).
//
//	go test ./bench -run '^$' -bench 'Startup|Sessions' -benchtime 1x -timeout 60m
//
// The tools are N distinct Go guests built from bench/testdata/tool, each
// with its own tool name (tool_01, tool_02, ...) and its own bytes, about
// 5 MB like the bundled tools. They are built once and cached by content
// (internal/testwasm, under os.UserCacheDir()/warden-test).
//
// Every benchmark name says the state of warden's compile cache:
// cache=warm runs against a cache the same binary filled before the timer
// started (under os.UserCacheDir()/warden-bench; compiled code is keyed by
// the module's content, so runs share it); cache=cold starts every op with
// an empty cache directory. Time is reported as ns/op; memory as the warden
// process's VmRSS (and VmHWM, its peak) from /proc, in MB (MiB).
//
// `make bench-scale` runs them; docs/performance.md keeps the figures.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/testwasm"
)

var (
	scaleTools    = flag.String("scale.tools", "8,24,64", "BenchmarkStartup: numbers of installed tools")
	scaleCold     = flag.Int("scale.cold", 24, "BenchmarkStartup: run cache=cold for tool counts up to this (0: none)")
	scaleSessions = flag.String("scale.sessions", "300,1000", "BenchmarkSessions: numbers of HTTP sessions that each call a tool once")
)

// sessionProtocol is the protocol version that keeps a session (and with it,
// under the default isolation, a session's instance); statelessProtocol has
// no session.
const (
	sessionProtocol   = "2025-11-25"
	statelessProtocol = "2026-07-28"
)

// ints parses a flag's comma-separated counts.
func ints(b *testing.B, flagName, list string) []int {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 10000 {
			b.Fatalf("-%s=%q: %q is not a count from 1 to 10000", flagName, list, f)
		}
		out = append(out, n)
	}
	return out
}

// toolName is the name of the i-th fixture tool (from 1), which is also its
// module's file name.
func toolName(i int) string { return fmt.Sprintf("tool_%02d", i) }

// scaleEnv is a project with n fixture tools installed.
type scaleEnv struct {
	dir   string
	tools int
	warm  string // config whose cache_dir is the shared warm cache
	cold  string // config whose cache_dir is coldCache, emptied before every op
	// coldCache is the compile cache of cold, under dir.
	coldCache string
}

// newScaleEnv builds (or finds cached) n fixture modules, installs copies in
// a fresh tools dir, writes the configs, and fills the warm compile cache by
// running `warden tools` once.
func newScaleEnv(b *testing.B, n int) *scaleEnv {
	b.Helper()
	fx.setup(b)
	e := &scaleEnv{dir: b.TempDir(), tools: n}
	tools := filepath.Join(e.dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := 1; i <= n; i++ {
		src := testwasm.BuildGoFileVars(b, "testdata/tool", map[string]string{"name": toolName(i)})
		wasm, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tools, toolName(i)+".wasm"), wasm, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("%d fixture modules ready in %v", n, time.Since(start).Round(time.Millisecond))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	e.coldCache = filepath.Join(e.dir, "cold-cache")
	e.warm = e.writeConfig(b, "warm.yaml", filepath.Join(base, "warden-bench", "compiled"))
	e.cold = e.writeConfig(b, "cold.yaml", e.coldCache)
	start = time.Now()
	if out, err := e.wardenTools(e.warm); err != nil {
		b.Fatalf("warming the compile cache: %v\n%s", err, out)
	}
	b.Logf("compile cache warm (warden tools, %d tools) in %v", n, time.Since(start).Round(time.Millisecond))
	return e
}

func (e *scaleEnv) writeConfig(b *testing.B, name, cacheDir string) string {
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "project:\n  root: %s\n", e.dir)
	fmt.Fprintf(&cfg, "tools:\n  dir: %s\n  cache_dir: %s\n  grants:\n", filepath.Join(e.dir, "tools"), cacheDir)
	for i := 1; i <= e.tools; i++ {
		fmt.Fprintf(&cfg, "    %s: {}\n", toolName(i))
	}
	cfg.WriteString("log:\n  level: warn\n")
	path := filepath.Join(e.dir, name)
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// wardenTools runs `warden tools` and checks that it lists every tool.
func (e *scaleEnv) wardenTools(config string) ([]byte, error) {
	cmd := exec.Command(fx.warden, "tools", "--config", config)
	cmd.Env = childEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, err
	}
	for i := 1; i <= e.tools; i++ {
		if !strings.Contains(string(out), toolName(i)) {
			return out, fmt.Errorf("warden tools does not list %s", toolName(i))
		}
	}
	return out, nil
}

// childEnv is the environment of a warden child: this process's, without
// WARDEN_* variables that would override the config under test.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "WARDEN_") })
}

// procStatus reads a process's memory figures, in MiB, from
// /proc/<pid>/status: VmRSS (resident now) and VmHWM (the peak).
func procStatus(pid int) (rss, peak float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	rss, err1 := statusKB(string(b), "VmRSS")
	peak, err2 := statusKB(string(b), "VmHWM")
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return rss / 1024, peak / 1024, nil
}

// procPss is a process's proportional set size in MiB, from
// /proc/<pid>/smaps_rollup: pages shared by several mappings (instances
// map a module's memory image copy-on-write) count once, where VmRSS
// counts them once per mapping.
func procPss(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, fmt.Errorf("read memory of process %d: %w", pid, err)
	}
	kb, err := statusKB(string(b), "Pss")
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/smaps_rollup: %w", pid, err)
	}
	return kb / 1024, nil
}

// statusKB returns the value of a "Key:   123 kB" line of /proc/<pid>/status.
func statusKB(status, key string) (float64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, key+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: want \"<n> kB\", got %q", key, strings.TrimSpace(rest))
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return float64(n), nil
	}
	return 0, fmt.Errorf("no %s line", key)
}

// listAll lists every tool across pages; loading says whether warden named
// modules still loading (_meta "warden/loading") on any page.
func listAll(ctx context.Context, cs *mcp.ClientSession) (names []string, loading bool, err error) {
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, false, err
		}
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		if _, ok := res.Meta["warden/loading"]; ok {
			loading = true
		}
		if res.NextCursor == "" {
			return names, loading, nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// waitComplete polls tools/list until it is complete (no module loading)
// and returns how long after start the first answer came. It fails the
// benchmark if the complete list lacks a tool.
func waitComplete(b *testing.B, ctx context.Context, cs *mcp.ClientSession, start time.Time, want int) (firstAnswer time.Duration) {
	for {
		names, loading, err := listAll(ctx, cs)
		if err != nil {
			b.Fatalf("tools/list: %v", err)
		}
		if firstAnswer == 0 {
			firstAnswer = time.Since(start)
		}
		if !loading {
			if len(names) != want {
				b.Fatalf("tools/list is complete with %d tools, want %d: %v", len(names), want, names)
			}
			return firstAnswer
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logTail collects a child's stderr, keeping the last 16 KiB to show when
// the benchmark fails.
type logTail struct {
	mu  sync.Mutex
	buf []byte
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - 16<<10; over > 0 {
		l.buf = slices.Delete(l.buf, 0, over)
	}
	return len(p), nil
}

func (l *logTail) dumpOnFailure(b *testing.B, what string) {
	b.Cleanup(func() {
		if b.Failed() {
			l.mu.Lock()
			defer l.mu.Unlock()
			b.Logf("%s stderr (tail):\n%s", what, l.buf)
		}
	})
}

// BenchmarkStartup: restart `warden serve` over stdio with the go-sdk
// client, and measure from the exec to the first complete tools/list (no
// module still loading), then the process's RSS. warden-tools times the
// `warden tools` command instead.
func BenchmarkStartup(b *testing.B) {
	for _, n := range ints(b, "scale.tools", *scaleTools) {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			e := newScaleEnv(b, n)
			b.Run("serve/cache=warm", func(b *testing.B) { benchServeStartup(b, e, e.warm, false) })
			b.Run("warden-tools/cache=warm", func(b *testing.B) { benchWardenTools(b, e) })
			if n <= *scaleCold {
				b.Run("serve/cache=cold", func(b *testing.B) { benchServeStartup(b, e, e.cold, true) })
			}
		})
	}
}

func benchServeStartup(b *testing.B, e *scaleEnv, config string, cold bool) {
	var rss, peak, firstAnswer float64
	stderr := &logTail{}
	stderr.dumpOnFailure(b, "warden serve")
	b.ResetTimer()
	for range b.N {
		if cold {
			b.StopTimer()
			if err := os.RemoveAll(e.coldCache); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		start := time.Now()
		cmd := exec.Command(fx.warden, "serve", "--config", config)
		cmd.Env = childEnv()
		cmd.Stderr = stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			b.Fatalf("connect to warden serve: %v", err)
		}
		first := waitComplete(b, ctx, cs, start, e.tools)
		b.StopTimer()
		r, p, err := procStatus(cmd.Process.Pid)
		if err != nil {
			b.Logf("no RSS figure: %v", err)
		}
		rss, peak, firstAnswer = max(rss, r), max(peak, p), max(firstAnswer, float64(first.Milliseconds()))
		if err := cs.Close(); err != nil {
			b.Errorf("warden serve did not exit cleanly: %v", err)
		}
		cancel()
		b.StartTimer()
	}
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(peak, "peak-rss-MB")
	b.ReportMetric(firstAnswer, "first-list-ms")
	b.ReportMetric(float64(e.tools), "tools")
}

func benchWardenTools(b *testing.B, e *scaleEnv) {
	for range b.N {
		if out, err := e.wardenTools(e.warm); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	b.ReportMetric(float64(e.tools), "tools")
}

// httpWarden is a `warden serve --http` child process.
type httpWarden struct {
	cmd    *exec.Cmd
	url    string
	exited chan struct{}
	client *http.Client // shared by the benchmark's sessions, at most 32 connections
}

// startHTTPWarden starts warden serve --http and waits until every module
// has loaded and tool_01 answers.
func startHTTPWarden(b *testing.B, config string) *httpWarden {
	b.Helper()
	return startHTTPWardenCalling(b, config, toolName(1))
}

// startHTTPWardenCalling starts warden serve --http and waits until every
// module has loaded and warmUp, an echo tool, answers.
func startHTTPWardenCalling(b *testing.B, config, warmUp string) *httpWarden {
	b.Helper()
	fx.setup(b)
	addr := freeAddr(b)
	stderr := &logTail{}
	stderr.dumpOnFailure(b, "warden serve --http")
	s := &httpWarden{
		cmd:    exec.Command(fx.warden, "serve", "--config", config, "--http="+addr),
		url:    "http://" + addr + "/mcp",
		exited: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{MaxConnsPerHost: 32, MaxIdleConnsPerHost: 32}},
	}
	s.cmd.Env = childEnv()
	s.cmd.Stderr = stderr
	if err := s.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		s.cmd.Wait()
		close(s.exited)
	}()
	b.Cleanup(s.stop)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		select {
		case <-s.exited:
			b.Fatalf("warden serve --http exited before serving: %v", s.cmd.ProcessState)
		default:
		}
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("warden serve --http did not answer /healthz on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cs, err := s.connect(ctx, sessionProtocol)
	if err != nil {
		b.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	for {
		_, loading, err := listAll(ctx, cs)
		if err != nil {
			b.Fatalf("tools/list: %v", err)
		}
		if !loading {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := callOnce(ctx, cs, warmUp); err != nil {
		b.Fatalf("warm-up call: %v", err)
	}
	return s
}

func (s *httpWarden) connect(ctx context.Context, protocol string) (*mcp.ClientSession, error) {
	return s.connectVia(ctx, protocol, s.client)
}

// connectVia opens a session whose requests go through hc, for clients
// that must not share (and wait for) the connections of others.
func (s *httpWarden) connectVia(ctx context.Context, protocol string, hc *http.Client) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
}

func (s *httpWarden) pid() int { return s.cmd.Process.Pid }

// stop sends SIGTERM and waits for the exit (killing after 30 s).
func (s *httpWarden) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

// callOnce calls a fixture tool and checks its exact answer.
func callOnce(ctx context.Context, cs *mcp.ClientSession, name string) error {
	const msg = "hello, warden"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: echoArgs{Text: msg}})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("tools/call %s: %s", name, dumpResult(res))
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != msg {
		return fmt.Errorf("tools/call %s: %s", name, dumpResult(res))
	}
	return nil
}

func dumpResult(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return fmt.Sprintf("isError=%v meta=%v content=%q", res.IsError, res.Meta, parts)
}

// BenchmarkSessions: 8 tools served over HTTP. first-call times a new
// session's first tools/call (connecting and closing the session are not
// timed); sessions=N opens N sessions against a fresh server, each calling
// a tool once and staying open, and reports what they added to warden's RSS
// and how many calls failed (any failure fails the benchmark).
func BenchmarkSessions(b *testing.B) {
	const tools = 8
	e := newScaleEnv(b, tools)
	for _, protocol := range []string{sessionProtocol, statelessProtocol} {
		b.Run(fmt.Sprintf("first-call/protocol=%s/cache=warm", protocol), func(b *testing.B) {
			benchFirstCall(b, e, protocol)
		})
	}
	for _, n := range ints(b, "scale.sessions", *scaleSessions) {
		b.Run(fmt.Sprintf("sessions=%d/cache=warm", n), func(b *testing.B) { benchManySessions(b, e, n) })
	}
}

func benchFirstCall(b *testing.B, e *scaleEnv, protocol string) {
	s := startHTTPWarden(b, e.warm)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		cs, err := s.connect(ctx, protocol)
		if err != nil {
			b.Fatalf("connect: %v", err)
		}
		name := toolName(1 + i%e.tools)
		b.StartTimer()
		start := time.Now()
		err = callOnce(ctx, cs, name)
		lat = append(lat, time.Since(start))
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		cs.Close()
		b.StartTimer()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

func benchManySessions(b *testing.B, e *scaleEnv, n int) {
	const workers = 16
	var delta, rss, pssDelta float64
	var failures atomic.Int64
	for range b.N {
		b.StopTimer()
		s := startHTTPWarden(b, e.warm)
		rss0, _, err := procStatus(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		pss0, err := procPss(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		sessions := make([]*mcp.ClientSession, n)
		var errMu sync.Mutex
		var errs []error
		fail := func(err error) {
			failures.Add(1)
			errMu.Lock()
			defer errMu.Unlock()
			if len(errs) < 5 {
				errs = append(errs, err)
			}
		}
		next := atomic.Int64{}
		var wg sync.WaitGroup
		b.StartTimer()
		for range workers {
			wg.Go(func() {
				for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
					cs, err := s.connect(ctx, sessionProtocol)
					if err != nil {
						fail(fmt.Errorf("session %d: connect: %w", i, err))
						continue
					}
					sessions[i] = cs
					if err := callOnce(ctx, cs, toolName(1)); err != nil {
						fail(fmt.Errorf("session %d: %w", i, err))
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		rss1, _, err := procStatus(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		pss1, err := procPss(s.pid())
		if err != nil {
			b.Fatal(err)
		}
		delta, rss, pssDelta = max(delta, rss1-rss0), max(rss, rss1), max(pssDelta, pss1-pss0)
		// The server keeps serving: a new session's call still works.
		if cs, err := s.connect(ctx, sessionProtocol); err != nil {
			fail(fmt.Errorf("a new session after %d: connect: %w", n, err))
		} else {
			if err := callOnce(ctx, cs, toolName(2)); err != nil {
				fail(fmt.Errorf("a new session after %d: %w", n, err))
			}
			cs.Close()
		}
		for i := 0; i < n; i += workers {
			wg.Go(func() {
				for _, cs := range sessions[i:min(n, i+workers)] {
					if cs != nil {
						cs.Close()
					}
				}
			})
		}
		wg.Wait()
		cancel()
		s.stop()
		for _, err := range errs {
			b.Error(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(delta, "rss-delta-MB")
	b.ReportMetric(pssDelta, "pss-delta-MB")
	b.ReportMetric(rss, "rss-MB")
	b.ReportMetric(float64(failures.Load()), "failures")
	if f := failures.Load(); f > 0 {
		b.Errorf("%d calls failed out of %d sessions × %d ops", f, n, b.N)
	}
}
