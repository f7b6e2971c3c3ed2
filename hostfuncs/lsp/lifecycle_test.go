package lsp

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/warden-run/warden/tool"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newManager(t *testing.T, cfg Config) *Manager {
	t.Helper()
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

func TestCircuitBreaker(t *testing.T) {
	e := newFakeEnv(t)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	m := newManager(t, Config{Languages: e.languages("crash"), now: clock.now})
	ctx := context.Background()
	for i := 1; i <= 5; i++ {
		_, err := m.DocumentSymbols(ctx, e.target(), "a.fk")
		wantKind(t, err, tool.KindFailed, "exited: exit status 3: fake: crashing on purpose")
		clock.advance(time.Second)
	}
	if n := e.count("start"); n != 5 {
		t.Fatalf("5 queries started %d servers", n)
	}
	_, err := m.DocumentSymbols(ctx, e.target(), "a.fk")
	wantKind(t, err, tool.KindFailed, "failed 5 times within 1m0s (last: ")
	wantKind(t, err, tool.KindFailed, "not restarting it for another 59s")
	if n := e.count("start"); n != 5 {
		t.Fatalf("the open breaker started a server (%d starts)", n)
	}

	// After the cooldown one attempt goes through; failing, it reopens the
	// breaker at once.
	clock.advance(61 * time.Second)
	_, err = m.DocumentSymbols(ctx, e.target(), "a.fk")
	wantKind(t, err, tool.KindFailed, "exited: exit status 3")
	_, err = m.DocumentSymbols(ctx, e.target(), "a.fk")
	wantKind(t, err, tool.KindFailed, "not restarting it")
	if n := e.count("start"); n != 6 {
		t.Fatalf("half-open breaker: %d starts, want 6", n)
	}
}

func TestBreakerClosesAfterSuccess(t *testing.T) {
	e := newFakeEnv(t)
	clock := &fakeClock{t: time.Unix(1_000_000, 0)}
	m := newManager(t, Config{Languages: e.languages("crash-on-query"), MaxFailures: 2, now: clock.now})
	ctx := context.Background()
	// Each query crashes the server it runs on and the one it retries on.
	_, err := m.DocumentSymbols(ctx, e.target(), "a.fk")
	wantKind(t, err, tool.KindFailed, "exited: exit status 4")
	if n := e.count("start"); n != 2 {
		t.Fatalf("a crashing query ran on %d servers, want 2 (one retry)", n)
	}
	_, err = m.Hover(ctx, e.target(), "a.fk", Position{Line: 1, Column: 1})
	wantKind(t, err, tool.KindFailed, "not restarting it")
	clock.advance(2 * time.Minute)
	// Half-open: a query the server answers closes the breaker.
	h, err := m.Hover(ctx, e.target(), "a.fk", Position{Line: 1, Column: 1})
	if err != nil || h == nil || h.Text != "fake hover" {
		t.Fatalf("hover after the cooldown: %+v, %v", h, err)
	}
	if _, err := m.Hover(ctx, e.target(), "a.fk", Position{Line: 1, Column: 1}); err != nil {
		t.Fatalf("breaker did not close: %v", err)
	}
}

func TestRetryAfterCrash(t *testing.T) {
	e := newFakeEnv(t)
	m := newManager(t, Config{Languages: e.languages("crash-once")})
	syms, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk")
	if err != nil {
		t.Fatalf("query on a server that crashes under it: %v", err)
	}
	if len(syms) != 1 || syms[0].Name != "ü" {
		t.Fatalf("symbols: %+v", syms)
	}
	if starts, failures := slotStats(m, e.target()); starts != 2 || failures != 1 {
		t.Fatalf("starts %d, failures %d; want 2 and 1", starts, failures)
	}
}

func TestStartFailure(t *testing.T) {
	e := newFakeEnv(t)
	langs := e.languages("ok")
	l := langs["fake"]
	l.Command = "/nonexistent/language-server"
	langs["fake"] = l
	m := newManager(t, Config{Languages: langs})
	_, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk")
	// Not installed: said so, with how to install it, and not counted
	// against the breaker (install.go; TestMissingServer covers more).
	wantKind(t, err, tool.KindUnavailable, "the fake language server is not installed (/nonexistent/language-server is not in PATH); install it, or set lsp.languages.fake.command")
	if _, failures := slotStats(m, e.target()); failures != 0 {
		t.Fatalf("a missing server counted %d failures against the breaker", failures)
	}
}

