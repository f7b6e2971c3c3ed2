package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestRightsFollowModulesAndPins drives one app through config changes
// while two modules, hostcalls and aaa-evil (the same bytes), describe the
// tool hostcalls, whose grant gives env SECRET to module hostcalls:
// unpinned, both are refused; a pin added makes hostcalls win and get its
// secret; a pin that stops matching unloads hostcalls and the impostor,
// now serving the name, is denied with the config line that explains it;
// the pin restored brings hostcalls back; a grant bound explicitly to
// another module gives the pinned module nothing.
func TestRightsFollowModulesAndPins(t *testing.T) {
	ctx := context.Background()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../runtime/testdata/goguest/hostcalls"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	pin := hex.EncodeToString(sum[:])
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	os.MkdirAll(tools, 0o755)
	for _, name := range []string{"hostcalls", "aaa-evil"} {
		if err := os.WriteFile(filepath.Join(tools, name+".wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "s3cret-rights-test"
	configWith := func(grant, pins string) string {
		return fmt.Sprintf("project: {root: %s}\nenv: {values: {SECRET: {value: %s}}}\ntools:\n  dir: tools\n  cache_dir: %s\n  grants:\n    hostcalls: %s\n  pins: %s\n",
			dir, secret, userCacheDir, grant, pins)
	}
	logs := &syncBuffer{}
	a, cfgPath := startApp(t, dir, configWith("{env: [SECRET]}", "{}"), logs)
	reconfigure := func(body string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := a.live.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(step string) (all string, envErr *tool.Error, servedBy string) {
		t.Helper()
		tl, ok := a.Catalog().Table().Tool("hostcalls")
		if !ok {
			t.Fatalf("%s: hostcalls not served: %v", step, a.refused())
		}
		res := call(t, a, "hostcalls", `{"env":{"op":"get","key":"SECRET"},"fs":{"op":"stat","path":"."}}`)
		var out struct {
			Env struct {
				Error *tool.Error `json:"error"`
			} `json:"env"`
		}
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", step, err, res)
		}
		raw, _ := json.Marshal(res)
		return string(raw), out.Env.Error, tl.Module().Name()
	}

	errs := a.Catalog().LoadTools(ctx)
	if len(errs) != 2 || len(a.refused()) != 2 {
		t.Fatalf("unpinned: errors %v, refused %v", errs, a.refused())
	}
	_, err = a.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}})
	if tool.KindOf(err) != tool.KindNotFound || !strings.Contains(err.Error(), "none of them is pinned") {
		t.Fatalf("call of a refused name: %v", err)
	}

	reconfigure(configWith("{env: [SECRET]}", "{hostcalls: "+pin+"}"))
	got, envErr, module := ask("pin added")
	if module != "hostcalls" || envErr != nil || !strings.Contains(got, secret) || len(a.refused()) != 1 {
		t.Fatalf("pin added: served by %s: %s", module, got)
	}

	reconfigure(configWith("{env: [SECRET]}", "{hostcalls: "+strings.Repeat("a", 64)+"}"))
	got, envErr, module = ask("pin no longer matching")
	if module != "aaa-evil" || strings.Contains(got, secret) || envErr == nil || envErr.Kind != tool.KindDenied ||
		!strings.Contains(envErr.Message, `tools.grants.hostcalls is bound to module hostcalls (no module field: the module named like the tool); tool "hostcalls" is served by module aaa-evil`) {
		t.Fatalf("pin no longer matching: served by %s: %s", module, got)
	}
	if !strings.Contains(logs.String(), "module unloaded: its pin changed") {
		t.Error("the unload is not logged")
	}

	reconfigure(configWith("{env: [SECRET]}", "{hostcalls: "+pin+"}"))
	if got, envErr, module = ask("pin restored"); module != "hostcalls" || envErr != nil || !strings.Contains(got, secret) {
		t.Fatalf("pin restored: served by %s: %s", module, got)
	}

	reconfigure(configWith("{module: aaa-evil, env: [SECRET]}", "{hostcalls: "+pin+"}"))
	got, envErr, module = ask("bound to the other module")
	if module != "hostcalls" || strings.Contains(got, secret) || envErr == nil ||
		!strings.Contains(envErr.Message, "tools.grants.hostcalls is bound to module aaa-evil (its module field)") {
		t.Fatalf("bound elsewhere: served by %s: %s", module, got)
	}
	var ge interface{ Error() string }
	if _, err := a.Config().Grants("hostcalls", "hostcalls"); !errors.As(err, &ge) {
		t.Fatal("Grants does not report the binding")
	}
	if strings.Contains(logs.String(), secret) {
		t.Error("the secret is in the log")
	}
}

// TestHeldWhileARivalLoads: during the initial background load, a tool is
// not served while a module that would take its name from it may still
// arrive: an impostor of a granted name while the module the grant belongs
// to loads, and any unpinned module's tool while a pinned module loads.
// The loads in flight are set exactly, so no timing decides the outcome.
func TestHeldWhileARivalLoads(t *testing.T) {
	ctx := context.Background()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../runtime/testdata/goguest/hostcalls"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	os.MkdirAll(tools, 0o755)
	// Only the impostor is in the tools dir: hostcalls.wasm "is loading".
	if err := os.WriteFile(filepath.Join(tools, "aaa-evil.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("project: {root: %s}\nenv: {values: {SECRET: {value: s3cret}}}\ntools:\n  dir: tools\n  cache_dir: %s\n  grants:\n    hostcalls: {env: [SECRET]}\n  pins: {slowpinned: %s}\n",
		dir, userCacheDir, strings.Repeat("ab", 32))
	a, _ := startApp(t, dir, body, nil)
	if errs := a.Catalog().LoadTools(ctx); len(errs) != 0 {
		t.Fatal(errs)
	}
	served := func() bool {
		for _, d := range a.List() {
			if d.Name == "hostcalls" {
				return true
			}
		}
		return false
	}
	loading := a.catalog.FakeLoading
	wantHeld := func(step, by string) {
		t.Helper()
		if served() {
			t.Fatalf("%s: the impostor's hostcalls is listed", step)
		}
		_, err := a.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}})
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindNotFound || !strings.Contains(te.Message, "until module "+by+" has loaded") {
			t.Fatalf("%s: call = %v, want not_found naming %s", step, err, by)
		}
	}

	// The module the grant belongs to is loading.
	loading("hostcalls")
	wantHeld("grant's module loading", "hostcalls")
	// A pinned module is loading: it could describe any name.
	loading("slowpinned")
	wantHeld("pinned module loading", "slowpinned")
	// An unpinned module no grant names is loading: nothing to wait for.
	loading("other")
	if !served() {
		t.Fatal("held although no rival may come")
	}
	// All loaded: the impostor serves the name, with nothing granted.
	loading()
	if !served() {
		t.Fatal("not served after the loads")
	}
	res := call(t, a, "hostcalls", `{"env":{"op":"get","key":"SECRET"}}`)
	if raw, _ := json.Marshal(res); strings.Contains(string(raw), "s3cret") || !strings.Contains(string(raw), "bound to module hostcalls") {
		t.Fatalf("impostor's call: %s", raw)
	}
}
