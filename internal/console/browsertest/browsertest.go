// Package browsertest drives a real browser (Debian's Chromium, through
// the DevTools protocol with chromedp) for the console's tests, and keeps
// a screenshot of each page as a test artifact.
//
// Without Chromium a test skips, saying how to install it, except under
// CI (the environment variable CI set), where it fails: CI installs
// chromium (.ci/run), so a skip there would be a test that tests nothing.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Timeout bounds one step (a navigation, a wait for an element): long,
// because the machines running the tests are busy; a step that succeeds
// returns as soon as its condition holds.
const Timeout = 90 * time.Second

// Browser is one headless Chromium with one tab.
type Browser struct {
	t   testing.TB
	ctx context.Context
	dir string
}

// Chromium returns the path of the browser, or "" when none is installed.
func Chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// New starts a browser for t, closed when t ends.
func New(t testing.TB) *Browser {
	t.Helper()
	path := Chromium()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("Chromium is required under CI (apt-get install chromium; .ci/run installs it)")
		}
		t.Skip("Chromium is not installed: apt-get install chromium to run the console's browser tests")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests may run as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	b := &Browser{t: t, ctx: ctx, dir: ArtifactDir(t)}
	// The first action on a context starts the browser, tied to the
	// context it runs with: run it on the tab's own context, not on a
	// step's (whose end would close the browser).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return b
}

// ArtifactDir is where t's screenshots go: $WARDEN_ARTIFACTS/<test name>
// when set (CI keeps that directory), else a directory of t's own.
func ArtifactDir(t testing.TB) string {
	root := os.Getenv("WARDEN_ARTIFACTS")
	if root == "" {
		return t.TempDir()
	}
	dir := filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Do runs steps in the tab, each within Timeout, failing t on the first
// error (after a screenshot named "failure").
func (b *Browser) Do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for _, step := range steps {
		ctx, cancel := context.WithTimeout(b.ctx, Timeout)
		err := chromedp.Do(ctx, step)
		cancel()
		if err != nil {
			b.Screenshot("failure")
			b.t.Fatalf("browser: %v", err)
		}
	}
}

// TryDo runs step within Timeout and returns its error, for a step whose
// failure the test decides about (and from another goroutine than the
// test's).
func (b *Browser) TryDo(step chromedp.Action[chromedp.Void]) error {
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	return chromedp.Do(ctx, step)
}

// Get runs an action that gives a value, failing t on error.
func Get[T any](b *Browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.Screenshot("failure")
		b.t.Fatalf("browser: %v", err)
	}
	return v
}

// Screenshot writes the whole page as name.png into the artifact
// directory and returns its path.
func (b *Browser) Screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, Timeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}

// Text returns the text of the first element matching the CSS selector sel.
func (b *Browser) Text(sel string) string {
	b.t.Helper()
	return Get(b, chromedp.Text(chromedp.CSS(sel)))
}

// Visible waits until an element matching the CSS selector sel is visible.
func (b *Browser) Visible(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel))
}
