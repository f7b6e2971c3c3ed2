package lsp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/tool"
)

// The test binary doubles as a fake language server (WARDEN_LSP_FAKE) and
// as a stand-in warden process (WARDEN_LSP_WARDEN), so lifecycle tests run
// fast and without gopls.
func TestMain(m *testing.M) {
	if mode := os.Getenv("WARDEN_LSP_FAKE"); mode != "" {
		runFakeServer(mode, os.Getenv("WARDEN_LSP_FAKE_LOG"))
		return
	}
	if root := os.Getenv("WARDEN_LSP_WARDEN"); root != "" {
		runFakeWarden(root)
		return
	}
	code := m.Run()
	closeSharedGopls()
	os.Exit(code)
}

// --- the fake language server ---

type fakeServer struct {
	protocol.UnimplementedServer
	mode string
	log  func(format string, args ...any)
}

// fakeSymbolLine is what the fake's positions refer to: line 1 of any file
// it is asked about. In UTF-16, "ü" starts at 3 (the emoji is a surrogate
// pair); in UTF-8 bytes at 5.
const fakeSymbolLine = "a😀ü := 1\n"

func runFakeServer(mode, logPath string) {
	logf := func(format string, args ...any) {
		f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, format+"\n", args...)
			f.Close()
		}
	}
	logf("start %d", os.Getpid())
	if mode == "crash" {
		fmt.Fprintln(os.Stderr, "fake: crashing on purpose")
		os.Exit(3)
	}
	stdio := struct {
		io.Reader
		io.Writer
		io.Closer
	}{os.Stdin, os.Stdout, os.Stdin}
	_, conn, _ := protocol.NewServer(context.Background(), &fakeServer{mode: mode, log: logf}, jsonrpc2.NewHeaderStream(stdio))
	<-conn.Done()
	logf("stdin closed")
	os.Exit(0)
}

func (f *fakeServer) Initialize(ctx context.Context, p *protocol.InitializeParams) (*protocol.InitializeResult, error) {
	f.log("initialize encodings=%v", p.Capabilities.General.PositionEncodings)
	// UTF-16 only, like many servers: warden must convert columns.
	return &protocol.InitializeResult{Capabilities: protocol.ServerCapabilities{PositionEncoding: protocol.PositionEncodingKindUTF16}}, nil
}

func (f *fakeServer) Shutdown(ctx context.Context) error {
	f.log("shutdown")
	if f.mode == "stubborn" {
		select {} // never answers; warden must kill it
	}
	return nil
}

func (f *fakeServer) Exit(ctx context.Context) error {
	f.log("exit")
	os.Exit(0)
	return nil
}

func (f *fakeServer) DidOpen(ctx context.Context, p *protocol.DidOpenTextDocumentParams) error {
	f.log("didOpen %s v%d", filepath.Base(p.TextDocument.URI.FsPath()), p.TextDocument.Version)
	return nil
}

func (f *fakeServer) DidChange(ctx context.Context, p *protocol.DidChangeTextDocumentParams) error {
	f.log("didChange %s v%d", filepath.Base(p.TextDocument.URI.FsPath()), p.TextDocument.Version)
	return nil
}

func (f *fakeServer) DocumentSymbol(ctx context.Context, p *protocol.DocumentSymbolParams) (protocol.DocumentSymbolResult, error) {
	switch f.mode {
	case "hang":
		f.log("documentSymbol waiting")
		<-ctx.Done()
		f.log("documentSymbol cancelled")
		return nil, ctx.Err()
	case "crash-on-query":
		f.log("documentSymbol crashing")
		os.Exit(4)
	case "crash-once":
		marker := filepath.Join(filepath.Dir(os.Getenv("WARDEN_LSP_FAKE_LOG")), "crashed-once")
		if _, err := os.Stat(marker); err != nil {
			os.WriteFile(marker, nil, 0o644)
			f.log("documentSymbol crashing")
			os.Exit(4)
		}
	}
	f.log("documentSymbol")
	r := protocol.Range{Start: protocol.Position{Line: 0, Character: 3}, End: protocol.Position{Line: 0, Character: 4}}
	return protocol.DocumentSymbolSlice{{
		Name: "ü", Kind: protocol.SymbolKindVariable,
		Range: protocol.Range{Start: protocol.Position{Line: 0, Character: 0}, End: protocol.Position{Line: 0, Character: 9}}, SelectionRange: r,
	}}, nil
}

