// Package serve tests `warden serve` end to end with real peers: the warden
// binary as a child process, driven by the official go-sdk MCP client over
// stdio and streamable HTTP, serving real wasm tools (the bundled echo and
// the runtime's Go failure fixtures). One test runs internal/app and
// mcpserver in process, to count goroutines and instances after a storm of
// cancelled calls.
//
// The binary and the modules are built once per run, in TestMain. Latencies
// are measured and logged, never asserted.
package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/pgtest"
	"github.com/warden-run/warden/internal/testwasm"
)

// pg is the PostgreSQL server the replica tests share.
var pg *pgtest.Server

// fixtures are the modules the tests serve, by tool name, and the package
// each is built from (relative to the module root).
var fixtures = map[string]string{
	"echo":        "tools-wasm/echo",
	"loop":        "runtime/testdata/goguest/loop",
	"sleep":       "runtime/testdata/goguest/sleep",
	"state":       "runtime/testdata/goguest/state",
	"panic":       "runtime/testdata/goguest/panic",
	"hostcalls":   "runtime/testdata/goguest/hostcalls",
	"stdoutflood": "runtime/testdata/goguest/stdoutflood",
	"busy":        "e2e/serve/testdata/busy",
	"taskloop":    "e2e/serve/testdata/taskloop",
	"pager":       "e2e/serve/testdata/pager",
	"surface":     "e2e/serve/testdata/hostile/surface",
	"shouty":      "e2e/serve/testdata/hostile/shouty",
	"conformance": "tools-wasm/conformance",
	"doors":       "runtime/testdata/goguest/doors",
	"borrower":    "e2e/serve/testdata/hostile/borrower",
	"poser":       "e2e/serve/testdata/hostile/poser",
}

// built is what TestMain built: the warden binary and each fixture's module
// (in testwasm's cache; copy it, never modify it).
var built struct {
	root     string // the module root
	warden   string
	wasm     map[string]string
	cacheDir string // compiled-code cache shared by every server of the run
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "warden-e2e-serve")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	// One PostgreSQL server for the replica tests (pgtest), started by the
	// first; without PostgreSQL installed they skip, or fail under CI.
	pg = pgtest.New()
	defer pg.Stop()
	if err := build(tmp); err != nil {
		fmt.Fprintln(os.Stderr, "e2e/serve:", err)
		return 1
	}
	return m.Run()
}

