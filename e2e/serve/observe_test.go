package serve

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// withConfig appends YAML to e's config.yaml, which ends in the log
// section: lines indented by two spaces join it.
func (e *env) withConfig(t *testing.T, yaml string) {
	t.Helper()
	f, err := os.OpenFile(e.config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
}

// getMetrics GETs url with the bearer token ("" for none): the status and
// body.
func getMetrics(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// auditCalls reads the audit log's call lines: "who via tool kind" each.
func auditCalls(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l struct{ Who, Via, Tool, Event, Kind string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if l.Event == "call" {
			out = append(out, fmt.Sprintf("%s %s %s %s", l.Who, l.Via, l.Tool, l.Kind))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestServeObserveHTTP: with server.metrics, `warden serve --http` serves
// /metrics behind the same bearer token as /mcp; the audit log names the
// token's caller, and after SIGTERM holds the line of every call made.
func TestServeObserveHTTP(t *testing.T) {
	t.Parallel()
	const token = "e2e-metrics-token"
	e := newEnv(t, "sleep: {timeout: 60s}", "echo", "sleep")
	audit := filepath.Join(e.dir, "audit.log")
	spans := collector(t)
	e.withConfig(t, fmt.Sprintf("  audit: %s\nserver:\n  metrics: true\n  token: %s\n  tracing: {endpoint: %s, sample_ratio: 1}\n",
		audit, token, spans.url))
	addr := freeAddr(t)
	s := startServeAs(t, e, addr, &http.Client{Transport: bearer{token}}, "--http="+addr)
	metricsURL := "http://" + addr + "/metrics"

	if status, _ := getMetrics(t, metricsURL, ""); status != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d, want 401", status)
	}
	if status, _ := getMetrics(t, metricsURL, "wrong-"+token); status != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: %d, want 401", status)
	}
	const calls = 20
	cs := s.connect(t, "", nil, &http.Client{Transport: bearer{token}})
	for i := range calls {
		wantEcho(t, cs, fmt.Sprint("call ", i))
	}
	// A caller's W3C traceparent: the call joins the caller's trace.
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	traced := s.connect(t, "", nil, &http.Client{Transport: headers{"Authorization": "Bearer " + token,
		"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
	wantEcho(t, traced, "traced")

	status, body := getMetrics(t, metricsURL, token)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics with the token: %d\n%s", status, body)
	}
	for _, want := range []string{
		fmt.Sprintf(`warden_calls_total{kind="ok",tool="echo"} %d`, calls+1),
		fmt.Sprintf(`warden_queue_wait_seconds_count %d`, calls+1),
		`warden_instances_live{module="echo"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}

	// A call still running at SIGTERM (sleep sleeps for an hour) ends on
	// the way out, and its line too reaches the log. It holds a slot once
	// the queue-wait histogram has counted it.
	sleeping := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{}})
		sleeping <- err
	}()
	eventually(t, "the sleep call holding a slot", func() bool {
		_, body := getMetrics(t, metricsURL, token)
		return strings.Contains(body, fmt.Sprintf("warden_queue_wait_seconds_count %d\n", calls+2))
	})

	// SIGTERM right after the calls: the audit log is flushed on the way out.
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("warden serve still running 30 s after SIGTERM")
	}
	if s.err != nil {
		t.Fatalf("warden serve exited with %v after SIGTERM", s.err)
	}
	<-sleeping // the call ended, whatever the client heard
	got := auditCalls(t, audit)
	if len(got) != calls+2 {
		t.Fatalf("%d call lines in the audit log after SIGTERM, want %d: %q", len(got), calls+2, got)
	}
	for _, l := range got[:calls+1] {
		if l != "token token echo ok" {
			t.Errorf("call line %q, want %q", l, "token token echo ok")
		}
	}
	if l := got[calls+1]; l != "token token sleep cancelled" {
		t.Errorf("the call running at SIGTERM: %q, want %q", l, "token token sleep cancelled")
	}

	// The spans were sent by shutdown at the latest: one per call, and
	// only the traced one in the caller's trace, under the caller's span.
	var inTrace []string
	n := 0
	for _, sp := range spans.calls() {
		n++
		if sp.trace == traceID {
			inTrace = append(inTrace, sp.name+" parent "+sp.parent)
		}
	}
	if n != calls+2 || len(inTrace) != 1 || inTrace[0] != "warden.call echo parent "+parentID {
		t.Errorf("%d call spans (want %d); in the caller's trace: %q, want [warden.call echo parent %s]", n, calls+2, inTrace, parentID)
	}
}

// TestServeObserveStdio: server.metrics_addr serves /metrics on a listener
// of its own while warden serves stdio, and the audit log names the local
// user.
func TestServeObserveStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	audit := filepath.Join(e.dir, "audit.log")
	addr := freeAddr(t)
	e.withConfig(t, fmt.Sprintf("  audit: %s\nserver:\n  metrics_addr: %s\n", audit, addr))
	cs, _ := stdioServer(t, e, "", nil)
	wantEcho(t, cs, "over stdio")
	status, body := getMetrics(t, "http://"+addr+"/metrics", "")
	if status != http.StatusOK || !strings.Contains(body, `warden_calls_total{kind="ok",tool="echo"} 1`) {
		t.Fatalf("GET /metrics on server.metrics_addr: %d\n%s", status, body)
	}
	// Closing stdin ends the server, which flushes the audit log.
	if err := cs.Close(); err != nil {
		t.Fatalf("warden serve did not exit cleanly: %v", err)
	}
	if got := auditCalls(t, audit); len(got) != 1 || got[0] != "local local echo ok" {
		t.Fatalf("audit call lines %q, want [local local echo ok]", got)
	}
}

// headers is a RoundTripper adding fixed headers to every request.
type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// otlpCollector is a loopback OTLP/HTTP trace collector.
type otlpCollector struct {
	url   string
	mu    sync.Mutex
	spans []*tracev1.Span
}

type callSpan struct{ name, trace, parent string }

func collector(t *testing.T) *otlpCollector {
	t.Helper()
	c := &otlpCollector{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		rw.Header().Set("Content-Type", "application/x-protobuf")
		b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		rw.Write(b)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL
	return c
}

// calls returns the call spans received so far.
func (c *otlpCollector) calls() []callSpan {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []callSpan
	for _, s := range c.spans {
		if strings.HasPrefix(s.Name, "warden.call ") {
			out = append(out, callSpan{s.Name, hex.EncodeToString(s.TraceId), hex.EncodeToString(s.ParentSpanId)})
		}
	}
	return out
}
