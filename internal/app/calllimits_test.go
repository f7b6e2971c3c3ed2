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
	a, _ := startApp(t, dir, body, nil)
	if errs := a.LoadTools(t.Context()); len(errs) != 0 {
		t.Fatal(errs)
	}
	got := a.CallLimits("echo")
	want := mcpserver.CallLimits{
		Module: "echo", MaxInstances: 3, InstancesSetting: "tools.limits.echo.max_instances",
		MaxInFlight: 2, InFlightSetting: "tools.limits.echo.max_in_flight", Timeout: 7 * time.Second,
	}
	rate := got.Rate
	got.Rate = nil
	if got != want {
		t.Errorf("CallLimits = %+v, want %+v", got, want)
	}
	if rate == nil || *rate != (mcpserver.RateLimit{Rate: 5, Burst: 5, Setting: "tools.limits.echo.rate"}) {
		t.Errorf("Rate = %+v, want 5/s, burst 5, tools.limits.echo.rate", rate)
	}
	if l := a.CallLimits("no-such-tool"); l != (mcpserver.CallLimits{}) {
		t.Errorf("CallLimits of an unknown tool = %+v, want none", l)
	}
}
