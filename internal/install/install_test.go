package install_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/internal/descriptorcheck"
	"github.com/warden-run/warden/internal/install"
	"github.com/warden-run/warden/internal/testwasm"
)

const installConfig = `# install test
tools:
  dir: tools
  cache_dir: CACHE
  grants:
    echo: {}   # reviewed
  # approved modules
  pins: {}
`

func TestInstallPinsAndRefusesChangedModule(t *testing.T) {
	ctx := context.Background()
	src := testwasm.BuildGoFile(t, "../../tools-wasm/echo")
	wasm, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	body := strings.Replace(installConfig, "CACHE", userCacheDir, 1)
	a, cfgPath := startApp(t, dir, body, nil)

	r, err := a.Installer().ReviewInstall(ctx, src, "echo")
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "tools", "echo.wasm")
	if r.Module != "echo" || r.Dest != dest || r.SHA256 != sha(wasm) || r.Previous != "" ||
		len(r.Tools) != 1 || r.Tools[0].Descriptor.Name != "echo" || !r.Tools[0].Missing.IsZero() {
		t.Fatalf("review: %+v", r)
	}
	if err := a.Installer().Install(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dest); sha(got) != sha(wasm) {
		t.Fatal("installed file differs from the reviewed one")
	}
	text, _ := os.ReadFile(cfgPath)
	// The pin comes with the lock of the descriptors as reviewed.
	wantText := strings.Replace(body, "  pins: {}\n", "  pins:\n    echo: "+sha(wasm)+"\n"+
		"  descriptors:\n    echo: {echo: \""+descriptorcheck.Digest(r.Tools[0].Descriptor)+"\"}\n", 1)
	// The grant entry now names its module: it belongs to echo, not to the name.
	wantText = strings.Replace(wantText, "    echo: {}   # reviewed\n", "    echo:      # reviewed\n      module: echo\n", 1)
	if string(text) != wantText {
		t.Errorf("config after install:\n%s\nwant:\n%s", text, wantText)
	}
	if a.Config().Tools.Pins["echo"] != sha(wasm) {
		t.Error("the app's config was not reloaded")
	}
	if errs := a.Catalog().LoadTools(ctx); len(errs) != 0 {
		t.Fatal(errs)
	}
	if res := call(t, a, "echo", `{"text":"hi"}`); res.IsError || res.Content[0].Text != "hi" {
		t.Fatalf("installed echo: %+v", res)
	}

	// A different module under the same tool name is refused; the same
	// module name may replace it.
	other := filepath.Join(t.TempDir(), "other.wasm")
	os.WriteFile(other, wasm, 0o644)
	if _, err := a.Installer().ReviewInstall(ctx, other, ""); !errors.Is(err, install.ErrNameTaken) || !strings.Contains(err.Error(), `"echo" (module echo describes "echo")`) {
		t.Errorf("collision: %v", err)
	}
	if _, err := a.Installer().ReviewInstall(ctx, other, "ECHO"); err == nil || !strings.Contains(err.Error(), `module name "ECHO" differs only in case from installed module "echo"`) {
		t.Errorf("a module name in other case: %v", err)
	}
	if r, err := a.Installer().ReviewInstall(ctx, other, "echo"); err != nil || r.Previous != sha(wasm) {
		t.Errorf("same module name: %v %+v", err, r)
	}

	// Change the installed file: a custom section keeps it a valid module,
	// so only the pin can refuse it.
	changed := append(append([]byte{}, wasm...), 0x00, 0x06, 0x04, 'n', 'o', 't', 'e', '!')
	if err := os.WriteFile(dest, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	b, _ := startApp(t, dir, body2(t, cfgPath), nil)
	errs := b.Catalog().LoadTools(ctx)
	if len(errs) != 1 || !errors.Is(errs[0], catalog.ErrPinMismatch) || !strings.Contains(errs[0].Error(), "changed since it was approved") {
		t.Fatalf("changed module loaded: %v", errs)
	}
	if _, ok := b.Catalog().Table().Tool("echo"); ok {
		t.Fatal("the changed module's tool is served")
	}

	// Re-installing the file in place approves it again.
	r, err = b.Installer().ReviewInstall(ctx, dest, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Previous != sha(changed) || r.SHA256 != sha(changed) {
		t.Errorf("re-review: %+v", r)
	}
	if err := b.Installer().Install(ctx, r); err != nil {
		t.Fatal(err)
	}
	c, _ := startApp(t, dir, body2(t, cfgPath), nil)
	if errs := c.Catalog().LoadTools(ctx); len(errs) != 0 {
		t.Fatalf("re-approved module: %v", errs)
	}
	if res := call(t, c, "echo", `{"text":"again"}`); res.IsError || res.Content[0].Text != "again" {
		t.Fatalf("re-approved echo: %+v", res)
	}
}

// body2 returns the config file's current text, so a second app starts
// from what install wrote.
func body2(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestInstallCopyFailureKeepsPin: when the module cannot be written, the
// pin is left as it was (the file goes first, the pin only after it).
func TestInstallCopyFailureKeepsPin(t *testing.T) {
	ctx := context.Background()
	src := testwasm.BuildGoFile(t, "../../tools-wasm/echo")
	dir := t.TempDir()
	old := strings.Repeat("ab", 32)
	body := strings.Replace(installConfig, "CACHE", userCacheDir, 1)
	body = strings.Replace(body, "pins: {}", "pins: {echo: "+old+"}", 1)
	a, cfgPath := startApp(t, dir, body, nil)
	r, err := a.Installer().ReviewInstall(ctx, src, "echo")
	if err != nil {
		t.Fatal(err)
	}
	// A non-empty directory where the module goes: the rename fails.
	if err := os.MkdirAll(filepath.Join(r.Dest, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := a.Installer().Install(ctx, r); err == nil {
		t.Fatal("install over a directory succeeded")
	}
	if got := body2(t, cfgPath); got != body {
		t.Errorf("pin not restored:\n%s", got)
	}
	if a.Config().Tools.Pins["echo"] != old {
		t.Errorf("app config pin = %q", a.Config().Tools.Pins["echo"])
	}
	entries, _ := os.ReadDir(filepath.Dir(r.Dest))
	if len(entries) != 1 {
		t.Errorf("left in tools dir: %v", entries)
	}
}

func TestInstallNeedsConfigFile(t *testing.T) {
	ctx := context.Background()
	src := testwasm.BuildGoFile(t, "../../tools-wasm/echo")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tools.Dir = t.TempDir()
	cfg.Tools.CacheDir = userCacheDir
	a, err := app.New(ctx, cfg, discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	r, err := a.Installer().ReviewInstall(ctx, src, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Installer().Install(ctx, r); err == nil || !strings.Contains(err.Error(), "no config file") {
		t.Errorf("install without config: %v", err)
	}
	if entries, _ := os.ReadDir(cfg.Tools.Dir); len(entries) != 0 {
		t.Errorf("installed anyway: %v", entries)
	}
}

// TestInstallWritesTheReviewedBytes: a module file replaced while the
// person reads the review (the window between ReviewInstall and Install)
// changes nothing: Install writes and pins the bytes reviewed, read once,
// never the file's bytes of the moment.
func TestInstallWritesTheReviewedBytes(t *testing.T) {
	ctx := context.Background()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../tools-wasm/echo"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "echo.wasm")
	if err := os.WriteFile(src, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	a, cfgPath := startApp(t, dir, strings.Replace(installConfig, "CACHE", userCacheDir, 1), nil)
	r, err := a.Installer().ReviewInstall(ctx, src, "")
	if err != nil {
		t.Fatal(err)
	}
	// The swap: a valid module (a custom section added) of other bytes.
	swapped := append(append([]byte{}, wasm...), 0x00, 0x06, 0x04, 's', 'w', 'a', 'p', '!')
	if err := os.WriteFile(src, swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Installer().Install(ctx, r); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "tools", "echo.wasm")); sha(got) != sha(wasm) {
		t.Fatal("installed the file as it was at install, not the bytes reviewed")
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.Pins["echo"] != sha(wasm) || r.SHA256 != sha(wasm) {
		t.Errorf("pin %s, review %s, want the reviewed bytes' %s", cfg.Tools.Pins["echo"], r.SHA256, sha(wasm))
	}
}
