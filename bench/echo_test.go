// Package bench measures warden end to end, as an MCP client sees it:
// tools/call of the bundled echo tool through `warden serve`, side by side
// in one run with a native go-sdk server that implements the same tool in
// plain Go. Both servers run as child processes and are driven by the go-sdk
// client, over stdio and over streamable HTTP. A third, warden-c, is warden
// serving the same tool written with the C SDK (guest-sdk/c/examples/echo.c,
// when clang can build it): the same work without a Go runtime in the
// guest, so it shows what warden's call path costs apart from the Go guest.
//
//	go test ./bench -run '^$' -bench Echo -benchtime 2000x
//
// Each sub-benchmark reports p50 and p99 latency of one tools/call and
// calls/s; BenchmarkEcho logs warden's p50 as a multiple of the native
// server's (the goal is at most 1.2x). WARDEN_BIN selects the warden binary;
// by default ./cmd/warden is built into a temporary directory.
// WARDEN_SERVE_ARGS adds `warden serve` arguments (e.g. --cpuprofile FILE);
// BENCH_SERVER_ENV adds environment variables to both server children
// only (e.g. GODEBUG=gctrace=1, whose lines then come from the servers
// alone).
package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/bench/internal/echoserver"
)

// TestMain lets the test binary act as the native server in a child process.
func TestMain(m *testing.M) {
	if prof := os.Getenv("BENCH_NATIVE_CPUPROFILE"); prof != "" && os.Getenv("BENCH_NATIVE_SERVER") != "" {
		// Profile the native server child, to compare with warden's
		// --cpuprofile; written when its stdio ends.
		if f, err := os.Create(prof); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if path := os.Getenv("BENCH_NATIVE_TRACE"); path != "" && os.Getenv("BENCH_NATIVE_SERVER") != "" {
		// An execution trace of the native server child, to compare with
		// warden's --trace.
		if f, err := os.Create(path); err == nil {
			trace.Start(f)
			defer trace.Stop()
		}
	}
	switch mode := os.Getenv("BENCH_NATIVE_SERVER"); {
	case mode == "stdio":
		if err := nativeServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		return
	case strings.HasPrefix(mode, "http:"):
		s := nativeServer()
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
		mux := http.NewServeMux()
		mux.Handle("/mcp", h)
		fmt.Fprintln(os.Stderr, http.ListenAndServe(strings.TrimPrefix(mode, "http:"), mux))
		os.Exit(1)
	}
	os.Exit(m.Run())
}

type echoArgs = echoserver.Args

func nativeServer() *mcp.Server { return echoserver.Native() }

// server is one running child process serving echo.
type server struct {
	name    string
	stdio   func() mcp.Transport // a new stdio transport (starts a process)
	httpURL string               // the /mcp endpoint when serving HTTP
	stop    func()

	mu    sync.Mutex
	procs []*exec.Cmd // the server processes started, for their CPU time
}

// started records a server process.
func (s *server) started(cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.procs = append(s.procs, cmd)
}

// cpuTime is the user+system CPU time of the server's live processes,
// from /proc (0 where it cannot be read): the steadier figure on a shared
// machine, where latency also measures the neighbours.
func (s *server) cpuTime() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var total time.Duration
	for _, cmd := range s.procs {
		if cmd.Process == nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			continue
		}
		// Fields after the command name (which may hold spaces) start
		// after the last ')'; utime and stime are fields 14 and 15.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		var ut, st int64
		fmt.Sscan(f[11], &ut)
		fmt.Sscan(f[12], &st)
		total += time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
	}
	return total
}

// fixture builds warden and the echo module once per run.
type fixture struct {
	once   sync.Once
	err    error
	warden string
	config string
	// cConfig serves the C SDK's echo (guest-sdk/c/examples/echo.c) instead
	// of the Go one: "" when clang cannot build it here, and the warden-c
	// rows are then left out (logged, not silently).
	cConfig string
	cErr    error
}

var fx fixture

