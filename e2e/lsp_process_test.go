//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/tool"
)

// proc is one process as /proc/<pid>/stat describes it.
type proc struct {
	pid, ppid, pgrp int
	comm            string
	state           byte
}

// processes lists every process, skipping those that vanish while read.
func processes(t testing.TB) []proc {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, proc{pid: pid, ppid: ppid, pgrp: pgrp, comm: s[open+1 : close], state: f[0][0]})
	}
	return out
}

// descendants returns the live processes whose parent chain leads to root.
func descendants(t testing.TB, root int) []proc {
	t.Helper()
	all := processes(t)
	parent := map[int]int{}
	for _, p := range all {
		parent[p.pid] = p.ppid
	}
	var out []proc
	for _, p := range all {
		for q := p.ppid; q > 1; q = parent[q] {
			if q == root {
				if p.state != 'Z' {
					out = append(out, p)
				}
				break
			}
		}
	}
	return out
}

// goplsUnder returns the gopls servers root started: its gopls children.
// (A gopls forks a telemetry child of its own, in its own session; that
// one is a grandchild of root.)
func goplsUnder(t testing.TB, root int) []proc {
	t.Helper()
	var out []proc
	for _, p := range descendants(t, root) {
		if p.comm == "gopls" && p.ppid == root {
			out = append(out, p)
		}
	}
	return out
}

// waitDead waits until none of procs is alive; a pid reused by another
// program (another comm) does not count.
func waitDead(t testing.TB, procs []proc) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []proc
		for _, p := range procs {
			if alive(p.pid) && commOf(p.pid) == p.comm {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes still running: %+v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func commOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}

// inGroup lists the live processes of process group pgrp.
func inGroup(t testing.TB, pgrp int) []proc {
	t.Helper()
	var out []proc
	for _, p := range processes(t) {
		if p.pgrp == pgrp && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

func TestKilledGoplsIsRestarted(t *testing.T) {
	goplsPath(t)
	// Its own warden, so that the gopls to kill is the only new one.
	before := goplsUnder(t, os.Getpid())
	e := newEnv(t, grantsYAML())
	var out symbolsOut
	e.ok(t, "symbols", map[string]any{"path": "shapes/shapes.go"}, "", &out)
	var started []proc
	for _, p := range goplsUnder(t, os.Getpid()) {
		if !slices.ContainsFunc(before, func(b proc) bool { return b.pid == p.pid }) {
			started = append(started, p)
		}
	}
	if len(started) != 1 {
		t.Fatalf("want one new gopls after the first query, got %+v", started)
	}
	old := started[0]
	if old.pgrp != old.pid {
		t.Fatalf("gopls %d is in process group %d, not its own", old.pid, old.pgrp)
	}
	oldTree := append(descendants(t, old.pid), old)
	if err := syscall.Kill(old.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The server and whatever it started (its telemetry child) go away.
	waitDead(t, oldTree)
	// The next query starts a new server and answers.
	var refs referencesOut
	l, c := findPos(t, e.project, "shapes/shapes.go", "Square", 2)
	e.ok(t, "references", map[string]any{"path": "shapes/shapes.go", "line": l, "column": c}, "", &refs)
	if brief(refs.References) != "main.go:11:15, shapes/shapes.go:15:9, shapes/shapes.go:29:31" {
		t.Fatalf("references after the restart: %s", brief(refs.References))
	}
	var now []proc
	for _, p := range goplsUnder(t, os.Getpid()) {
		if !slices.ContainsFunc(before, func(b proc) bool { return b.pid == p.pid }) {
			now = append(now, p)
		}
	}
	if len(now) != 1 || now[0].pid == old.pid {
		t.Fatalf("after the restart: gopls processes %+v (the killed one was %d)", now, old.pid)
	}
	// Closing the app stops it, its group and its children.
	tree := append(descendants(t, now[0].pid), now[0])
	e.app.Close(context.Background())
	waitGone(t, now[0].pgrp)
	waitDead(t, tree)
}

// waitGone waits until process group pgrp is empty.
func waitGone(t testing.TB, pgrp int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := inGroup(t, pgrp)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of group %d still running: %+v", pgrp, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWardenServeLeavesNoGopls runs the real binary over stdio with the
// go-sdk client: the tools answer through MCP (cursor in _meta included),
// and once the client has closed, no gopls that warden started is left.
func TestWardenServeLeavesNoGopls(t *testing.T) {
	goplsPath(t)
	e := newEnv(t, grantsYAML()) // for its project, tools and config
	e.app.Close(context.Background())
	bin := buildWarden(t, t.TempDir())

	cmd := exec.Command(bin, "serve", "--config", e.config)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	// Long enough that warden exits on its own when stdin closes, rather
	// than on the transport's SIGTERM.
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wardenPID := cmd.Process.Pid
	// serve loads modules in the background; on a busy machine compiling
	// them can outlast a call's wait for them (server.queue_wait). Wait for
	// a list that names nothing still loading: each tools/list itself waits
	// up to server.list_wait, so this loop ends as soon as the loads do.
	for {
		list, err := session.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if _, loading := list.Meta[tool.MetaLoading]; !loading {
			break
		}
	}

	call := func(name string, args any, cursor string) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if cursor != "" {
			p.Meta = mcp.Meta{tool.MetaCursor: cursor}
		}
		res, err := session.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: error result %+v", name, res.Content)
		}
		return res
	}
	res := call("symbols", map[string]any{"path": "shapes/shapes.go"}, "")
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.HasPrefix(text, "interface Shape 5:6 (1 member)\n") {
		t.Fatalf("symbols over MCP: %q", text)
	}
	// Page through Hot's references over MCP: the cursor goes out in
	// _meta and comes back sealed.
	hot, _ := findPos(t, e.project, "many/many.go", "func Hot", 1)
	args := map[string]any{"path": "many/many.go", "line": hot, "name": "Hot", "detail_level": "full", "limit": 100}
	res = call("references", args, "")
	next, _ := res.Meta[tool.MetaNextCursor].(string)
	if next == "" {
		t.Fatalf("first page has no %s: %+v", tool.MetaNextCursor, res.Meta)
	}
	res = call("references", args, next)
	var last referencesOut
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &last)
	if len(last.References) != hotUses+moreUses-100 || res.Meta[tool.MetaNextCursor] != nil {
		t.Fatalf("second page: %d references, meta %+v", len(last.References), res.Meta)
	}

	servers := goplsUnder(t, wardenPID)
	if len(servers) != 1 {
		t.Fatalf("want one gopls under warden %d, got %+v", wardenPID, servers)
	}
	group := servers[0].pgrp
	if group != servers[0].pid {
		t.Fatalf("gopls %d is not the leader of its process group (%d)", servers[0].pid, group)
	}
	// gopls runs `go list` and friends in its group: record the whole tree.
	tree := descendants(t, wardenPID)

	if err := session.Close(); err != nil {
		t.Logf("close: %v", err) // the exit status of a process closed by the transport
	}
	if cmd.ProcessState == nil {
		t.Fatal("warden still running after the session closed")
	}
	if !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
		t.Fatalf("warden did not exit cleanly when stdin closed: %v", cmd.ProcessState)
	}
	waitGone(t, group)
	waitDead(t, tree)
	t.Logf("warden %d started %d processes (%d gopls); none is left", wardenPID, len(tree), len(servers))
}
