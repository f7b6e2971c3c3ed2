package app

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/mcpserver"
)

// auditRun is what a test pins down of an audit line of a request into
// module code: its event, the request's method, the tool it ran as, what
// it named, and its outcome.
type auditRun struct {
	Event, Method, Tool, Module, Target, Decision, Kind string
}

// TestFeatureRunsAreAudited: every run of module code is in the audit log
// and the traces as a tools/call is, whichever door it came through: a
// resource read, a prompt get and a completion each leave one line with
// its method, what it named, the tool it ran as, its module, its outcome
// and its duration, and the capability uses and gate decisions made for it
// carry the same request. A refused feature request is recorded as a
// refused call is.
func TestFeatureRunsAreAudited(t *testing.T) {
	w := newDoorWorld(t)
	spans, tracing, audit, auditPath := observeSinks(t, 64)
	w.app.SetRecorder(observe.New(observe.Options{Audit: audit, Tracing: tracing}))
	ctx := context.Background()
	cs := w.connect(t, "")

	target := func(r doorRequest, subject string) string {
		return map[string]string{
			"call": "", "resource": "doors://" + subject + "/resource", "template": "doors://" + subject + "/item/7",
			"prompt": subject + "_prompt",
		}[r.shape]
	}
	var want []auditRun
	for _, r := range doorRequests {
		if err := r.do(ctx, cs, "open"); err != nil {
			t.Fatalf("%s %s as open: %v", r.method, r.shape, err)
		}
		tg := target(r, "open")
		if r.method == mcpserver.MethodComplete && r.shape == "template" {
			tg = "doors://open/item/{id}"
		}
		want = append(want,
			auditRun{Event: "fs", Method: r.method, Tool: "open", Module: "doors", Target: tg, Decision: "allow"},
			auditRun{Event: "call", Method: r.method, Tool: "open", Module: "doors", Target: tg, Decision: "allow", Kind: "ok"})
	}
	// A gate refuses a feature as it refuses a call: the gate's line, then
	// the request's, denied.
	r := doorRequests[slices.IndexFunc(doorRequests, func(r doorRequest) bool { return r.method == mcpserver.MethodReadResource })]
	if err := r.do(ctx, cs, "blocked"); err == nil {
		t.Fatal("a read as the blocked tool was served")
	}
	tg := target(r, "blocked")
	want = append(want,
		auditRun{Event: "gate", Method: r.method, Tool: "blocked", Module: "doors", Target: tg, Decision: "deny"},
		auditRun{Event: "call", Method: r.method, Tool: "blocked", Module: "doors", Target: tg, Decision: "deny", Kind: "denied"})
	// A feature that runs as no tool: its run and its refused write are
	// recorded under its module, with no tool.
	if _, err := w.connect(t, "").ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://nobody"}); err != nil {
		t.Fatal(err)
	}
	want = append(want,
		auditRun{Event: "fs", Method: mcpserver.MethodReadResource, Module: "doors", Target: "doors://nobody", Decision: "deny"},
		auditRun{Event: "call", Method: mcpserver.MethodReadResource, Module: "doors", Target: "doors://nobody", Decision: "allow", Kind: "ok"})

	if err := audit.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []auditRun
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l observe.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Who != "alice" || l.Via != "oauth" || l.Session == "" {
			t.Errorf("a line not attributed to the client: %s", sc.Text())
		}
		if l.Event == "call" && (l.DurationMs == nil || l.Fuel == nil) {
			t.Errorf("a run without its duration: %s", sc.Text())
		}
		got = append(got, auditRun{Event: l.Event, Method: l.Method, Tool: l.Tool, Module: l.Module, Target: l.Target, Decision: l.Decision, Kind: l.Kind})
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}

	// The traces: one server span per run, a feature's named by its method
	// and carrying what it named.
	var names []string
	for len(spans) > 0 {
		for _, rs := range (<-spans).ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					if sp.Kind == 2 { // SPAN_KIND_SERVER
						names = append(names, sp.Name)
					}
				}
			}
		}
	}
	for _, name := range []string{"warden.call open", "warden.resources/read open", "warden.prompts/get open",
		"warden.completion/complete open", "warden.resources/read blocked", "warden.resources/read "} {
		if !slices.Contains(names, name) {
			t.Errorf("no span %q among %q", name, names)
		}
	}
}
