package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/pgtest"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// restart starts w's app anew on its config with extra (YAML lines at the
// top level of config.yaml, read at start: approvals.backend), keeping its
// grants and gates lines.
func (w *escapeWorld) restart(t *testing.T, extra string) {
	t.Helper()
	w.app, w.cfgPath = startApp(t, w.project, w.config("")+extra, w.logs)
	if errs := w.app.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatal(errs)
	}
}

// mcpClient connects a real go-sdk client to w's app over an in-memory
// transport. It declares no elicitation: it cannot show a question.
func (w *escapeWorld) mcpClient(t *testing.T) *mcp.ClientSession {
	t.Helper()
	s := mcpserver.New(w.app, w.app.ServerOptions(mcpserver.Options{Logger: discardLogger()}))
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "no-elicitation", Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
		s.Close()
	})
	return cs
}

// callResult is a tools/call running in the background.
type callResult struct {
	res *mcp.CallToolResult
	err error
	end chan struct{}
}

func callMCP(cs *mcp.ClientSession, args any) *callResult {
	c := &callResult{end: make(chan struct{})}
	go func() {
		defer close(c.end)
		c.res, c.err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hostcalls", Arguments: args})
	}()
	return c
}

func (c *callResult) text(t *testing.T) string {
	t.Helper()
	<-c.end
	if c.err != nil {
		t.Fatal(c.err)
	}
	var b strings.Builder
	for _, ct := range c.res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// waitQuestions waits, on the broker's change notifications (no timer),
// until b lists n questions, and returns them. Each wake re-reads the
// list, so a notification coalesced with another loses nothing. ended,
// when given, closes when the call that asks ends: ending before its
// question is listed (refused, or a busy database's timeout) fails the
// test at once, where the wait would never end.
func waitQuestions(t *testing.T, b approvals.Broker, changes <-chan struct{}, n int, ended ...<-chan struct{}) []approvals.Request {
	t.Helper()
	var callEnded <-chan struct{}
	if len(ended) > 0 {
		callEnded = ended[0]
	}
	for {
		p, err := b.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(p) == n {
			return p
		}
		select {
		case <-changes:
		case <-callEnded:
			t.Fatalf("waiting for %d questions (%d listed), the call that asks ended first", n, len(p))
		}
	}
}

// bgCall is a call run in a goroutine, whose outcome the test's own
// goroutine reads: ended closes once it is over, answered or failed (for
// waitQuestions, which then fails at once instead of waiting for a
// question that will never come). The goroutine never touches t: a
// t.Fatal there would end it before ended closes, and the test would hang.
type bgCall[T any] struct {
	ended chan struct{}
	val   T
	err   error
}

// inBackground runs f in a goroutine.
func inBackground[T any](f func() (T, error)) *bgCall[T] {
	c := &bgCall[T]{ended: make(chan struct{})}
	go func() {
		defer close(c.ended)
		c.val, c.err = f()
	}()
	return c
}

// result waits for the call to end and returns its outcome; a call that
// failed fails the test.
func (c *bgCall[T]) result(t *testing.T) T {
	t.Helper()
	<-c.ended
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.val
}

// gateCallInBackground is tryGateCall(w, ctx, nil) in a goroutine.
func gateCallInBackground(w *escapeWorld, ctx context.Context) *bgCall[*tool.Result] {
	return inBackground(func() (*tool.Result, error) { return tryGateCall(w, ctx, nil) })
}

// fsInBackground is tryCallWith(w, c, readDocs) in a goroutine, for the fs
// read's outcome.
func fsInBackground(w *escapeWorld, c tool.Client) *bgCall[outcome] {
	return inBackground(func() (outcome, error) {
		_, fs, err := tryCallWith(w, c, readDocs)
		return fs, err
	})
}

// confirmGate asks before each call of hostcalls, which is granted what
// it reads (so that no permission prompt joins the gate's question).
const confirmGate = "    hostcalls: {fs: {read: [.]}, env: [HOME]}\n  gates:\n    hostcalls: {action: confirm}"

// TestConsoleConfirmsGate: a confirm gate called by a client without
// elicitation, with a console serving, waits in the broker with
// everything a person needs to decide; approved, the call runs and answers
// with the tool's result; denied, or left unanswered past client_wait, it
// is refused with today's text and what happened.
func TestConsoleConfirmsGate(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	w.setGrants(t, confirmGate)
	cs := w.mcpClient(t)
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	wasm, _ := os.ReadFile(w.root + "/tools/hostcalls.wasm")

	args := map[string]any{"fs": readDocs}
	c := callMCP(cs, args)
	r := waitQuestions(t, b, changes, 1)[0]
	raw, _ := json.Marshal(args)
	if r.Kind != approvals.Gate || r.Tool != "hostcalls" || r.Module != "hostcalls" || r.Digest != sha(wasm) ||
		r.Arguments != string(raw) || r.Principal != "local" || r.Grant != "" || r.Approvers != nil ||
		r.Deadline.Sub(r.Created) != w.app.Policy().ClientWait() ||
		!strings.Contains(r.Question, "warden: run tool hostcalls (module hostcalls, sha256 "+sha(wasm)[:12]+")?") ||
		!strings.Contains(r.Question, "Arguments: "+string(raw)) {
		t.Fatalf("the question: %+v", r)
	}
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	if out := c.text(t); c.res.IsError || !strings.Contains(out, "docs-marker") {
		t.Fatalf("approved: %s", out)
	}

	c = callMCP(cs, args)
	r = waitQuestions(t, b, changes, 1)[0]
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: false, By: "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	want := "tool hostcalls runs only after a person confirms it (tools.gates.hostcalls), and this client cannot ask (it declared no elicitation capability); " +
		"denied in the console by bob; nothing ran; to let it run without asking, set tools.gates.hostcalls.action: allow in " + w.cfgPath
	if out := c.text(t); !c.res.IsError || !strings.Contains(out, want) {
		t.Fatalf("denied: %s\nwant %s", out, want)
	}
	waitQuestions(t, b, changes, 0)

	// client_wait already over as the question is asked: it expires, on
	// the broker's own deadline, with no timer in the test.
	w.setGrants(t, confirmGate+"\n  defaults:\n    client_wait: 1ns")
	res := gateCall(t, w, nil)
	if !res.IsError || res.Error.Kind != tool.KindTimeout || ran(res) || res.Meta[tool.MetaGate] != "timeout" ||
		!strings.Contains(res.Error.Message, "; nobody answered in the console within 1ns (tools.defaults.client_wait); nothing ran; to let it run without asking, set tools.gates.hostcalls.action: allow") {
		t.Fatalf("expired: %+v %v", res.Error, res.Meta)
	}
}

// TestConsoleRouting: approvals.via decides whether a question the client
// cannot show goes to the console: auto when one serves this process,
// console always, elicitation never; a client that can elicit is asked
// through elicitation, never the console, and its 2026-07-28
// input-required flow is unchanged.
func TestConsoleRouting(t *testing.T) {
	w := newEscapeWorld(t)
	b := w.app.Approvals()
	noConsole := "tool hostcalls runs only after a person confirms it (tools.gates.hostcalls), and this client cannot ask (it declared no elicitation capability); to let it run without asking, set tools.gates.hostcalls.action: allow in " + w.cfgPath
	for _, via := range []string{"", "\napprovals:\n  via: elicitation"} {
		w.setGrants(t, confirmGate+via)
		if res := gateCall(t, w, &person{elicit: false}); !res.IsError || res.Error.Kind != tool.KindDenied || res.Error.Message != noConsole {
			t.Fatalf("via %q, no console: %+v", via, res.Error)
		}
	}
	w.app.ConsoleServes()
	if res := gateCall(t, w, &person{elicit: false}); !res.IsError || res.Error.Message != noConsole {
		t.Fatalf("via elicitation with a console: %+v", res.Error)
	}
	changes, cancel := b.Subscribe()
	defer cancel()
	for _, via := range []string{"", "\napprovals:\n  via: console"} {
		w.setGrants(t, confirmGate+via)
		end := inBackground(func() (*tool.Result, error) { return tryGateCall(w, nil, &person{elicit: false}) })
		r := waitQuestions(t, b, changes, 1, end.ended)[0]
		b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob"}, nil)
		if res := end.result(t); res.IsError || !ran(res) {
			t.Fatalf("via %q: %+v", via, res.Error)
		}
	}
	// An eliciting client: asked through elicitation, nothing in the console.
	p := &person{elicit: true, answers: []string{"accept"}}
	if res := gateCall(t, w, p); res.IsError || !ran(res) || len(p.questions()) != 1 {
		t.Fatalf("eliciting client: %+v", res.Error)
	}
	if res := gateCall(t, w, &person{elicit: true, mrtrOnce: true}); !tool.IsInputRequired(res.Error) {
		t.Fatalf("input required: %+v", res.Error)
	}
	if q, _ := b.Pending(context.Background()); len(q) != 0 {
		t.Fatalf("an eliciting client's question reached the console: %+v", q)
	}
}

// TestConsolePermissionPersist: a permission prompt of a client without
// elicitation waits in the console with exactly the config.yaml diff an
// approval writes; approved with Persist, the grant is written (comments
// kept) through the path "allow always" takes, and the read succeeds.
func TestConsolePermissionPersist(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	src, _ := os.ReadFile(w.cfgPath)
	os.WriteFile(w.cfgPath, append([]byte("# keep this comment\n"), src...), 0o644)
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	end := fsInBackground(w, &person{elicit: false})
	r := waitQuestions(t, b, changes, 1, end.ended)[0]
	if r.Kind != approvals.Permission || r.Tool != "hostcalls" || r.Module != "hostcalls" || len(r.Digest) != 64 ||
		!strings.Contains(r.Question, "asks for fs.read docs/readme.md") || !strings.Contains(r.Arguments, `"path":"docs/readme.md"`) ||
		!strings.Contains(r.Grant, "\n+        read: [docs/readme.md]\n") {
		t.Fatalf("the question: %+v\ndiff:\n%s", r, r.Grant)
	}
	before, _ := os.ReadFile(w.cfgPath)
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob", Persist: true}, nil); err != nil {
		t.Fatal(err)
	}
	if fs := end.result(t); fs.Error != nil || !strings.Contains(string(fs.Result), "docs-marker") {
		t.Fatalf("after approval: %+v", fs)
	}
	// What was written is exactly the diff the person was shown.
	got, _ := os.ReadFile(w.cfgPath)
	if !strings.HasPrefix(string(got), "# keep this comment\n") || config.Diff("config.yaml", before, got) != r.Grant {
		t.Fatalf("config.yaml:\n%s\nshown:\n%s", got, r.Grant)
	}
	if g, _ := w.app.Config().Grants("hostcalls", "hostcalls"); len(g.FS.Read) != 1 || g.FS.Read[0] != "docs/readme.md" {
		t.Fatalf("grant in force: %+v", g.FS)
	}

	// Denied: the read is refused saying by whom, and nothing is written.
	w.setGrants(t, "")
	before, _ = os.ReadFile(w.cfgPath)
	end = fsInBackground(w, &person{elicit: false})
	r = waitQuestions(t, b, changes, 1, end.ended)[0]
	b.Decide(context.Background(), r.ID, approvals.Decision{Approved: false, By: "carol", Persist: true}, nil)
	if fs := end.result(t); fs.Error == nil || fs.Error.Kind != tool.KindDenied || !strings.Contains(fs.Error.Message, "(denied in the console by carol)") {
		t.Fatalf("denied: %+v", fs)
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != string(before) {
		t.Fatalf("config.yaml changed on a denial:\n%s", after)
	}
}

// TestConsoleBounded: with approvals.max_pending questions waiting, the
// next call is refused at once, naming the limit.
func TestConsoleBounded(t *testing.T) {
	testConsoleBound(t, "approvals:\n  max_pending: 1\n",
		"; the console has too many questions waiting (approvals.max_pending: 1); nothing ran")
}

// TestConsoleBoundedPerCaller: with approvals.max_pending_per_caller
// questions of one caller waiting, its next call is refused at once,
// naming that key, though max_pending has room.
func TestConsoleBoundedPerCaller(t *testing.T) {
	testConsoleBound(t, "approvals:\n  max_pending_per_caller: 1\n",
		"; the caller has too many questions waiting in the console (approvals.max_pending_per_caller: 1); nothing ran")
}

// testConsoleBound runs a gated call that waits in the console under
// config, then a second one, which must be refused at once with want in
// its message; the first still runs once approved.
func testConsoleBound(t *testing.T, config, want string) {
	t.Helper()
	w := newEscapeWorld(t)
	w.restart(t, config)
	w.app.ConsoleServes()
	w.setGrants(t, confirmGate)
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	end := gateCallInBackground(w, nil)
	r := waitQuestions(t, b, changes, 1, end.ended)[0]
	res := gateCall(t, w, nil)
	if !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) || !strings.Contains(res.Error.Message, want) {
		t.Fatalf("the second question: %+v", res.Error)
	}
	b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob"}, nil)
	if res := end.result(t); res.IsError {
		t.Fatalf("the first: %+v", res.Error)
	}
}

