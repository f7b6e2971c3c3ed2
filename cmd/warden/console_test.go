package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/console"
	"github.com/warden-run/warden/internal/console/browsertest"
	"github.com/warden-run/warden/internal/principal"
)

// TestConsoleInstallFromRegistry: the Install page reviews a signed module
// from a registry with `warden install`'s code (digest, signature, the
// tool's capabilities), installs exactly the reviewed bytes when approved
// (pinned, source locked), refuses a path on the server's disk, and a
// review works once.
func TestConsoleInstallFromRegistry(t *testing.T) {
	b := browsertest.New(t) // before the registry's TMPDIR, which must end empty
	e := newRegistryEnv(t, "")
	digest := e.pushSigned(t, "acme/released", "1.0.0", e.v1)
	ctx := context.Background()
	g := &globalFlags{configPath: e.cfgPath}
	a, logger, err := g.start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	a.Catalog().LoadTools(ctx)
	c, err := newConsole(a, logger, approvals.NewMemory(0), console.Options{Prefix: "/"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()
	defer c.Close()

	b.Do(chromedp.Navigate(srv.URL+c.NewLoginLink(principal.Local)), b.Visible("#no-approvals"),
		chromedp.Navigate(srv.URL+"/install"), b.Visible("#install-form"))
	// A path on the server's disk is not the browser's to name.
	before := readFile(t, e.cfgPath)
	b.Do(chromedp.SendKeys(chromedp.CSS("#install-ref"), "/etc/passwd"),
		chromedp.Submit(chromedp.CSS("#install-form")), b.Visible("#error"))
	if msg := b.Text("#error"); !strings.Contains(msg, "Paste an oci://") {
		t.Errorf("a local path: %q", msg)
	}
	b.Do(chromedp.Clear(chromedp.CSS("#install-ref")),
		chromedp.SendKeys(chromedp.CSS("#install-ref"), e.ref("acme/released", "1.0.0")),
		chromedp.Submit(chromedp.CSS("#install-form")), b.Visible("#install-review"))
	review := b.Text("#install-review pre")
	// Line by line, as `warden install` prints it (each value escaped there).
	for _, want := range []string{"\nTool released", "\nDigest   " + digest, "\nSigned   verified: signed by " + signer, "\nSigner   " + signer + " (issuer " + oidc + ")\n"} {
		if !strings.Contains(review, want) {
			t.Errorf("the review lacks %q:\n%s", want, review)
		}
	}
	// Reviewed, not installed (the fetched module waits for the approval).
	if now := readFile(t, e.cfgPath); string(now) != string(before) {
		t.Errorf("the review changed config.yaml:\n%s", now)
	}
	if ents, _ := os.ReadDir(e.tools); len(ents) > 0 {
		t.Errorf("the review installed: %v", ents)
	}
	b.Screenshot("install-review")
	reviewID := browsertest.Get(b, chromedp.Value(chromedp.CSS(`#install-review input[name="review"]`)))

	b.Do(chromedp.Click(chromedp.CSS("#install-apply")), b.Visible("#install-done"))
	if done := b.Text("#install-done"); !strings.Contains(done, "installed ") || !strings.Contains(done, "tools.pins.released") {
		t.Errorf("install result %q", done)
	}
	b.Screenshot("install-done")
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.Pins["released"] != sum(e.v1) || cfg.Tools.Sources["released"].Digest != digest {
		t.Errorf("pins %v, sources %v", cfg.Tools.Pins, cfg.Tools.Sources)
	}
	if got := readFile(t, filepath.Join(e.tools, "released.wasm")); string(got) != string(e.v1) {
		t.Error("the installed bytes are not the reviewed module")
	}
	// The Tools page shows the signer install recorded, in its own column.
	a.Catalog().LoadTools(ctx)
	b.Do(chromedp.Navigate(srv.URL+"/tools"), b.Visible(`tr[data-tool="released"]`))
	if got, want := b.Text(`tr[data-tool="released"] td.signer`), signer+" (issuer "+oidc+")"; got != want {
		t.Errorf("Tools page signer %q, want %q", got, want)
	}
	if got := b.Text(`tr[data-tool="released"] td.source`); got != e.ref("acme/released", "1.0.0") {
		t.Errorf("Tools page source %q", got)
	}
	b.Screenshot("tools-signer")
	// The same review again: gone.
	ci := &consoleInstaller{a: a, reviews: map[string]*pendingReview{}}
	if _, err := ci.Install(ctx, reviewID, false); err == nil || !strings.Contains(err.Error(), "expired or was already used") {
		t.Errorf("a used review: %v", err)
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) > 0 {
		t.Errorf("temp files left: %v", ents)
	}
}

// TestConsoleListensOnLoopbackOnly: `warden console` is for this machine;
// serve's console off loopback needs an OpenID login.
func TestConsoleListensOnLoopbackOnly(t *testing.T) {
	cfgPath, _ := setup(t)
	_, err := run(t, "", "-c", cfgPath, "console", "--addr", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), `--addr "0.0.0.0:0": the console of `+"`warden console`"+` listens on a loopback address only`) {
		t.Errorf("console --addr 0.0.0.0:0: %v", err)
	}
	body := readFile(t, cfgPath)
	if err := os.WriteFile(cfgPath, append(body, "server: {console: true}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, "", "-c", cfgPath, "serve", "--http", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "server.console on 0.0.0.0:0, which is not a loopback address, needs server.console_login") {
		t.Errorf("serve --http 0.0.0.0:0 with server.console: %v", err)
	}
}

// TestServeLoginLinkOffTerminalGoesToFile (finding 7): when serve's stderr
// is not a terminal (journald, docker logs), the one-time link is not
// written there: it goes to a file only the user can read, under the
// state directory, replacing whatever was there (a looser file, a
// symlink), and stderr names the file.
func TestServeLoginLinkOffTerminalGoesToFile(t *testing.T) {
	state := t.TempDir()
	const link = "http://127.0.0.1:7331/console/0123/login?token=secret-token-value"
	path := filepath.Join(state, "warden", "console-login-link")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(elsewhere, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, path); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	if err := announceLoginLink(&stderr, link, func() (string, error) { return state, nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "secret-token-value") || !strings.Contains(stderr.String(), "is in "+path+" (readable by you only)") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("link file: %v %v", st.Mode(), err)
	}
	if data, _ := os.ReadFile(path); string(data) != link+"\n" {
		t.Errorf("link file holds %q", data)
	}
	if data, _ := os.ReadFile(elsewhere); len(data) != 0 {
		t.Errorf("the symlink's target was written: %q", data)
	}
	// No state directory: serve refuses to start rather than print it.
	err = announceLoginLink(&stderr, link, func() (string, error) { return "", os.ErrNotExist })
	if err == nil || !strings.Contains(err.Error(), "stderr is not a terminal, so the login link goes to a file under the state directory") {
		t.Errorf("no state dir: %v", err)
	}
}