func TestCancellation(t *testing.T) {
	e := newFakeEnv(t)
	// The request timeout stays at its 30 s default for the calls expected
	// to succeed (a loaded machine may take longer than a short bound to
	// answer them); it is cut short only for the call that must run past it.
	m := newManager(t, Config{Languages: e.languages("hang")})
	// Start the server first, so the deadline below runs out on the request
	// and not on the start.
	if _, err := m.Hover(context.Background(), e.target(), "a.fk", Position{Line: 1, Column: 1}); err != nil {
		t.Fatal(err)
	}

	// The call's context ends: cancelled, and the server hears of it.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err := m.DocumentSymbols(ctx, e.target(), "a.fk")
	cancel()
	wantKind(t, err, tool.KindCancelled, "lsp request cancelled")
	eventually(t, "$/cancelRequest reaches the server", func() bool { return e.count("documentSymbol cancelled") == 1 })

	// The request timeout passes: failed, and cancelled on the server too.
	// The fake never answers documentSymbol, so the bound can be short. No
	// call runs concurrently, so the test may change it in place.
	m.cfg.RequestTimeout = 300 * time.Millisecond
	_, err = m.DocumentSymbols(context.Background(), e.target(), "a.fk")
	m.cfg.RequestTimeout = defaultRequestTimeout
	wantKind(t, err, tool.KindFailed, "language server "+os.Args[0]+" for fake did not answer textDocument/documentSymbol in time")
	eventually(t, "$/cancelRequest reaches the server", func() bool { return e.count("documentSymbol cancelled") == 2 })

	// The same server still answers.
	if h, err := m.Hover(context.Background(), e.target(), "a.fk", Position{Line: 1, Column: 1}); err != nil || h.Text != "fake hover" {
		t.Fatalf("hover after cancellations: %+v, %v", h, err)
	}
	if starts, failures := slotStats(m, e.target()); starts != 1 || failures != 0 {
		t.Fatalf("starts %d, failures %d; want 1 and 0", starts, failures)
	}
}

func TestIdleShutdown(t *testing.T) {
	e := newFakeEnv(t)
	m := newManager(t, Config{Languages: e.languages("ok"), IdleTimeout: 100 * time.Millisecond})
	ctx := context.Background()
	if _, err := m.DocumentSymbols(ctx, e.target(), "a.fk"); err != nil {
		t.Fatal(err)
	}
	pid := serverPID(m, e.target())
	eventually(t, "the idle server stops", func() bool { _, _, _, ok := procStat(pid); return !ok && serverPID(m, e.target()) == 0 })
	if got := e.lines(); !reflect.DeepEqual(got[len(got)-2:], []string{"shutdown", "exit"}) {
		t.Fatalf("idle stop was not shutdown then exit: %q", got)
	}
	if _, err := m.DocumentSymbols(ctx, e.target(), "a.fk"); err != nil {
		t.Fatal(err)
	}
	if starts, failures := slotStats(m, e.target()); starts != 2 || failures != 0 {
		t.Fatalf("starts %d, failures %d; want 2 and 0 (idle is no crash)", starts, failures)
	}
}