// TestConsoleArgumentsBounded (attacker: the agent writes the arguments):
// terminal escapes are escaped and a huge argument is cut to the bound,
// saying how long it was, in the question's fields as in its text.
func TestConsoleArgumentsBounded(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	w.setGrants(t, confirmGate)
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	huge := "\x1b]0;approved\x07\x1b[2J" + strings.Repeat("A", 1<<20)
	args, _ := json.Marshal(map[string]any{"env": map[string]any{"op": "get", "key": "VISIBLE"}, "note": huge})
	end := inBackground(func() (*tool.Result, error) {
		return w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}})
	})
	r := waitQuestions(t, b, changes, 1, end.ended)[0]
	for field, v := range map[string]string{"arguments": r.Arguments, "question": r.Question} {
		if strings.ContainsAny(v, "\x1b\x07") || strings.Count(v, "A") > maxShownArguments {
			t.Fatalf("%s not sanitized or bounded (%d bytes)", field, len(v))
		}
	}
	if len(r.Arguments) > maxShownArguments || !strings.HasSuffix(r.Arguments, "more bytes)") {
		t.Fatalf("arguments do not say they were cut: %q", r.Arguments[len(r.Arguments)-40:])
	}
	b.Decide(context.Background(), r.ID, approvals.Decision{By: "bob"}, nil)
	end.result(t)
}