func (f *fakeServer) Hover(ctx context.Context, p *protocol.HoverParams) (*protocol.Hover, error) {
	f.log("hover %d:%d", p.Position.Line, p.Position.Character)
	return &protocol.Hover{Contents: &protocol.MarkupContent{Kind: protocol.MarkupKindPlainText, Value: "fake hover"}}, nil
}

func (f *fakeServer) Definition(ctx context.Context, p *protocol.DefinitionParams) (protocol.DefinitionResult, error) {
	f.log("definition %d:%d", p.Position.Line, p.Position.Character)
	return &protocol.Location{URI: p.TextDocument.URI, Range: protocol.Range{
		Start: protocol.Position{Line: 0, Character: 3}, End: protocol.Position{Line: 0, Character: 4},
	}}, nil
}

// fakeEnv is a project with one file for the fake server, and its log.
type fakeEnv struct {
	root string
	log  string
}

func newFakeEnv(t testing.TB) *fakeEnv {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.fk"), []byte(fakeSymbolLine), 0o644); err != nil {
		t.Fatal(err)
	}
	return &fakeEnv{root: root, log: filepath.Join(t.TempDir(), "fake.log")}
}

// languages returns a config running the fake server in mode for ".fk".
func (e *fakeEnv) languages(mode string) map[string]Language {
	return map[string]Language{"fake": {
		Command:    os.Args[0],
		Args:       []string{"-test.run=^$"},
		Extensions: []string{".fk"},
		Env:        []string{"WARDEN_LSP_FAKE=" + mode, "WARDEN_LSP_FAKE_LOG=" + e.log},
	}}
}

func (e *fakeEnv) target() Target { return Target{Language: "fake", Root: e.root} }

// lines returns the fake servers' log lines.
func (e *fakeEnv) lines() []string {
	b, _ := os.ReadFile(e.log)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// count counts log lines starting with prefix.
func (e *fakeEnv) count(prefix string) int {
	n := 0
	for _, l := range e.lines() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// runFakeWarden is a warden that starts one fake server, reports its pid
// and waits to be killed.
func runFakeWarden(root string) {
	e := &fakeEnv{root: root, log: filepath.Join(root, "fake.log")}
	m, err := NewManager(Config{Languages: e.languages("ok")})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if _, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk"); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	fmt.Println("pid", serverPID(m, e.target()))
	select {}
}

// --- helpers shared by the tests ---

// serverPID returns the pid of t's running server, or 0.
func serverPID(m *Manager, t Target) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sl := m.slots[t]; sl != nil && sl.srv != nil {
		return sl.srv.pid
	}
	return 0
}

// slotStats returns how many processes t's slot started and its failures.
func slotStats(m *Manager, t Target) (starts, failures int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if sl := m.slots[t]; sl != nil {
		return sl.starts, len(sl.failures)
	}
	return 0, 0
}

// procStat returns the state and process group of pid from /proc, or
// ok=false when there is no such process.
func procStat(pid int) (state byte, pgrp int, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	fields := strings.Fields(s[i+1:])
	if len(fields) < 3 {
		return 0, 0, 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	pgrp, _ = strconv.Atoi(fields[2])
	return fields[0][0], pgrp, ppid, true
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, _, ok := procStat(pid)
	return ok && state != 'Z'
}

// groupMembers lists the processes whose process group is pgrp, and those
// whose parent is ppid, zombies included.
func processesOf(pgrp, ppid int) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, g, parent, ok := procStat(pid)
		if !ok {
			continue
		}
		if (pgrp > 0 && g == pgrp) || (ppid > 0 && parent == ppid) {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			out = append(out, fmt.Sprintf("%d %c %s", pid, state, strings.TrimSpace(string(comm))))
		}
	}
	return out
}

// childrenNamed lists our child processes whose command name is comm,
// except the one with pid except.
func childrenNamed(comm string, except int) []string {
	var out []string
	for _, p := range processesOf(0, os.Getpid()) {
		if strings.HasSuffix(p, " "+comm) && !strings.HasPrefix(p, strconv.Itoa(except)+" ") {
			out = append(out, p)
		}
	}
	return out
}

