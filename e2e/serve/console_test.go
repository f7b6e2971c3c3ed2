package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/console/browsertest"
)

// The web console end to end: the real binary, a real browser (Chromium
// through chromedp; internal/console/browsertest), real MCP clients.
// Screenshots of each page are kept (browsertest.ArtifactDir).

// loginLink matches the one-time link warden prints.
var loginLink = regexp.MustCompile(`http://[^\s]+/login\?token=[0-9a-f]{64}`)

// startConsole runs `warden console` on a free loopback port and returns
// the login link it printed. The process is stopped (SIGTERM, exit 0) at
// cleanup.
func startConsole(t *testing.T, e *env) string {
	t.Helper()
	cmd := exec.Command(built.warden, "console", "--config", e.config, "--addr", freeAddr(t))
	cmd.Env = childEnv()
	stderr := &logBuffer{}
	dumpOnFailure(t, "warden console", stderr)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	links := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := loginLink.FindString(sc.Text()); m != "" {
				links <- m
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("warden console exited with %v after SIGTERM", err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Errorf("warden console still running 30 s after SIGTERM; killed")
		}
	})
	select {
	case link := <-links:
		// Under a random per-launch path, which the cookie is scoped to.
		if !regexp.MustCompile(`^http://[^/]+/[0-9a-f]{32}/login\?token=`).MatchString(link) {
			t.Fatalf("login link %q: want the console under a random /<128-bit hex>/ path", link)
		}
		return link
	case err := <-exited:
		t.Fatalf("warden console exited before printing a login link: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("warden console printed no login link within a minute")
	}
	return ""
}

// TestConsoleGrantEditKeepsComments: a grant edited on the Tools page is
// previewed as a diff of config.yaml (the file unchanged), then written
// by the same editor as `warden grant`: the file keeps its comments. A
// grant no call could use (warden's own config file) is refused in the
// CLI's words and writes nothing.
func TestConsoleGrantEditKeepsComments(t *testing.T) {
	e := personEnv(t, "2m")
	b := browsertest.New(t)
	link := startConsole(t, e)
	before, _ := os.ReadFile(e.config)

	b.Do(chromedp.Navigate(link), b.Visible("#no-approvals"))
	b.Do(chromedp.Navigate(link[:strings.Index(link, "/login")]+"/tools"),
		b.Visible(`#tools tr[data-tool="hostcalls"]`))
	if got := b.Text(`#tools tr[data-tool="hostcalls"] td.granted`); !strings.Contains(got, "fs.write") {
		t.Errorf("hostcalls granted %q, want its fs.write grant", got)
	}
	b.Screenshot("tools")

	// Preview: a diff, nothing written.
	b.Do(chromedp.SendKeys(chromedp.CSS("#grant-tool"), "hostcalls"),
		chromedp.SendKeys(chromedp.CSS("#grant-args"), "fs.read=docs"),
		chromedp.Click(chromedp.CSS("#grant-preview")),
		b.Visible("#grant-diff"))
	diff := b.Text("#grant-diff")
	if !strings.Contains(diff, "+") || !strings.Contains(diff, "docs") {
		t.Errorf("preview diff:\n%s", diff)
	}
	if now, _ := os.ReadFile(e.config); string(now) != string(before) {
		t.Fatalf("the preview wrote config.yaml:\n%s", now)
	}
	b.Screenshot("grant-preview")

	// Apply: written, comments kept.
	// The preview's page has a notice too: wait for the applied result.
	b.Do(chromedp.Click(chromedp.CSS("#grant-apply")), b.Visible(`#grant-result[data-applied="true"]`))
	if n := b.Text("#notice"); n != "Granted: config.yaml was changed as shown." {
		t.Errorf("notice %q", n)
	}
	after, _ := os.ReadFile(e.config)
	for _, comment := range []string{"# warden config for the person-in-the-loop tests", "# a person who never answers", "# no read grant: reads are put to the person"} {
		if !strings.Contains(string(after), comment) {
			t.Errorf("config.yaml lost the comment %q:\n%s", comment, after)
		}
	}
	// The grant is what `warden tools` now shows.
	stdout, _, code := wardenCLI(t, e, "tools", "-o", "json")
	var list struct {
		Tools []struct {
			Name    string
			Granted struct{ FS struct{ Read []string } }
		}
	}
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil {
		t.Fatalf("warden tools -o json: exit %d, %v\n%s", code, err, stdout)
	}
	for _, tl := range list.Tools {
		if tl.Name == "hostcalls" && !slices.Equal(tl.Granted.FS.Read, []string{"docs"}) {
			t.Errorf("hostcalls granted fs.read %q after the console's grant; config:\n%s", tl.Granted.FS.Read, after)
		}
	}
	b.Screenshot("grant-applied")

	// Never grantable: refused as on the CLI, nothing written.
	_, cliErr, _ := wardenCLI(t, e, "grant", "hostcalls", "fs.read=config.yaml")
	b.Do(chromedp.Clear(chromedp.CSS("#grant-args")),
		chromedp.SendKeys(chromedp.CSS("#grant-args"), "fs.read=config.yaml"),
		chromedp.Click(chromedp.CSS("#grant-preview")),
		b.Visible("#error"))
	msg := b.Text("#error")
	want := strings.TrimSuffix(strings.TrimPrefix(cliErr, "warden: "), "\n")
	if want == "" || msg != "Not granted: "+want {
		t.Errorf("refusal in the page %q, want the CLI's %q", msg, want)
	}
	if now, _ := os.ReadFile(e.config); string(now) != string(after) {
		t.Errorf("a refused grant wrote config.yaml")
	}
	b.Screenshot("grant-refused")
}