// TestConsoleNotReachableFromMCP (attacker: the client, or the tool it
// calls): nothing served over MCP lists or answers a waiting question; a
// call carrying the question's id is a new question, not an answer; and
// the tool's own capabilities cannot reach the broker.
func TestConsoleNotReachableFromMCP(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	w.setGrants(t, confirmGate)
	cs := w.mcpClient(t)
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	first := callMCP(cs, map[string]any{})
	r := waitQuestions(t, b, changes, 1)[0]
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name != "hostcalls" && tl.Name != "other" {
			t.Fatalf("MCP serves a tool %q", tl.Name)
		}
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{"id": r.ID}}); err == nil && !res.IsError {
		t.Fatal("a tool named approve answered")
	}
	// From another session: hostcalls runs a session's calls one at a time.
	second := callMCP(w.mcpClient(t), map[string]any{"env": map[string]any{"op": "get", "key": "approve " + r.ID, "decision": map[string]any{"approved": true, "by": "bob"}}})
	p := waitQuestions(t, b, changes, 2)
	if p[0].ID != r.ID && p[1].ID != r.ID {
		t.Fatalf("the first question is gone: %+v", p)
	}
	for _, q := range p {
		b.Decide(context.Background(), q.ID, approvals.Decision{By: "bob"}, nil)
	}
	for _, c := range []*callResult{first, second} {
		if out := c.text(t); !c.res.IsError || !strings.Contains(out, "denied in the console by bob") {
			t.Fatalf("a call ran that nobody approved: %s", out)
		}
	}
}

