package runlimits_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/runlimits"
	"github.com/warden-run/warden/runtime"
)

// TestModuleSettings: the limits of a module name the module's own
// tools.limits keys for fuel and timeout, and where the values in force
// come from: the module's entry, tools.defaults, or the built-in default.
func TestModuleSettings(t *testing.T) {
	yaml := `tools:
  defaults:
    timeout: 5s
  limits:
    Spin:
      fuel: 5000
`
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		module        string
		fuel, timeout runtime.Setting
	}{
		{"spin", runtime.Setting{Key: "tools.limits.spin.fuel"},
			runtime.Setting{Key: "tools.limits.spin.timeout", From: "tools.defaults.timeout"}},
		{"Echo", runtime.Setting{Key: "tools.limits.echo.fuel", Default: true},
			runtime.Setting{Key: "tools.limits.echo.timeout", From: "tools.defaults.timeout"}},
	} {
		l := runlimits.Module(cfg, c.module)
		if l.FuelSetting != c.fuel || l.TimeoutSetting != c.timeout {
			t.Errorf("%s: fuel %+v, timeout %+v; want %+v, %+v", c.module, l.FuelSetting, l.TimeoutSetting, c.fuel, c.timeout)
		}
	}
}
