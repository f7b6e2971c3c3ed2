package runtime_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestTrapNamesFunction: a trap names the function it happened in, from
// the module's name section, once: the kind and class are the typed
// fields (and tool.Error.Error's prefix), not repeated in the message.
func TestTrapNamesFunction(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	tl := loadTool(t, rt, "panicky", testwasm.WATNamed(t, "testdata/trap/panicky.wat"), runtime.Limits{})
	wantOK(t, call(t, tl, `{}`), "pong")
	e := wantKind(t, call(t, tl, `{"x":1}`), tool.KindTrapped)
	if e.Trap != tool.TrapUnreachable {
		t.Errorf("trap = %q, want %q", e.Trap, tool.TrapUnreachable)
	}
	if want := "trapped (unreachable): panicky failed in function panicky"; e.Error() != want {
		t.Errorf("error:\n got %q\nwant %q", e.Error(), want)
	}
	wantOK(t, call(t, tl, `{}`), "pong")
}

// TestTrapFunctionNameEscaped: the function name is the module's text: a
// name section naming warden_call with control characters and 4 KiB of
// letters shows escaped and cut, on one line; a name with a newline shows
// only up to it (where wazero's frame line ends).
func TestTrapFunctionNameEscaped(t *testing.T) {
	long := "evil\x1b[2J\twarden: " + strings.Repeat("x", 4096)
	for _, c := range []struct{ name, want string }{
		{long, `hostile failed in function evil\x1b[2J\x09warden: ` + long[len("evil\x1b[2J\twarden: "):200] + fmt.Sprintf("…(%d more bytes)", len(long)-200)},
		{"real\n\t.fake(i32)", "hostile failed in function real"},
	} {
		f := watFixture{name: "hostile", failBody: "unreachable"}
		rt := newRuntime(t, runtime.Options{})
		tl := loadTool(t, rt, "hostile", withFunctionName(f.build(t), 3, c.name), runtime.Limits{})
		e := wantKind(t, call(t, tl, `{"fail":true}`), tool.KindTrapped)
		if e.Message != c.want {
			t.Errorf("message:\n got %q\nwant %q", e.Message, c.want)
		}
	}
}

// withFunctionName appends a name section naming function index to wasm.
func withFunctionName(wasm []byte, index uint32, name string) []byte {
	var names []byte
	names = binary.AppendUvarint(names, 1) // one function
	names = binary.AppendUvarint(names, uint64(index))
	names = binary.AppendUvarint(names, uint64(len(name)))
	names = append(names, name...)
	sub := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(names)))...) // function names
	sub = append(sub, names...)
	payload := append(binary.AppendUvarint(nil, 4), "name"...)
	payload = append(payload, sub...)
	out := append(append([]byte(nil), wasm...), 0)
	out = binary.AppendUvarint(out, uint64(len(payload)))
	return append(out, payload...)
}

// TestOutOfFuelNamesSetting: out_of_fuel names the setting that raises the
// budget, and where the budget in force comes from.
func TestOutOfFuelNamesSetting(t *testing.T) {
	spin := watFixture{name: "spin", failBody: "(loop $spin (br $spin))"}
	wasm := spin.build(t)
	rt := newRuntime(t, runtime.Options{})
	for _, c := range []struct {
		setting runtime.Setting
		want    string
	}{
		{runtime.Setting{Key: "tools.limits.spin.fuel", Default: true},
			"spin ran out of fuel after 1000000 units; raise tools.limits.spin.fuel (now the default 1000000)"},
		{runtime.Setting{Key: "tools.limits.spin.fuel", From: "tools.defaults.fuel"},
			"spin ran out of fuel after 1000000 units; raise tools.limits.spin.fuel (now 1000000, from tools.defaults.fuel)"},
		{runtime.Setting{Key: "tools.limits.spin.fuel"},
			"spin ran out of fuel after 1000000 units; raise tools.limits.spin.fuel (now 1000000)"},
		{runtime.Setting{}, "spin ran out of fuel after 1000000 units"},
	} {
		tl := loadTool(t, rt, "spin", wasm, runtime.Limits{Fuel: 1_000_000, FuelSetting: c.setting})
		e := wantKind(t, call(t, tl, `{"fail":true}`), tool.KindOutOfFuel)
		if e.Message != c.want {
			t.Errorf("message:\n got %q\nwant %q", e.Message, c.want)
		}
	}
}

// TestTimeoutNamesSetting: timeout names the bound that ended the call:
// the tool's own tools.limits entry (CallRequest.TimeoutSetting), the
// descriptor's timeoutMs, which config cannot raise, or the module's.
func TestTimeoutNamesSetting(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	module := runtime.Setting{Key: "tools.limits.spin.timeout", From: "tools.defaults.timeout"}
	spin := watFixture{name: "spin", failBody: "(loop $spin (br $spin))"}
	tl := loadTool(t, rt, "spin", spin.build(t), runtime.Limits{Timeout: 60 * time.Millisecond, TimeoutSetting: module})
	e := wantKind(t, call(t, tl, `{"fail":true}`), tool.KindTimeout)
	if want := "spin did not finish within 60ms (while running); raise tools.limits.spin.timeout (now 60ms, from tools.defaults.timeout)"; e.Message != want {
		t.Errorf("module's bound:\n got %q\nwant %q", e.Message, want)
	}
	res := tl.Call(context.Background(), runtime.CallRequest{Arguments: []byte(`{"fail":true}`),
		Timeout: 40 * time.Millisecond, TimeoutSetting: "tools.limits.spin.timeout"})
	e = wantKind(t, res, tool.KindTimeout)
	if want := "spin did not finish within 40ms (while running); raise tools.limits.spin.timeout (now 40ms)"; e.Message != want {
		t.Errorf("tool's bound:\n got %q\nwant %q", e.Message, want)
	}

	own := watFixture{name: "own", meta: `"timeoutMs":50,`, failBody: "(loop $spin (br $spin))"}
	tl = loadTool(t, rt, "own", own.build(t), runtime.Limits{Timeout: time.Second, TimeoutSetting: module})
	e = wantKind(t, call(t, tl, `{"fail":true}`), tool.KindTimeout)
	if want := "own did not finish within 50ms (while running); the tool's descriptor lowers it to 50ms (timeoutMs), which config cannot raise"; e.Message != want {
		t.Errorf("descriptor's bound:\n got %q\nwant %q", e.Message, want)
	}
}