// TestConsoleAudit: each question put to the console is an approval line
// when asked and one when it ends (approved, denied, expired), with the
// tool, the caller and who decided; warden_approvals_pending counts the
// questions waiting, warden_approvals_total how they ended.
func TestConsoleAudit(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	w.setGrants(t, confirmGate)
	path, metrics, closeAudit := auditTo(t, w)
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	scrape := func() map[string]float64 {
		families, err := metrics.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, f := range families {
			for _, m := range f.Metric {
				name := f.GetName()
				for _, l := range m.Label {
					name += "/" + l.GetValue()
				}
				if m.Gauge != nil {
					out[name] = m.Gauge.GetValue()
				} else if m.Counter != nil {
					out[name] = m.Counter.GetValue()
				}
			}
		}
		return out
	}
	for _, d := range []approvals.Decision{{Approved: true, By: "bob"}, {By: "carol"}} {
		end := gateCallInBackground(w, nil)
		r := waitQuestions(t, b, changes, 1, end.ended)[0]
		if m := scrape(); m["warden_approvals_pending"] != 1 {
			t.Fatalf("pending while asked: %v", m["warden_approvals_pending"])
		}
		b.Decide(context.Background(), r.ID, d, nil)
		end.result(t)
	}
	w.setGrants(t, confirmGate+"\n  defaults:\n    client_wait: 1ns")
	gateCall(t, w, nil)
	m := scrape()
	closeAudit()
	for series, want := range map[string]float64{"warden_approvals_pending": 0, "warden_approvals_total/asked": 3,
		"warden_approvals_total/approved": 1, "warden_approvals_total/denied": 1, "warden_approvals_total/expired": 1} {
		if m[series] != want {
			t.Errorf("%s = %v, want %v", series, m[series], want)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	dec := json.NewDecoder(f)
	for dec.More() {
		var l observe.Line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		if l.Event == "approval" {
			got = append(got, strings.Join([]string{l.Who, l.Tool, l.Gate, l.Outcome, l.Decision, l.Decider}, " "))
		}
	}
	want := []string{
		"local hostcalls gate hostcalls asked allow ", "local hostcalls gate hostcalls approved allow bob",
		"local hostcalls gate hostcalls asked allow ", "local hostcalls gate hostcalls denied deny carol",
		"local hostcalls gate hostcalls asked allow ", "local hostcalls gate hostcalls expired deny ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("approval lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConsoleReplicas: two replicas whose memory.backend is one PostgreSQL
// database share its questions (approvals follow memory.backend): a gate
// question of a call on A, listed on B, approved there, lets A's call run.
// A tool's memory on that same database neither lists the question nor
// answers it by writing. With the database unreachable, A's call is
// refused naming it (fails closed); with on_backend_error: local, the
// question waits in A's own console instead.
func TestConsoleReplicas(t *testing.T) {
	url := pg.DB(t)
	px := pgtest.NewProxy(t, url)
	a, b := newEscapeWorld(t), newEscapeWorld(t)
	const memoryGrant = "    hostcalls: {fs: {read: [.]}, env: [HOME], memory: read-write}"
	a.restart(t, "memory:\n  backend: "+px.URL+"\n")
	b.restart(t, "memory:\n  backend: "+url+"\n")
	b.app.ConsoleServes()
	a.setGrants(t, confirmGate+"\napprovals:\n  via: console\nmemory:\n  backend: "+px.URL)
	console := b.app.Approvals()
	changes, cancel := console.Subscribe()
	defer cancel()

	end := gateCallInBackground(a, nil)
	r := waitQuestions(t, console, changes, 1, end.ended)[0]
	if r.Tool != "hostcalls" || r.Kind != approvals.Gate || len(r.Digest) != 64 {
		t.Fatalf("listed on B: %+v", r)
	}
	// The tool, on B, with memory on the same database: it lists no
	// question, and writing one's id with an approval answers nothing.
	b.setGrants(t, memoryGrant)
	args, _ := json.Marshal(map[string]any{"memory": map[string]any{"op": "list"}})
	if res := call(t, b.app, "hostcalls", string(args)); res.IsError || strings.Contains(string(res.StructuredContent), r.ID) {
		t.Fatalf("the tool's memory list: %+v %s", res.Error, res.StructuredContent)
	}
	args, _ = json.Marshal(map[string]any{"memory": map[string]any{"op": "set", "topic": r.ID, "value": `{"approved":true,"by":"tool"}`}})
	call(t, b.app, "hostcalls", string(args))
	if p := waitQuestions(t, console, changes, 1); p[0].ID != r.ID {
		t.Fatalf("pending after the tool wrote: %+v", p)
	}
	if err := console.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob"}, nil); err != nil {
		t.Fatal(err)
	}
	if res := end.result(t); res.IsError || !ran(res) {
		t.Fatalf("approved on B, A's call: %+v", res.Error)
	}

	// The database unreachable from A: refused, naming it; nothing ran.
	px.Stop()
	res := gateCall(t, a, nil)
	db := strings.Split(strings.Split(px.URL, "@")[1], "?")[0] // 127.0.0.1:port/db, no password in it
	if !res.IsError || ran(res) || !strings.Contains(res.Error.Message,
		"; the question could not wait in the console: approvals backend unavailable: postgres://postgres@"+db+": ") ||
		!strings.Contains(res.Error.Message, "(approvals.on_backend_error: refuse); nothing ran") {
		t.Fatalf("database unreachable: %+v", res.Error)
	}
	// on_backend_error: local: the question waits on A, in A's console.
	a.setGrants(t, confirmGate+"\napprovals:\n  via: console\n  on_backend_error: local\nmemory:\n  backend: "+px.URL)
	local := a.app.Approvals()
	lchanges, lcancel := local.Subscribe()
	defer lcancel()
	end = gateCallInBackground(a, nil)
	for {
		p, _ := local.Pending(context.Background()) // the shared half fails: the local half is listed
		if len(p) == 1 {
			r = p[0]
			break
		}
		select {
		case <-lchanges:
		case <-end.ended:
			t.Fatalf("the call ended before its question was listed locally: %+v", end.result(t).Error)
		}
	}
	local.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob"}, nil)
	if res := end.result(t); res.IsError || !ran(res) {
		t.Fatalf("local fallback: %+v", res.Error)
	}
}

// TestConsolePermissionAuditApplied: the audit records what was applied,
// with who decided: "Always" that wrote the grant is an approval "approved
// always" and a prompt "always"; "Always" whose grant could not be written
// (the entry rebound to another module while the question waited) is
// "approved" and "once", saying why. The log of a written grant names its
// approver.
func TestConsolePermissionAuditApplied(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	path, _, closeAudit := auditTo(t, w)
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	decide := func(by string, before func()) {
		end := fsInBackground(w, &person{elicit: false})
		r := waitQuestions(t, b, changes, 1, end.ended)[0]
		before()
		if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: by, Persist: true}, nil); err != nil {
			t.Fatal(err)
		}
		if fs := end.result(t); fs.Error != nil {
			t.Fatalf("approved by %s: %+v", by, fs)
		}
	}
	decide("bob", func() {})
	if !strings.Contains(w.logs.String(), `msg="permission prompt: grant written" tool=hostcalls module=hostcalls grant="fs.read=docs/readme.md" config=`+w.cfgPath+" by=bob") {
		t.Errorf("the log of the grant written:\n%s", w.logs.String())
	}
	w.setGrants(t, "")
	decide("carol", func() {
		os.WriteFile(w.cfgPath, []byte(w.config("    hostcalls: {module: elsewhere}")), 0o644) // no reload: the edit finds it
	})
	closeAudit()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []string
	for dec := json.NewDecoder(f); dec.More(); {
		var l observe.Line
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		if l.Event == "approval" || l.Event == "prompt" {
			got = append(got, strings.Join([]string{l.Event, l.Gate, l.Outcome, l.Decider, l.Reason}, " | "))
		}
	}
	want := []string{
		"approval | permission hostcalls | asked |  | ",
		"prompt | fs.read=docs/readme.md | always | bob | ",
		"approval | permission hostcalls | approved always | bob | ",
		"approval | permission hostcalls | asked |  | ",
		"prompt | fs.read=docs/readme.md | once | carol | the grant was not written: config " + w.cfgPath +
			": tools.grants.hostcalls belongs to module elsewhere, not to module hostcalls serving the tool",
		"approval | permission hostcalls | approved | carol | ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConsolePersistRefusedWhenModuleChanged: a module loaded under the
// same name with another digest while the question waited does not get
// the grant the person approved "always" for the module shown: nothing is
// written, the call (served by the module shown) is allowed once, and the
// result says why.
func TestConsolePersistRefusedWhenModuleChanged(t *testing.T) {
	w := newEscapeWorld(t)
	w.app.ConsoleServes()
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	end := inBackground(func() (*tool.Result, error) {
		res, _, err := tryCallWith(w, &person{elicit: false}, readDocs)
		return res, err
	})
	r := waitQuestions(t, b, changes, 1, end.ended)[0]
	// Another build under the same name: one custom section more.
	wasmPath := filepath.Join(w.root, "tools", "hostcalls.wasm")
	wasm, err := os.ReadFile(wasmPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wasmPath, append(wasm, 0x00, 9, 1, 'x', 'c', 'h', 'a', 'n', 'g', 'e', 'd'), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := w.app.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatal(errs)
	}
	now := w.app.moduleSHA256("hostcalls")
	if now == r.Digest || len(now) != 64 {
		t.Fatalf("the module's digest did not change: %s", now)
	}
	before, _ := os.ReadFile(w.cfgPath)
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: "bob", Persist: true}, nil); err != nil {
		t.Fatal(err)
	}
	res := end.result(t)
	want := "module hostcalls changed while the question waited (sha256 " + r.Digest[:12] + ", now " + now[:12] +
		"): the grant would go to a module nobody was shown; it applied to this call only"
	if notices, _ := res.Meta[tool.MetaNotices].([]string); len(notices) != 1 || !strings.HasSuffix(notices[0], want) {
		t.Fatalf("notices %q, want one ending %q", notices, want)
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != string(before) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
}