func (f *fixture) setup(b *testing.B) {
	f.once.Do(func() {
		dir, err := os.MkdirTemp("", "warden-bench")
		if err != nil {
			f.err = err
			return
		}
		f.warden = os.Getenv("WARDEN_BIN")
		if f.warden == "" {
			f.warden = filepath.Join(dir, "warden")
			if f.err = goBuild(nil, "-o", f.warden, "./cmd/warden"); f.err != nil {
				return
			}
		} else if f.warden, err = filepath.Abs(f.warden); err != nil {
			f.err = err
			return
		}
		tools := filepath.Join(dir, "tools")
		if f.err = goBuild([]string{"GOOS=wasip1", "GOARCH=wasm"}, "-buildmode=c-shared", "-o", filepath.Join(tools, "echo.wasm"), "./tools-wasm/echo"); f.err != nil {
			return
		}
		// config serves echo from toolsDir, with the shared compile cache.
		config := func(name, toolsDir string) (string, error) {
			path := filepath.Join(dir, name)
			return path, os.WriteFile(path, []byte(fmt.Sprintf(
				"tools:\n  dir: %s\n  cache_dir: %s\n  grants:\n    echo: {}\nlog:\n  level: warn\n",
				toolsDir, filepath.Join(dir, "cache"))), 0o644)
		}
		if f.config, f.err = config("config.yaml", tools); f.err != nil {
			return
		}
		cTools := filepath.Join(dir, "ctools")
		if f.cErr = buildCEcho(filepath.Join(cTools, "echo.wasm")); f.cErr == nil {
			f.cConfig, f.err = config("cconfig.yaml", cTools)
		}
		if f.err == nil {
			if out, err := exec.Command(f.warden, "serve", "--help").CombinedOutput(); err != nil {
				f.err = fmt.Errorf("%s has no serve command: %v\n%s", f.warden, err, out)
			}
		}
	})
	if f.err != nil {
		b.Skipf("cannot run warden: %v", f.err)
	}
}