func build(tmp string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return errors.New("not inside the warden module")
	}
	built.root = filepath.Dir(gomod)
	built.warden = filepath.Join(tmp, "warden")
	cmd := exec.Command("go", "build", "-o", built.warden, "./cmd/warden")
	cmd.Dir = built.root
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/warden: %v\n%s", err, out)
	}

	// Compiled code is keyed by the module's content and wazero's version,
	// so one cache can serve every run; it makes a server start in ~1 s.
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	built.cacheDir = filepath.Join(base, "warden-e2e", "compiled")
	if err := os.MkdirAll(built.cacheDir, 0o755); err != nil {
		return err
	}

	built.wasm = make(map[string]string)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for name, pkg := range fixtures {
		wg.Go(func() {
			path, err := buildGuest(filepath.Join(built.root, pkg))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			built.wasm[name] = path
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return warmCache(tmp)
}

// warmCache compiles every fixture once into the shared cache with
// `warden cache warm` (`warden tools`, a one-shot command, compiles
// nothing: Runtime.ForOneShot), then checks that `warden tools` lists
// them: otherwise the parallel tests' servers would each compile the same
// modules at once on a cold cache (as on a fresh CI machine), which can
// take minutes on two cores.
func warmCache(tmp string) error {
	var names []string
	for name := range fixtures {
		names = append(names, name)
	}
	e, err := makeEnv(filepath.Join(tmp, "warm"), "", names...)
	if err != nil {
		return err
	}
	start := time.Now()
	// A fixture that is meant to fail its load (borrower) makes both exit
	// 1 (`warden tools` with a FAILED row): compiled or failed, each is
	// listed.
	var out []byte
	for _, args := range [][]string{{"cache", "warm"}, {"tools"}} {
		cmd := exec.Command(built.warden, append(args, "--config", e.config)...)
		cmd.Env = childEnv()
		out, err = cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
			return fmt.Errorf("warden %s (loading every fixture): %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, name := range names {
		if !strings.Contains(string(out), name) {
			return fmt.Errorf("warden tools does not list fixture %s:\n%s", name, out)
		}
	}
	fmt.Fprintf(os.Stderr, "e2e/serve: fixtures loaded (and compiled into %s) in %v\n", built.cacheDir, time.Since(start).Round(time.Millisecond))
	return nil
}

// buildGuest runs testwasm.BuildGoFile outside any test.
func buildGuest(dir string) (path string, err error) {
	tb := &detached{}
	defer func() {
		if r := recover(); r != nil {
			if r != tb {
				panic(r)
			}
			err = errors.New(tb.msg)
		}
	}()
	return testwasm.BuildGoFile(tb, dir), nil
}

// detached is the testing.TB testwasm needs, outside a test: Fatalf aborts
// the build by panicking with itself. Only the methods testwasm calls are
// implemented; the embedded nil interface makes any other call crash loudly.
type detached struct {
	testing.TB
	msg string
}

func (d *detached) Helper() {}
func (d *detached) Fatalf(format string, args ...any) {
	d.msg = fmt.Sprintf(format, args...)
	panic(d)
}

// env is one server's files: a tools dir holding copies of the fixtures and
// a config.yaml pointing at it.
type env struct {
	dir    string
	tools  string
	config string
}

// newEnv copies the named fixtures into a fresh tools dir and writes a config
// granting each nothing (grants: {name: {}}). limits is YAML for
// tools.limits, one "name: {...}" per line ("" for none).
func newEnv(t *testing.T, limits string, names ...string) *env {
	t.Helper()
	e, err := makeEnv(t.TempDir(), limits, names...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func makeEnv(dir, limits string, names ...string) (*env, error) {
	e := &env{dir: dir, tools: filepath.Join(dir, "tools"), config: filepath.Join(dir, "config.yaml")}
	if err := os.MkdirAll(e.tools, 0o755); err != nil {
		return nil, err
	}
	for _, name := range names {
		if err := e.copyIn(name); err != nil {
			return nil, err
		}
	}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "project:\n  root: %s\n", e.dir)
	fmt.Fprintf(&cfg, "tools:\n  dir: %s\n  cache_dir: %s\n", e.tools, built.cacheDir)
	cfg.WriteString("  limits:\n")
	for line := range strings.Lines(limits) {
		if line = strings.TrimSpace(line); line != "" {
			fmt.Fprintf(&cfg, "    %s\n", line)
		}
	}
	cfg.WriteString("  grants:\n")
	for name := range fixtures {
		fmt.Fprintf(&cfg, "    %s: {}\n", name)
	}
	cfg.WriteString("log:\n  level: info\n")
	return e, os.WriteFile(e.config, []byte(cfg.String()), 0o644)
}

// setLogLevel sets the config's log.level (makeEnv writes info).
func (e *env) setLogLevel(t *testing.T, level string) {
	t.Helper()
	b, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("log:\n  level: info\n"), []byte("log:\n  level: "+level+"\n"), 1)
	if err := os.WriteFile(e.config, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// install copies fixture name into the tools dir the way cp does: the file is
// created in place and written, so a watcher sees it grow.
func (e *env) install(t *testing.T, name string) {
	t.Helper()
	if err := e.copyIn(name); err != nil {
		t.Fatal(err)
	}
}

func (e *env) copyIn(name string) error {
	src, ok := built.wasm[name]
	if !ok {
		return fmt.Errorf("no fixture %q", name)
	}
	wasm, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(e.tools, name+".wasm"), wasm, 0o644)
}

// childEnv is the environment of a warden child process: the test's own,
// without anything that would override the config under test.
func childEnv(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "WARDEN_") {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

// logBuffer collects a child's stderr, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the complete lines containing every one of substrs.
func (b *logBuffer) lines(substrs ...string) []string {
	var out []string
	for line := range strings.Lines(b.String()) {
		if !strings.HasSuffix(line, "\n") {
			break // still being written
		}
		ok := true
		for _, s := range substrs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// dumpOnFailure logs a child's stderr when the test failed.
func dumpOnFailure(t *testing.T, what string, stderr *logBuffer) {
	t.Cleanup(func() {
		if t.Failed() {
			// Guest output is logged as one long attribute: cut long lines.
			var b strings.Builder
			for line := range strings.Lines(stderr.String()) {
				if len(line) > 400 {
					line = line[:400] + "…\n"
				}
				b.WriteString(line)
			}
			s := b.String()
			if len(s) > 32<<10 {
				s = "…" + s[len(s)-32<<10:]
			}
			t.Logf("%s stderr:\n%s", what, s)
		}
	})
}

// eventually polls cond until it holds, failing the test after a generous
// bound. It waits for an event; it asserts nothing about how long it took.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
}

// stdioServer starts `warden serve --config e.config` under the go-sdk's
// CommandTransport and connects a client at protocol (""= the latest).
// Closing the session (done at cleanup) closes warden's stdin; the cleanup
// asserts that warden then exits cleanly.
func stdioServer(t *testing.T, e *env, protocol string, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *logBuffer) {
	t.Helper()
	return stdioServerWith(t, e, protocol, newClient(opts), args...)
}

// stdioServerWith is stdioServer with a client of the caller's (one with
// middleware, say).
func stdioServerWith(t *testing.T, e *env, protocol string, client *mcp.Client, args ...string) (*mcp.ClientSession, *logBuffer) {
	t.Helper()
	cs, stderr := stdioServerConnect(t, e, protocol, client, args...)
	waitLoaded(t, cs)
	return cs, stderr
}

// waitLoaded waits until tools/list no longer names modules still loading
// (serve loads them in the background): every module has joined or failed.
func waitLoaded(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	eventually(t, "every module loaded", func() bool {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		_, loading := res.Meta["warden/loading"]
		return !loading
	})
}

// stdioServerLoading is stdioServer without waiting for the modules to load.
func stdioServerLoading(t *testing.T, e *env, protocol string, opts *mcp.ClientOptions, args ...string) (*mcp.ClientSession, *logBuffer) {
	t.Helper()
	return stdioServerConnect(t, e, protocol, newClient(opts), args...)
}

func stdioServerConnect(t *testing.T, e *env, protocol string, client *mcp.Client, args ...string) (*mcp.ClientSession, *logBuffer) {
	t.Helper()
	stderr := &logBuffer{}
	dumpOnFailure(t, "warden serve (stdio)", stderr)
	cmd := exec.Command(built.warden, append([]string{"serve", "--config", e.config}, args...)...)
	cmd.Env = childEnv()
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect to warden serve over stdio: %v", err)
	}
	t.Logf("stdio: warden serve started and connected in %v", time.Since(start))
	t.Cleanup(func() {
		start := time.Now()
		if err := cs.Close(); err != nil {
			t.Errorf("warden serve did not exit cleanly after stdin closed: %v", err)
		}
		t.Logf("stdio: warden serve exited %v after stdin closed", time.Since(start))
	})
	return cs, stderr
}

// httpServer is a `warden serve --http` child process.
type httpServer struct {
	cmd    *exec.Cmd
	addr   string
	stderr *logBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

func (s *httpServer) url() string { return "http://" + s.addr + "/mcp" }

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startHTTP starts `warden serve --http=<free port>` and waits for /healthz.
// At cleanup it sends SIGTERM and asserts that warden exits with status 0.
// (--http=ADDR: TestHTTPFlagWithSeparateValue is about --http ADDR.)
func startHTTP(t *testing.T, e *env, args ...string) *httpServer {
	t.Helper()
	addr := freeAddr(t)
	return startServe(t, e, addr, append([]string{"--http=" + addr}, args...)...)
}

// startServe runs `warden serve --config e.config args...`, which must serve
// HTTP on addr.
func startServe(t *testing.T, e *env, addr string, args ...string) *httpServer {
	t.Helper()
	hc := http.DefaultClient
	if i := slices.Index(args, "--token"); i >= 0 && i+1 < len(args) {
		hc = &http.Client{Transport: bearer{args[i+1]}}
	}
	return startServeAs(t, e, addr, hc, args...)
}

// startServeAs is startServe whose first client, which waits for the
// modules to load, connects with hc.
func startServeAs(t *testing.T, e *env, addr string, hc *http.Client, args ...string) *httpServer {
	t.Helper()
	start := time.Now()
	s := startServeLoading(t, e, addr, args...)
	// Modules load in the background: wait until every one has joined or
	// failed, so that tests see the tools dir's full tool set.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url(), HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", s.url(), err)
	}
	defer cs.Close()
	waitLoaded(t, cs)
	t.Logf("http: every module loaded %v after start", time.Since(start))
	return s
}

// startServeLoading is startServe up to the first answer of /healthz
// (200: live, while modules may still be loading).
func startServeLoading(t *testing.T, e *env, addr string, args ...string) *httpServer {
	t.Helper()
	s := &httpServer{addr: addr, stderr: &logBuffer{}, exited: make(chan struct{})}
	dumpOnFailure(t, "warden serve --http", s.stderr)
	s.cmd = exec.Command(built.warden, append([]string{"serve", "--config", e.config}, args...)...)
	s.cmd.Env = childEnv()
	s.cmd.Stderr = s.stderr
	start := time.Now()
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
			if s.err != nil {
				t.Errorf("warden serve --http exited with %v after SIGTERM", s.err)
			}
		case <-time.After(30 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
			t.Errorf("warden serve --http still running 30 s after SIGTERM; killed")
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-s.exited:
			t.Fatalf("warden serve --http exited before serving: %v", s.err)
		default:
		}
		resp, err := http.Get("http://" + s.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("warden serve --http did not answer /healthz on %s", s.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("http: warden serve answered /healthz %v after start", time.Since(start))
	return s
}

// connect opens a client session to s at protocol ("" = the latest, the
// stateless 2026-07-28), closed at cleanup.
func (s *httpServer) connect(t *testing.T, protocol string, opts *mcp.ClientOptions, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	return s.connectWith(t, protocol, newClient(opts), hc)
}

// connectWith is connect with a client of the caller's.
func (s *httpServer) connectWith(t *testing.T, protocol string, client *mcp.Client, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url(), HTTPClient: hc},
		&mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect to %s at %q: %v", s.url(), protocol, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call makes a tools/call and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return res
}

// text returns the result's only content block, which must be text.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1: %s", len(res.Content), dump(res))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T, want text: %s", res.Content[0], dump(res))
	}
	return tc.Text
}

// wantEcho calls echo and checks the exact result.
func wantEcho(t *testing.T, cs *mcp.ClientSession, msg string) {
	t.Helper()
	res := call(t, cs, "echo", map[string]any{"text": msg})
	if res.IsError || text(t, res) != msg {
		t.Fatalf("echo %q: %s", msg, dump(res))
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != fmt.Sprintf(`{"text":%q}`, msg) {
		t.Fatalf("echo %q: structuredContent %s", msg, got)
	}
}

// wantFailure checks that res is a tool failure of the given kind.
func wantFailure(t *testing.T, res *mcp.CallToolResult, kind string) {
	t.Helper()
	if !res.IsError || res.Meta["warden/kind"] != kind {
		t.Fatalf("want isError with warden/kind %q, got %s", kind, dump(res))
	}
	if len(res.Content) == 0 {
		t.Fatalf("failure without content: a model needs words to recover: %s", dump(res))
	}
}

// wantInvalidParams checks that err is the JSON-RPC error -32602.
func wantInvalidParams(t *testing.T, err error) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("want JSON-RPC error %d, got %T %v", jsonrpc.CodeInvalidParams, err, err)
	}
}

func dump(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// toolNames lists every tool the session sees, across pages.
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

// sortedKeys is a test-side sort of the fixture names asked for.
func sorted(names ...string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}

// readAll drains r, for raw HTTP responses.
func readAll(r io.Reader) string {
	b, _ := io.ReadAll(r)
	return string(b)
}