// sharedPID returns the pid of the shared gopls, or -1.
func sharedPID() int {
	if shared.env == nil {
		return -1
	}
	return serverPID(shared.env.m, shared.env.target())
}

// eventually polls cond until it holds or the bound passes. The bound only
// keeps a broken test from hanging; nothing asserts on timing.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fakeGate grants reads under the allow prefixes except under the deny
// prefixes, and words its denials like the fs capability.
type fakeGate struct {
	allow, deny []string
}

func under(rel, prefix string) bool {
	return prefix == "" || rel == prefix || strings.HasPrefix(rel, prefix+"/")
}

func (g fakeGate) CheckRead(call *hostfuncs.Call, rel string) error {
	for _, d := range g.deny {
		if under(rel, d) {
			return tool.Errorf(tool.KindDenied, "read %s: not granted to tool %s", rel, call.Tool)
		}
	}
	for _, a := range g.allow {
		if under(rel, a) {
			return nil
		}
	}
	return tool.Errorf(tool.KindDenied, "read %s: not granted to tool %s", rel, call.Tool)
}

type nopObserver struct{}

func (nopObserver) Progress(tool.Progress) {}
func (nopObserver) Log(slog.Level, string) {}
func callWith(langs ...string) *hostfuncs.Call {
	return &hostfuncs.Call{Tool: "probe", Grants: tool.Capabilities{LSP: langs}, Observer: nopObserver{}}
}

// copyDir copies the fixture tree src into dst.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// --- gopls ---

var goplsOnce struct {
	sync.Once
	path string
}

// goplsPath finds gopls in PATH or GOPATH/bin, or fails the test.
func goplsPath(t testing.TB) string {
	t.Helper()
	goplsOnce.Do(func() {
		if p, err := exec.LookPath("gopls"); err == nil {
			goplsOnce.path = p
			return
		}
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			return
		}
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(dir, "bin", "gopls")
			if _, err := os.Stat(p); err == nil {
				goplsOnce.path = p
				return
			}
		}
	})
	if goplsOnce.path == "" {
		t.Fatal("install gopls: go install golang.org/x/tools/gopls@v0.23.0")
	}
	return goplsOnce.path
}

func goplsLanguages(t testing.TB) map[string]Language {
	langs := DefaultLanguages()
	g := langs["go"]
	g.Command = goplsPath(t)
	g.Env = []string{"GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod"}
	langs["go"] = g
	return langs
}

// newFixture copies the Go fixture module into a fresh directory.
func newFixture(t testing.TB) string {
	root := t.TempDir()
	copyDir(t, "testdata/fixture", root)
	return root
}

// goplsEnv is a manager with gopls on a copy of the fixture, and the
// capability over it with secret/ denied.
type goplsEnv struct {
	root string
	m    *Manager
	c    *Capability
}

func (e *goplsEnv) target() Target { return Target{Language: "go", Root: e.root} }

var shared struct {
	once sync.Once
	env  *goplsEnv
	dir  string
	err  error
}

// sharedGopls returns the gopls environment most query tests share, so the
// package's tests start gopls a handful of times rather than once each.
func sharedGopls(t testing.TB) *goplsEnv {
	t.Helper()
	langs := goplsLanguages(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "warden-lsp-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		root := filepath.Join(dir, "fixture")
		copyDir(t, "testdata/fixture", root)
		m, err := NewManager(Config{Languages: langs, ShutdownGrace: 500 * time.Millisecond})
		if err != nil {
			shared.err = err
			return
		}
		c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}, deny: []string{"secret"}})
		if err != nil {
			shared.err = err
			return
		}
		shared.env = &goplsEnv{root: root, m: m, c: c}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.env
}

func closeSharedGopls() {
	if shared.env != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		shared.env.m.Close(ctx)
		cancel()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// position returns the 1-based line and byte column of the n-th (1-based)
// occurrence of needle in the fixture file rel.
func position(t testing.TB, rel, needle string, n int) Position {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata/fixture", rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		for off := 0; ; {
			i := strings.Index(text[off:], needle)
			if i < 0 {
				break
			}
			if n--; n == 0 {
				return Position{Line: line, Column: off + i + 1}
			}
			off += i + 1
		}
	}
	t.Fatalf("%q not found in %s", needle, rel)
	return Position{}
}

// killPID kills process pid as kill -9 does (TerminateProcess on Windows).
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
