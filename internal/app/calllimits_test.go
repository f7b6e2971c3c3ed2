package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
)

// TestCallLimits: what the server admits a tool's calls by comes from
// config: one call per instance of its module (max_instances), the tool's
// own max_in_flight and rate, and its timeout, with the keys that set them.
func TestCallLimits(t *testing.T) {
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../tools-wasm/echo"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools", "echo.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(`tools:
  dir: tools
  cache_dir: CACHE
  grants:
    echo: {}
  limits:
    echo: {max_instances: 3, max_in_flight: 2, rate: 5/s, timeout: 7s}
`, "CACHE", userCacheDir)
	a, path := startApp(t, dir, body, nil)
	if errs := a.Catalog().LoadTools(t.Context()); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := a.toolCallLimits("echo")
	want := mcpserver.CallLimits{
		Module: "echo", MaxInstances: 3, InstancesSetting: "tools.limits.echo.max_instances",
		MaxInFlight: 2, InFlightSetting: "tools.limits.echo.max_in_flight", Timeout: 7 * time.Second,
		OneCallPerSession: true, IsolationSetting: "tools.limits.echo.isolation",
	}
	rate := got.Rate
	got.Rate = nil
	if got != want {
		t.Errorf("CallLimits = %+v, want %+v", got, want)
	}
	if rate == nil || *rate != (mcpserver.RateLimit{Rate: 5, Burst: 5, Setting: "tools.limits.echo.rate"}) {
		t.Errorf("Rate = %+v, want 5/s, burst 5, tools.limits.echo.rate", rate)
	}
	if l := a.toolCallLimits("no-such-tool"); l != (mcpserver.CallLimits{}) {
		t.Errorf("CallLimits of an unknown tool = %+v, want none", l)
	}
	// The limits are kept per config: a reload that changes them applies
	// from the next call.
	if err := os.WriteFile(path, []byte(strings.Replace(body, "max_in_flight: 2, rate: 5/s, timeout: 7s", "max_in_flight: 1, timeout: 3s", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.live.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := a.toolCallLimits("echo"); got.MaxInFlight != 1 || got.Timeout != 3*time.Second || got.Rate != nil {
		t.Errorf("after the reload: max_in_flight %d, timeout %s, rate %+v; want 1, 3s, none", got.MaxInFlight, got.Timeout, got.Rate)
	}
}

// TestServerRateLimitsFollowReload: server.rate_limit is read from the config
// in force at every call, so that an edit applies without a restart; a
// removed limit is none.
func TestServerRateLimitsFollowReload(t *testing.T) {
	dir := t.TempDir()
	a, path := startApp(t, dir, "server: {rate_limit: {per_client: {rate: 1/s, burst: 2}}}\ntools: {dir: tools, cache_dir: off}\n", nil)
	if got := a.serverRateLimits(); got.PerClient == nil || *got.PerClient != (mcpserver.RateLimit{Rate: 1, Burst: 2, Setting: "server.rate_limit.per_client"}) || got.PerTool != nil {
		t.Fatalf("at start: %+v", got)
	}
	for _, c := range []struct {
		body      string
		perClient *mcpserver.RateLimit
		perTool   *mcpserver.RateLimit
	}{
		{"server: {rate_limit: {per_client: {rate: 30/m}, per_tool: {rate: 10/s, burst: 20}}}\ntools: {dir: tools, cache_dir: off}\n",
			&mcpserver.RateLimit{Rate: 0.5, Burst: 1, Setting: "server.rate_limit.per_client"},
			&mcpserver.RateLimit{Rate: 10, Burst: 20, Setting: "server.rate_limit.per_tool"}},
		{"tools: {dir: tools, cache_dir: off}\n", nil, nil},
	} {
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := a.live.Reload(); err != nil {
			t.Fatal(err)
		}
		got := a.serverRateLimits()
		if !sameLimit(got.PerClient, c.perClient) || !sameLimit(got.PerTool, c.perTool) {
			t.Fatalf("after reloading %q: per client %+v, per tool %+v; want %+v, %+v", c.body, got.PerClient, got.PerTool, c.perClient, c.perTool)
		}
	}
}

func sameLimit(a, b *mcpserver.RateLimit) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
