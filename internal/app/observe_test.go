package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/mcpserver"
)

// auditFields are the fields of an audit line a test pins down (time and
// duration vary).
type auditFields struct {
	Who, Via, Session, Tool, Module, Event, Capability, Op, Path, Mode, Host, Topic, Key, Gate, Outcome, Decision, Kind string
	Denied                                                                                                              bool
}

func readAudit(t *testing.T, path string) []auditFields {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditFields
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l observe.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Decision == "deny" && l.Reason == "" {
			t.Errorf("a deny without a reason: %s", sc.Text())
		}
		if l.Event == "call" && (l.Fuel == nil || l.DurationMs == nil) {
			t.Errorf("a call line without fuel or duration: %s", sc.Text())
		}
		if l.Arguments != nil {
			t.Errorf("arguments recorded without log.audit_arguments: %s", sc.Text())
		}
		out = append(out, auditFields{Who: l.Who, Via: l.Via, Session: l.Session, Tool: l.Tool, Module: l.Module, Event: l.Event,
			Capability: l.Capability, Op: l.Op, Path: l.Path, Mode: l.Mode, Host: l.Host, Topic: l.Topic, Key: l.Key, Gate: l.Gate,
			Outcome: l.Outcome, Decision: l.Decision, Kind: l.Kind})
	}
	return out
}

