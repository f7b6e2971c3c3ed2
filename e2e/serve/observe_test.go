package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	e := newEnv(t, "", "echo")
	audit := filepath.Join(e.dir, "audit.log")
	e.withConfig(t, fmt.Sprintf("  audit: %s\nserver:\n  metrics: true\n  token: %s\n", audit, token))
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
	status, body := getMetrics(t, metricsURL, token)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics with the token: %d\n%s", status, body)
	}
	for _, want := range []string{
		fmt.Sprintf(`warden_calls_total{kind="ok",tool="echo"} %d`, calls),
		fmt.Sprintf(`warden_queue_wait_seconds_count %d`, calls),
		`warden_instances_live{module="echo"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, body)
		}
	}

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
	got := auditCalls(t, audit)
	if len(got) != calls {
		t.Fatalf("%d call lines in the audit log after SIGTERM, want %d: %q", len(got), calls, got)
	}
	for _, l := range got {
		if l != "token token echo ok" {
			t.Errorf("call line %q, want %q", l, "token token echo ok")
		}
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
