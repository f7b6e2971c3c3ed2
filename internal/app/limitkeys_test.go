package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/tool"
)

// spinWAT is a module whose one tool, spin, loops for ever.
func spinWAT(t *testing.T) []byte {
	desc := `{"tools":[{"name":"spin","description":"loops","inputSchema":{"type":"object"}}]}`
	return testwasm.WATString(t, fmt.Sprintf(`(module
  (memory (export "memory") 1)
  (global $next (mut i32) (i32.const 32768))
  (func (export "warden_alloc") (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (global.get $next))
    (global.set $next (i32.add (global.get $next) (local.get $size)))
    (local.get $ptr))
  (func (export "warden_abi_version") (result i32) (i32.const 1))
  (data (i32.const 16) "%s")
  (func (export "warden_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const %d)))
  (func (export "warden_call") (param i64) (result i64)
    (loop $spin (br $spin))
    (i64.const 0)))`, strings.ReplaceAll(desc, `"`, `\"`), len(desc)))
}

// TestLimitFailuresNameKeys: a call of tool spin, served by module
// spinner, that runs into a limit names the key that raises it: the
// tool's own timeout when that is the bound, the module's fuel, and where
// the value in force comes from.
func TestLimitFailuresNameKeys(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "spinner.wasm"), spinWAT(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limits string
		kind   tool.Kind
		want   string
	}{
		{"  defaults:\n    timeout: 20s\n  limits:\n    spin: {timeout: 200ms}\n", tool.KindTimeout,
			"spin did not finish within 200ms (while running); raise tools.limits.spin.timeout (now 200ms)"},
		{"  defaults:\n    fuel: 2000000\n", tool.KindOutOfFuel,
			"spin ran out of fuel after 2000000 units; raise tools.limits.spinner.fuel (now 2000000, from tools.defaults.fuel)"},
		{"  limits:\n    spinner: {fuel: 3000000}\n", tool.KindOutOfFuel,
			"spin ran out of fuel after 3000000 units; raise tools.limits.spinner.fuel (now 3000000)"},
	} {
		body := fmt.Sprintf("project:\n  root: .\ntools:\n  dir: %s\n  cache_dir: off\n%s", tools, c.limits)
		a, _ := startApp(t, dir, body, nil)
		if errs := a.Catalog().LoadTools(t.Context()); len(errs) != 0 {
			t.Fatal(errs)
		}
		res := call(t, a, "spin", `{}`)
		if !res.IsError || res.Error.Kind != c.kind || res.Error.Message != c.want {
			t.Errorf("%s: got %v\nwant %s: %s", strings.TrimSpace(c.limits), res.Error, c.kind, c.want)
		}
		a.Close(t.Context())
	}
}