// TestExtismUnsetConfigNamed: a plugin whose config value comes from an
// unset from_env variable fails naming the variable and the config key,
// whether it returns an error or traps (as a Rust plugin's unwrap does).
func TestExtismUnsetConfigNamed(t *testing.T) {
	const refusal = `config "api-key": the host variable WARDEN_TEST_NOT_SET is not set (tools.grants.needy.config.api-key.from_env)`
	rt := extismRuntime(t, runtime.Options{})
	req := runtime.CallRequest{Config: map[string]hostfuncs.SecretValue{"api-key": {FromEnv: "WARDEN_TEST_NOT_SET"}}}
	for _, c := range []struct {
		onMissing string
		kind      tool.Kind
		want      string
	}{
		{"(return (i32.const 1))", tool.KindFailed, "needy failed after " + refusal + " (the plugin said: call returned 1)"},
		{"unreachable", tool.KindTrapped, "needy failed in function $7 (the module has no name section to name it) after " + refusal},
	} {
		src := extismWATSource(descOf("needy"), `{"content":[{"type":"text","text":"configured"}]}`,
			`(import "extism:host/env" "config_get" (func $config_get (param i64) (result i64)))`)
		// The key, copied into the kernel's memory, and a call that asks
		// for it first.
		src = strings.Replace(src, `(func (export "call") (result i32) (call $out`, `(data (i32.const 40000) "api-key")
  (func $key (result i64)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.const 7)))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $i) (i32.const 7)))
      (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
        (i32.load8_u (i32.add (i32.const 40000) (local.get $i))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $next)))
    (local.get $off))
  (func (export "call") (result i32)
    (if (i64.eqz (call $config_get (call $key))) (then `+c.onMissing+`))
    (call $out`, 1)
		m, err := rt.Load(context.Background(), "needy", testwasm.WATString(t, src), runtime.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close(context.Background()) })
		e := wantKind(t, callWith(t, toolNamed(t, m, "needy"), `{}`, req), c.kind)
		if !strings.HasSuffix(e.Message, c.want) {
			t.Errorf("message:\n got %q\nwant it to end %q", e.Message, c.want)
		}
	}
}

// TestLoadFailureNamesPlaceAndSetting: a load that runs out of fuel names
// the setting too, and a load that traps names the function.
func TestLoadFailureNamesPlaceAndSetting(t *testing.T) {
	rt := newRuntime(t, runtime.Options{})
	_, err := rt.Load(context.Background(), "spin", testwasm.WATString(t, module{initBody: "(loop $l (br $l))"}.wat()),
		runtime.Limits{Fuel: 1_000_000, FuelSetting: runtime.Setting{Key: "tools.limits.spin.fuel", Default: true}})
	if want := "_initialize: ran out of fuel (budget 1000000); raise tools.limits.spin.fuel (now the default 1000000)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("load error %v, want it to contain %q", err, want)
	}
	src := filepath.Join(t.TempDir(), "init.wat")
	if err := os.WriteFile(src, []byte(module{initBody: "(call $boom)", extra: "(func $boom unreachable)"}.wat()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = rt.Load(context.Background(), "boom", testwasm.WATNamed(t, src), runtime.Limits{})
	if want := "_initialize: trapped (unreachable) in function boom"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("load error %v, want it to contain %q", err, want)
	}
}

// TestExtismGoPanicAfterUnsetConfig: the Go PDK plugin that panics on a
// config value its from_env variable did not give it is reported naming
// both, beside its panic message.
func TestExtismGoPanicAfterUnsetConfig(t *testing.T) {
	rt := extismRuntime(t, runtime.Options{})
	cfg := toolNamed(t, extismPlugin(t, rt, "v1", runtime.Limits{}), "v1_config")
	req := runtime.CallRequest{Config: map[string]hostfuncs.SecretValue{"api-key": {FromEnv: "WARDEN_TEST_NOT_SET"}}}
	res := callWith(t, cfg, `{"key":"api-key","require":true}`, req)
	if !res.IsError {
		t.Fatalf("want a failure, got %+v", res.Content)
	}
	for _, want := range []string{
		`v1_config failed in function main.call (trapping in runtime.abort) after config "api-key": the host variable WARDEN_TEST_NOT_SET is not set (tools.grants.v1_config.config.api-key.from_env)`,
		"panic: missing required configuration: api-key",
	} {
		if !strings.Contains(res.Error.Message, want) {
			t.Errorf("message %q does not contain %q", res.Error.Message, want)
		}
	}
	wantOK(t, callWith(t, cfg, `{"key":"api-key"}`, req), "false ")
}