func TestCloseKillsStubbornServer(t *testing.T) {
	e := newFakeEnv(t)
	m, err := NewManager(Config{Languages: e.languages("stubborn"), ShutdownGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk"); err != nil {
		t.Fatal(err)
	}
	pid := serverPID(m, e.target())
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := procStat(pid); ok {
		t.Fatalf("server %d outlived Close", pid)
	}
	if e.count("shutdown") != 1 || e.count("exit") != 0 {
		t.Fatalf("log: %q", e.lines())
	}
}

func TestCloseDeadline(t *testing.T) {
	e := newFakeEnv(t)
	m, err := NewManager(Config{Languages: e.languages("stubborn"), ShutdownGrace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk"); err != nil {
		t.Fatal(err)
	}
	pid := serverPID(m, e.target())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = m.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "killed 1 language servers") {
		t.Fatalf("Close past its deadline: %v", err)
	}
	if _, _, _, ok := procStat(pid); ok {
		t.Fatalf("server %d outlived Close", pid)
	}
}

// TestServersDieWithWarden kills a warden with SIGKILL: no Close runs, yet
// its server must not outlive it (Pdeathsig).
func TestServersDieWithWarden(t *testing.T) {
	if !diesWithWarden {
		t.Skip("servers outlive a killed warden on this OS")
	}
	root := t.TempDir()
	if err := os.WriteFile(root+"/a.fk", []byte(fakeSymbolLine), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WARDEN_LSP_WARDEN="+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "pid ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("fake warden said %q, %v", line, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	if !alive(pid) {
		t.Fatalf("server %d is not running", pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	eventually(t, "the server dies with its warden", func() bool { return !alive(pid) })
}

func TestUTF16Server(t *testing.T) {
	e := newFakeEnv(t)
	m := newManager(t, Config{Languages: e.languages("ok")})
	ctx := context.Background()
	syms, err := m.DocumentSymbols(ctx, e.target(), "a.fk")
	if err != nil {
		t.Fatal(err)
	}
	// UTF-16 3 (after "a" and a surrogate pair) is byte 5: column 6.
	if want := []Symbol{{Name: "ü", Kind: "variable", Line: 1, Column: 6, EndLine: 1}}; !reflect.DeepEqual(syms, want) {
		t.Fatalf("symbols: %+v, want %+v", syms, want)
	}
	defs, err := m.Definition(ctx, e.target(), "a.fk", Position{Line: 1, Column: 6})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Location{{Path: "a.fk", Line: 1, Column: 6, EndLine: 1, EndColumn: 8}}; !reflect.DeepEqual(defs, want) {
		t.Fatalf("definition: %+v, want %+v", defs, want)
	}
	// Column 7 is inside "ü"; it is sent as the rune's start.
	if _, err := m.Hover(ctx, e.target(), "a.fk", Position{Line: 1, Column: 7}); err != nil {
		t.Fatal(err)
	}
	// A changed file is sent again as version 2.
	if err := os.WriteFile(e.root+"/a.fk", []byte(fakeSymbolLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DocumentSymbols(ctx, e.target(), "a.fk"); err != nil {
		t.Fatal(err)
	}
	// The fake handles messages concurrently, so its log is compared as
	// a set.
	want := []string{
		"definition 0:3",
		"didChange a.fk v2",
		"didOpen a.fk v1",
		"documentSymbol",
		"documentSymbol",
		"hover 0:3",
		"initialize encodings=[utf-8 utf-16]",
	}
	// didChange is a notification: the fake may log it after it answered
	// the request that followed it, so wait (boundedly) for the log to settle.
	var got []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = e.lines()[1:]
		sort.Strings(got)
		if reflect.DeepEqual(got, want) || time.Now().After(deadline) {
			break
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("server saw:\n%q\nwant\n%q", got, want)
	}
}

// TestRootFollowsConfig: the capability asks for the project root on every
// request, so a reload that moves the root moves the queries with it.
func TestRootFollowsConfig(t *testing.T) {
	a, b := newFakeEnv(t), newFakeEnv(t)
	b.log = a.log
	m := newManager(t, Config{Languages: a.languages("ok")})
	var mu sync.Mutex
	root := a.root
	c, err := NewCapability(m, func() string { mu.Lock(); defer mu.Unlock(); return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	query := func() {
		t.Helper()
		if _, err := c.Serve(context.Background(), callWith("fake"), []byte(`{"op":"documentSymbol","path":"a.fk"}`)); err != nil {
			t.Fatal(err)
		}
	}
	query()
	mu.Lock()
	root = b.root
	mu.Unlock()
	query()
	if serverPID(m, a.target()) == 0 || serverPID(m, b.target()) == 0 {
		t.Fatal("want one server per root")
	}
}