// consoleServe starts `warden serve --http` with server.console and
// log.audit, and returns the server and the login link it printed.
func consoleServe(t *testing.T, e *env) (*httpServer, string) {
	t.Helper()
	cfg, _ := os.ReadFile(e.config)
	audit := filepath.Join(e.dir, "audit.jsonl")
	patched := strings.Replace(string(cfg), "log:\n  level: info\n", "log:\n  level: info\n  audit: "+audit+"\nserver:\n  console: true\n", 1)
	if patched == string(cfg) {
		t.Fatal("bad test: the config has no log block to extend")
	}
	if err := os.WriteFile(e.config, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	// serve's stderr here is not a terminal: the link goes to a 0600 file
	// under the state directory, and stderr names the file, never the link.
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	s := startHTTP(t, e)
	if loginLink.MatchString(s.stderr.String()) {
		t.Errorf("serve printed the login link on a stderr that is not a terminal:\n%s", s.stderr.String())
	}
	file := filepath.Join(state, "warden", "console-login-link")
	if !strings.Contains(s.stderr.String(), "is in "+file+" (readable by you only)") {
		t.Errorf("serve's stderr does not name the link file %s:\n%s", file, s.stderr.String())
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("login link file: %v, mode %v", err, st.Mode())
	}
	data, _ := os.ReadFile(file)
	link := loginLink.FindString(string(data))
	// The console is under a random per-launch path below /console/.
	if link == "" || !regexp.MustCompile(`^http://`+regexp.QuoteMeta(s.addr)+`/console/[0-9a-f]{32}/login\?token=`).MatchString(link) {
		t.Fatalf("no login link for /console/<random>/ on %s in %s:\n%s", s.addr, file, data)
	}
	return s, link
}

// consoleBase is the console's address from its login link: the random
// per-launch prefix included.
func consoleBase(link string) string { return link[:strings.Index(link, "/login?")] }

// TestConsoleShowsDenialLive: under serve --http, a call denied a
// capability shows up in Activity while the page is open, through the
// audit log, and filtering on the decision keeps it.
func TestConsoleShowsDenialLive(t *testing.T) {
	e := newEnv(t, "", "hostcalls")
	// Questions stay with the client (which cannot elicit): with a console
	// serving, approvals.via: auto would put the guest's start-up read of
	// HOME (requested, not granted) to the console, and the call would
	// wait there for a person.
	cfg, _ := os.ReadFile(e.config)
	if err := os.WriteFile(e.config, append(cfg, "approvals:\n  via: elicitation\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t)
	s, link := consoleServe(t, e)
	b.Do(chromedp.Navigate(link), b.Visible("#no-approvals"),
		chromedp.Navigate(consoleBase(link)+"/activity"),
		b.Visible(`body[data-live="open"]`))
	cs := s.connect(t, "", nil, nil)
	// An env key the tool does not request: denied, never put to a person.
	call(t, cs, "hostcalls", map[string]any{"env": map[string]any{"op": "get", "key": "UNREQUESTED"}})
	b.Do(b.Visible(`#activity tr.line[data-decision="deny"][data-tool="hostcalls"]`))
	b.Screenshot("activity-denial")
	b.Do(chromedp.Navigate(consoleBase(link)+"/activity?decision=deny&tool=hostcalls"),
		b.Visible(`#activity tr.line[data-decision="deny"]`))
	b.Screenshot("activity-filtered")

	// A form post passes serve's own guard (Host, cross-origin) and the
	// console's CSRF check: logging out ends the session.
	b.Do(chromedp.Click(chromedp.CSS("form.logout button")), b.Visible("#error"))
	if msg := b.Text("#error"); msg != "You are logged out." {
		t.Errorf("logout: %q", msg)
	}
	b.Do(chromedp.Navigate(consoleBase(link)+"/activity"), b.Visible("h1"))
	if h := b.Text("h1"); h != "Log in" {
		t.Errorf("after logout, /console/activity shows %q", h)
	}
}

// TestConsoleApprovesGateOfClientWithoutElicitation: the whole loop. A
// client without elicitation calls a tool behind a confirm gate; with
// approvals.via: console the question waits in Approvals (bounded by
// client_wait); a person approves it in the page and the call completes,
// writing its file.
//
// The gate path puts the question to the app's broker (approvals.via:
// console), and serve's console answers that broker (cmd/warden
// consoleBroker).
func TestConsoleApprovesGateOfClientWithoutElicitation(t *testing.T) {
	e := personEnv(t, "1m")
	cfg, _ := os.ReadFile(e.config)
	if err := os.WriteFile(e.config, append(cfg, "approvals:\n  via: console\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t)
	s, link := consoleServe(t, e)
	b.Do(chromedp.Navigate(link), b.Visible("#no-approvals"), b.Visible(`body[data-live="open"]`))
	cs := s.connect(t, "", nil, nil) // no elicitation handler: the client declares none
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls",
			Arguments: map[string]any{"fs": map[string]any{"op": "write", "path": "out/approved.txt", "content": "approved in the browser"}}})
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("the call ended before anyone approved it (is the console answering the app's broker?): %v %s", r.err, dump(r.res))
	case <-waitVisible(b, `#approvals section.request[data-tool="hostcalls"]`):
	}
	b.Screenshot("approval-waiting")
	b.Do(chromedp.Click(chromedp.CSS(`#approvals section.request[data-tool="hostcalls"] button.approve`)), b.Visible("#notice"))
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("the approved call: %v %s", r.err, dump(r.res))
	}
	if got, err := os.ReadFile(filepath.Join(e.dir, "out", "approved.txt")); err != nil || string(got) != "approved in the browser" {
		t.Fatalf("out/approved.txt: %q %v", got, err)
	}
	b.Screenshot("approval-done")
}

// waitVisible waits in the background for sel, closing the channel once
// it is visible (and never, if the test ends first).
func waitVisible(b *browsertest.Browser, sel string) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		if b.TryDo(b.Visible(sel)) == nil {
			close(ch)
		}
	}()
	return ch
}