// observeSinks starts what a recorder writes to in these tests: an
// OTLP/HTTP collector (the real exporter posts protobuf to it; each export
// arrives on spans, which holds capacity), a synchronous tracing exporter
// to it, and an audit log at auditPath. The collector stops when the test
// ends.
func observeSinks(t *testing.T, capacity int) (spans chan *collectortrace.ExportTraceServiceRequest, tracing *observe.Tracing, audit *observe.Audit, auditPath string) {
	t.Helper()
	spans = make(chan *collectortrace.ExportTraceServiceRequest, capacity)
	collector := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		spans <- &req
		rw.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		rw.Write(b)
	}))
	t.Cleanup(collector.Close)
	tracing, err := observe.NewTracing(context.Background(), observe.TracingOptions{Endpoint: collector.URL, SampleRatio: 1, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	auditPath = filepath.Join(t.TempDir(), "audit.log")
	if audit, err = observe.OpenAudit(observe.AuditOptions{Path: auditPath}); err != nil {
		t.Fatal(err)
	}
	return spans, tracing, audit, auditPath
}

// Real tool calls through the capabilities: every allowed and every
// denied request is one audit line with its detail, a gate's refusal is
// one line, and the metrics and the trace agree.
func TestObserveCapabilities(t *testing.T) {
	w := newEscapeWorld(t)
	const grants = "    hostcalls: {fs: {read: [src]}, env: [VISIBLE], memory: read}"
	w.setGrants(t, grants)

	// The collector: the real OTLP/HTTP exporter posts protobuf here.
	spans, tracing, audit, auditPath := observeSinks(t, 16)
	src := w.app.ObserveSources()
	src.AuditDropped = audit.Dropped
	metrics := observe.NewMetrics(src)
	w.app.SetRecorder(observe.New(observe.Options{Audit: audit, Metrics: metrics, Tracing: tracing}))

	ctx := principal.With(context.Background(), principal.Principal{Subject: "alice", Via: principal.ViaOAuth})
	callAs := func(args string) {
		t.Helper()
		res, err := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(args), Session: "s1", Observer: nopObserver{}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	callAs(`{"fs":{"op":"read","path":"src/main.go"},"env":{"op":"get","key":"VISIBLE"},"memory":{"op":"get","topic":"notes"}}`)
	callAs(`{"fs":{"op":"write","path":"src/x","content":"SECRET-CONTENT"},"env":{"op":"get","key":"SECRET"},` +
		`"memory":{"op":"set","topic":"notes","value":"v"},"net":{"op":"request","method":"GET","url":"https://example.com/x"}}`)
	// An unknown tool: audited, but no metric series.
	if _, err := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "no-such-tool", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}}); err == nil {
		t.Fatal("an unknown tool was called")
	}
	// A gate refuses the call: one gate line, then the call's.
	w.setGrants(t, grants+"\n  gates:\n    hostcalls: {action: block}")
	if res, _ := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{}`), Session: "s1", Observer: nopObserver{}}); !res.IsError {
		t.Fatal("the blocked tool ran")
	}

	// Metrics over real HTTP.
	ms := httptest.NewServer(metrics.Handler())
	defer ms.Close()
	resp, err := http.Get(ms.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`warden_calls_total{kind="ok",tool="hostcalls"} 2`,
		`warden_call_duration_seconds_count{tool="hostcalls"} 3`,
		`warden_call_fuel_count{tool="hostcalls"} 3`,
		`warden_denials_total{capability="env"} 1`,
		`warden_denials_total{capability="fs"} 1`,
		`warden_denials_total{capability="memory"} 1`,
		`warden_denials_total{capability="net"} 1`,
		`warden_denials_total{capability="gate"} 1`,
		`warden_calls_total{kind="denied",tool="hostcalls"} 1`,
		`warden_audit_dropped_total 0`,
		`warden_compile_cache_total{result="hit"}`,
		`warden_tier_calls_total{tier="interpreter"}`,
		`warden_tier_calls_total{tier="compiler"}`,
		`warden_tier_compiles_total{result="failed"} 0`,
		`warden_instance_memory_bytes{state="limit"}`,
		`warden_instance_memory_bytes{state="peak"}`,
	} {
		if !strings.Contains(text, want+"\n") && !strings.Contains(text, want+" ") {
			t.Errorf("metrics lack %s", want)
		}
	}
	// How many instances a module keeps after three calls is the pool's
	// business (one made at load may still be held while the first call
	// made another): the gauge must show the module, with 1 or 2.
	if live := grepLines(text, `warden_instances_live{module="hostcalls"} `); len(live) != 1 ||
		(!strings.HasSuffix(live[0], " 1") && !strings.HasSuffix(live[0], " 2")) {
		t.Errorf("warden_instances_live for hostcalls: %q", live)
	}
	if strings.Contains(text, "no-such-tool") {
		t.Errorf("an unknown tool name made a series")
	}

	if err := audit.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAudit(t, auditPath)
	who := auditFields{Who: "alice", Via: "oauth", Session: "s1", Tool: "hostcalls", Module: "hostcalls"}
	line := func(f auditFields) auditFields {
		f.Who, f.Via, f.Session, f.Tool, f.Module = who.Who, who.Via, who.Session, who.Tool, who.Module
		return f
	}
	want := []auditFields{
		line(auditFields{Event: "fs", Capability: "fs", Op: "read", Path: "src/main.go", Mode: "read", Decision: "allow"}),
		line(auditFields{Event: "env", Capability: "env", Op: "get", Key: "VISIBLE", Decision: "allow"}),
		line(auditFields{Event: "memory", Capability: "memory", Op: "get", Topic: "notes", Decision: "allow"}),
		line(auditFields{Event: "call", Decision: "allow", Kind: "ok"}),
		line(auditFields{Event: "fs", Capability: "fs", Op: "write", Path: "src/x", Mode: "write", Decision: "deny"}),
		line(auditFields{Event: "env", Capability: "env", Op: "get", Key: "SECRET", Decision: "deny"}),
		line(auditFields{Event: "memory", Capability: "memory", Op: "set", Topic: "notes", Decision: "deny"}),
		line(auditFields{Event: "net", Capability: "net", Op: "request", Host: "example.com", Decision: "deny"}),
		line(auditFields{Event: "call", Decision: "allow", Kind: "ok"}),
		{Who: "alice", Via: "oauth", Tool: "no-such-tool", Event: "call", Decision: "allow", Kind: "not_found"},
		line(auditFields{Event: "gate", Gate: "block", Outcome: "deny", Decision: "deny"}),
		line(auditFields{Event: "call", Decision: "deny", Kind: "denied"}),
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	raw, _ := os.ReadFile(auditPath)
	if strings.Contains(string(raw), "SECRET-CONTENT") || strings.Contains(string(raw), w.secret) {
		t.Errorf("contents reached the audit log")
	}

	// Traces: one span per call, a child per capability request.
	if err := tracing.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	type span struct{ name, parent, capability, decision, kind string }
	var all []span
	ids := map[string]string{}
	for len(spans) > 0 {
		req := <-spans
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := span{name: s.Name, parent: string(s.ParentSpanId)}
					for _, a := range s.Attributes {
						switch a.Key {
						case "warden.capability":
							sp.capability = a.Value.GetStringValue()
						case "warden.decision":
							sp.decision = a.Value.GetStringValue()
						case "warden.kind":
							sp.kind = a.Value.GetStringValue()
						}
					}
					ids[string(s.SpanId)] = s.Name
					all = append(all, sp)
				}
			}
		}
	}
	var calls, children int
	for _, s := range all {
		switch {
		case strings.HasPrefix(s.name, "warden.call "):
			calls++
		default:
			children++
			if !strings.HasPrefix(ids[s.parent], "warden.call hostcalls") || s.capability == "" || s.decision == "" {
				t.Errorf("host span %+v not a child of a call span", s)
			}
		}
	}
	if calls != 4 || children != 7 {
		t.Fatalf("%d call spans and %d host spans, want 4 and 7: %+v", calls, children, all)
	}
}

func grepLines(text, prefix string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}
