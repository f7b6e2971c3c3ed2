package runlimits

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
)

// TestConfigRuntimeLimits: a module's limits reach the runtime as config
// says them, tools.defaults under the module's own entry, and every bound
// config leaves unset is the runtime's default (both come from
// internal/limits); a rate reaches the server with its key.
func TestConfigRuntimeLimits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(`
tools:
  defaults: {timeout: 5s, memory: 64MiB, max_output: 512KiB}
  limits:
    jq: {timeout: 2s, isolation: shared, rate: 10/s}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.Limits{Timeout: 2 * time.Second, Memory: 64 << 20, MaxOutput: 512 << 10, Fuel: runtime.DefaultFuel,
		LoadBudget: 10 * time.Second, Isolation: runtime.IsolationShared, MaxInstances: runtime.DefaultMaxInstances,
		LogBytes: runtime.DefaultLogBytes, LogLines: runtime.DefaultLogLines, CompileBudget: runtime.DefaultCompileBudget,
		FuelSetting:    runtime.Setting{Key: "tools.limits.jq.fuel", Default: true},
		TimeoutSetting: runtime.Setting{Key: "tools.limits.jq.timeout"}}
	if l := Module(c, "jq"); l != want {
		t.Errorf("limits of jq = %+v\nwant %+v", l, want)
	}
	if l := Module(c, "other"); l.Timeout != 5*time.Second || l.Isolation != runtime.IsolationSession {
		t.Errorf("limits of a module with no entry = %+v, want tools.defaults", l)
	}
	if r := Rate(c.ToolRate("jq")); r == nil || *r != (mcpserver.RateLimit{Rate: 10, Burst: 10, Setting: "tools.limits.jq.rate"}) {
		t.Errorf("rate of jq = %+v", r)
	}
	if r := Rate(c.ToolRate("other")); r != nil {
		t.Errorf("rate of a tool with none = %+v, want nil", r)
	}
}