// buildCEcho compiles the C SDK's echo example to out, with the SDK's own
// flags (guest-sdk/c/Makefile).
func buildCEcho(out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.Command("make", "-s", "-C", "../guest-sdk/c", "examples/echo.wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make the C echo: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile("../guest-sdk/c/examples/echo.wasm")
	if err != nil {
		return err
	}
	return os.WriteFile(out, wasm, 0o644)
}

func goBuild(env []string, args ...string) error {
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Dir = ".." // the module root
	cmd.Env = append(append(os.Environ(), "GOTOOLCHAIN=local"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func freeAddr(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startHTTP(b *testing.B, name string, cmd *exec.Cmd, addr string) *server {
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	var once sync.Once
	s := &server{name: name, httpURL: "http://" + addr + "/mcp", stop: func() {
		once.Do(func() {
			// SIGTERM first, so that warden ends its serve (and writes a
			// --cpuprofile); SIGKILL if it has not exited in time.
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
			}
		})
	}}
	s.started(cmd)
	// Stopped even when a later step fails the benchmark (say, the next
	// server does not start): a child left behind serves forever, orphaned.
	b.Cleanup(s.stop)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-exited:
			b.Fatalf("%s exited before serving on %s (%v); its stderr is above", name, addr, waitErr)
		default:
		}
		if cs, err := connect(s); err == nil {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: echoArgs{Text: "ready"}})
			cs.Close()
			if err == nil {
				return s
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			b.Fatalf("%s did not start serving echo on %s", name, addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func servers(b *testing.B, transport string) []*server {
	fx.setup(b)
	if fx.cErr != nil {
		b.Logf("warden-c (the C SDK's echo) is not measured: %v", fx.cErr)
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	if transport == "stdio" {
		ns := &server{name: "native", stop: func() {}}
		ns.stdio = func() mcp.Transport {
			cmd := exec.Command(self)
			cmd.Env = append(serverEnv(), "BENCH_NATIVE_SERVER=stdio")
			cmd.Stderr = os.Stderr
			ns.started(cmd)
			return &mcp.CommandTransport{Command: cmd}
		}
		wardenStdio := func(name, config string) *server {
			ws := &server{name: name, stop: func() {}}
			ws.stdio = func() mcp.Transport {
				cmd := exec.Command(fx.warden, append([]string{"serve", "--config", config}, serveArgs()...)...)
				cmd.Env = serverEnv()
				cmd.Stderr = os.Stderr
				ws.started(cmd)
				return &mcp.CommandTransport{Command: cmd}
			}
			return ws
		}
		srvs := []*server{ns, wardenStdio("warden", fx.config)}
		if fx.cConfig != "" {
			srvs = append(srvs, wardenStdio("warden-c", fx.cConfig))
		}
		return srvs
	}
	nativeAddr := freeAddr(b)
	native := exec.Command(self)
	native.Env = append(serverEnv(), "BENCH_NATIVE_SERVER=http:"+nativeAddr)
	wardenHTTP := func(name, config string) *server {
		addr := freeAddr(b)
		cmd := exec.Command(fx.warden, append([]string{"serve", "--config", config, "--http", addr}, serveArgs()...)...)
		cmd.Env = serverEnv()
		return startHTTP(b, name, cmd, addr)
	}
	srvs := []*server{startHTTP(b, "native", native, nativeAddr), wardenHTTP("warden", fx.config)}
	if fx.cConfig != "" {
		srvs = append(srvs, wardenHTTP("warden-c", fx.cConfig))
	}
	return srvs
}

// serveArgs are extra `warden serve` arguments from $WARDEN_SERVE_ARGS
// (space-separated), e.g. "--cpuprofile /tmp/serve.prof" to profile the
// server under the benchmark's load.
func serveArgs() []string { return strings.Fields(os.Getenv("WARDEN_SERVE_ARGS")) }

// serverEnv is the environment of a server child: the benchmark's own,
// plus $BENCH_SERVER_ENV (space-separated KEY=VALUE), e.g.
// "GODEBUG=gctrace=1" to trace the servers' collections without tracing
// the benchmark process too.
func serverEnv() []string {
	return append(os.Environ(), strings.Fields(os.Getenv("BENCH_SERVER_ENV"))...)
}

func connect(s *server) (*mcp.ClientSession, error) {
	var t mcp.Transport
	if s.stdio != nil {
		t = s.stdio()
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: s.httpURL}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	return client.Connect(context.Background(), t, nil)
}

// BenchmarkEcho runs native and warden one after the other under identical
// load and reports warden's p50 relative to native's.
func BenchmarkEcho(b *testing.B) {
	for _, transport := range []string{"stdio", "http"} {
		clientCounts := []int{1}
		if transport == "http" {
			clientCounts = []int{1, 16}
		}
		b.Run(transport, func(b *testing.B) {
			srvs := servers(b, transport)
			defer func() {
				for _, s := range srvs {
					s.stop()
				}
			}()
			for _, clients := range clientCounts {
				p50 := map[string]time.Duration{}
				for _, s := range srvs {
					b.Run(fmt.Sprintf("%s/clients=%d", s.name, clients), func(b *testing.B) {
						p50[s.name] = runEcho(b, s, clients)
					})
				}
				for _, w := range []string{"warden", "warden-c"} {
					if p50["native"] > 0 && p50[w] > 0 {
						b.Logf("%s, %d client(s): %s p50 %v = %.2fx native p50 %v (goal <= 1.2x)", transport, clients, w,
							p50[w], float64(p50[w])/float64(p50["native"]), p50["native"])
					}
				}
			}
		})
	}
}

// runEcho makes b.N echo calls spread over clients concurrent sessions and
// reports latency percentiles and throughput. It returns the p50.
func runEcho(b *testing.B, s *server, clients int) time.Duration {
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		cs, err := connect(s)
		if err != nil {
			b.Fatalf("connect to %s: %v", s.name, err)
		}
		defer cs.Close()
		sessions[i] = cs
		// Warm up: the first call of a session pays for setup that is not
		// the steady state being measured.
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: echoArgs{Text: "warm"}}); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
	}
	latencies := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := s.cpuTime()
	start := time.Now()
	for c := range clients {
		n := b.N / clients
		if c < b.N%clients {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			params := &mcp.CallToolParams{Name: "echo", Arguments: echoArgs{Text: "hello, warden"}}
			lat := make([]time.Duration, 0, n)
			for range n {
				t0 := time.Now()
				res, err := sessions[c].CallTool(context.Background(), params)
				lat = append(lat, time.Since(t0))
				if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "hello, warden" {
					b.Errorf("%s: echo failed: %+v %v", s.name, res, err)
					return
				}
			}
			latencies[c] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := s.cpuTime() - cpu0
	b.StopTimer()
	all := slices.Concat(latencies...)
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	p50 := all[len(all)/2]
	p99 := all[min(len(all)-1, len(all)*99/100)]
	b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "server-cpu-µs/call")
	return p50
}
