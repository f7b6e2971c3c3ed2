package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/principal"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type world struct {
	t      *testing.T
	c      *Console
	srv    *httptest.Server
	broker *approvals.Memory
	clock  *testClock
}

func newWorld(t *testing.T, o Options) *world {
	t.Helper()
	w := &world{t: t, broker: approvals.NewMemory(0), clock: &testClock{t: time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)}}
	if o.Broker == nil {
		o.Broker = w.broker
	}
	if o.now == nil {
		o.now = w.clock.now
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	w.c = c
	w.srv = httptest.NewServer(c.Handler())
	t.Cleanup(w.srv.Close)
	t.Cleanup(c.Close) // first: it ends the streams Close waits for
	return w
}

// client returns a browser-like client: a cookie jar, no redirects
// followed.
func (w *world) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// login uses a fresh one-time link for who and returns the client holding
// the session and the session's CSRF token.
func (w *world) login(who principal.Principal) (*http.Client, string) {
	w.t.Helper()
	cl := w.client()
	resp, err := cl.Get(w.srv.URL + w.c.NewLoginLink(who))
	if err != nil {
		w.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		w.t.Fatalf("login: %s", resp.Status)
	}
	page := w.get(cl, w.c.Prefix()+"approvals")
	m := regexp.MustCompile(`data-csrf="([0-9a-f]{64})"`).FindStringSubmatch(page)
	if m == nil {
		w.t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	return cl, m[1]
}

func (w *world) get(cl *http.Client, path string) string {
	w.t.Helper()
	resp, err := cl.Get(w.srv.URL + path)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		w.t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	return string(b)
}

// post sends a form as a same-origin browser would, with headers changed
// by edit.
func (w *world) post(cl *http.Client, path string, form url.Values, edit func(*http.Request)) (*http.Response, string) {
	w.t.Helper()
	req, _ := http.NewRequest("POST", w.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", w.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	if edit != nil {
		edit(req)
	}
	resp, err := cl.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// concrete fills a route's wildcards.
func concrete(path string) string {
	return strings.NewReplacer("{$}", "", "{id}", "0123", "{file}", "console.js").Replace(path)
}

func checkHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	h := resp.Header
	if got := h.Get("Content-Security-Policy"); got != csp {
		t.Errorf("%s: Content-Security-Policy = %q", what, got)
	}
	if !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("csp is not strict: %s", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("%s: headers %v", what, h)
	}
}

// TestEveryRouteNeedsSession enumerates the console's own route table: a
// route added later is covered without this test naming it.
func TestEveryRouteNeedsSession(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/console/", Tools: fakeTools{}, Installer: fakeInstaller{}, AuditPath: t.TempDir() + "/audit.jsonl", Tasks: nil})
	cl := w.client()
	public := 0
	for _, rt := range w.c.Routes() {
		path := concrete(rt.Path)
		var resp *http.Response
		var body string
		if rt.Method == "GET" {
			r, err := cl.Get(w.srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			resp, body = r, string(b)
		} else {
			resp, body = w.post(cl, path, url.Values{"csrf": {strings.Repeat("0", 64)}, "decision": {"approve"}}, nil)
		}
		checkHeaders(t, rt.Method+" "+path, resp)
		if rt.Public {
			public++
			continue
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a session: %s, want 401", rt.Method, path, resp.Status)
		}
		if strings.Contains(body, "data-csrf") {
			t.Errorf("%s %s without a session shows a page with a CSRF token", rt.Method, path)
		}
	}
	if public != 4 {
		t.Errorf("%d public routes, want 4 (login, oidc/start, oidc/callback, static): a new public route needs a reason", public)
	}
	// A path the table does not have: not found, with the same headers.
	resp, err := cl.Get(w.srv.URL + "/console/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	checkHeaders(t, "unknown path", resp)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %s", resp.Status)
	}
}

func TestLoginLinkWorksOnce(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/console/"})
	link := w.c.NewLoginLink(principal.Local)
	if !regexp.MustCompile(`^/console/login\?token=[0-9a-f]{64}$`).MatchString(link) {
		t.Fatalf("link %q: want a 256-bit hex token", link)
	}
	cl := w.client()
	resp, err := cl.Get(w.srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use: %s", resp.Status)
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	ck := cookies[0]
	if ck.Name != "warden-console" || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" || ck.Secure || len(ck.Value) != 64 {
		t.Errorf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/ (the prefix), 256-bit", ck)
	}
	w.get(cl, "/console/approvals")

	// The second use of the same link, from another browser: refused.
	other := w.client()
	resp, err = other.Get(w.srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || !strings.Contains(string(b), "already used, has expired") {
		t.Errorf("second use: %s %v\n%s", resp.Status, resp.Cookies(), b)
	}

	// An expired link is refused, and is gone even so.
	late := w.c.NewLoginLink(principal.Local)
	w.clock.add(DefaultLinkTTL)
	resp, _ = other.Get(w.srv.URL + late)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired link: %s", resp.Status)
	}
	// A token of the right shape nobody gave out.
	resp, _ = other.Get(w.srv.URL + "/console/login?token=" + strings.Repeat("a", 64))
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown token: %s", resp.Status)
	}
}

func TestCookieOverTLS(t *testing.T) {
	c, err := New(Options{Prefix: "/console/", TLS: true, Broker: approvals.NewMemory(0)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(c.Handler())
	defer srv.Close()
	cl := srv.Client()
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := cl.Get(srv.URL + c.NewLoginLink(principal.Local))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Cookies()
	if len(ck) != 1 || ck[0].Name != "__Host-warden-console" || !ck[0].Secure || ck[0].Path != "/" || ck[0].Domain != "" {
		t.Errorf("TLS session cookie %+v: want __Host- prefixed, Secure, Path=/, no Domain", ck)
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Error("no HSTS over TLS")
	}
}

func TestStateChangesNeedCSRFAndOrigin(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/console/"})
	cl, token := w.login(principal.Local)
	asked := w.ask(approvals.Request{Kind: approvals.Gate, Tool: "danger", Question: "Run danger?"})
	id := w.waitPending(1)[0].ID
	form := func(tok string) url.Values { return url.Values{"csrf": {tok}, "decision": {"approve"}} }
	for _, tc := range []struct {
		name string
		form url.Values
		edit func(*http.Request)
		want string
	}{
		{"no token", url.Values{"decision": {"approve"}}, nil, "CSRF token"},
		{"wrong token", form(strings.Repeat("0", 64)), nil, "CSRF token"},
		{"short token", form(token[:10]), nil, "CSRF token"},
		{"cross-origin", form(token), func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }, "is not this console's"},
		{"no Origin", form(token), func(r *http.Request) { r.Header.Del("Origin") }, "must carry an Origin"},
		{"cross-site fetch", form(token), func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, "may not change anything"},
		{"other scheme", form(token), func(r *http.Request) { r.Header.Set("Origin", strings.Replace(w.srv.URL, "http:", "https:", 1)) }, "is not this console's"},
	} {
		resp, body := w.post(cl, "/console/approvals/"+id, tc.form, tc.edit)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %s %q, want 403 naming %q", tc.name, resp.Status, body, tc.want)
		}
	}
	if n := len(w.pending()); n != 1 {
		t.Fatalf("a refused request decided: %d pending", n)
	}
	resp, body := w.post(cl, "/console/approvals/"+id, form(token), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Approved: danger.") {
		t.Fatalf("with token and Origin: %s\n%s", resp.Status, body)
	}
	d := <-asked
	if d.err != nil || !d.d.Approved || d.d.By != `subject "local"` || d.d.Persist {
		t.Errorf("decision %+v, %v", d.d, d.err)
	}
	// Another session's token does not do.
	_, other := w.login(principal.Local)
	asked = w.ask(approvals.Request{Kind: approvals.Gate, Tool: "danger"})
	id = w.waitPending(1)[0].ID
	resp, _ = w.post(cl, "/console/approvals/"+id, form(other), nil)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another session's token: %s", resp.Status)
	}
	w.broker.Decide(context.Background(), id, approvals.Decision{}, nil)
	<-asked
}

func TestWrongHostRefused(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/console/", Hosts: []string{"warden.example.com"}})
	cl, token := w.login(principal.Local)
	for _, rt := range w.c.Routes() {
		req, _ := http.NewRequest(rt.Method, w.srv.URL+concrete(rt.Path), strings.NewReader("csrf="+token))
		req.Host = "rebind.attacker.example:" + w.srv.Listener.Addr().(interface{ String() string }).String()[strings.LastIndex(w.srv.Listener.Addr().String(), ":")+1:]
		req.Header.Set("Origin", "http://"+req.Host)
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s %s with Host %s: %s, want 403", rt.Method, rt.Path, req.Host, resp.Status)
		}
		checkHeaders(t, "wrong host", resp)
	}
	// The configured name is allowed.
	req, _ := http.NewRequest("GET", w.srv.URL+"/console/approvals", nil)
	req.Host = "warden.example.com"
	u, _ := url.Parse(w.srv.URL + "/console/") // the cookie's path
	for _, ck := range cl.Jar.Cookies(u) {
		req.AddCookie(ck)
	}
	resp, err := w.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("configured host: %s", resp.Status)
	}
}

func TestSessionsBoundedAndExpire(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/", MaxSessionsPerSubject: 2, SessionTTL: time.Hour})
	first, _ := w.login(principal.Local)
	w.clock.add(time.Minute)
	second, _ := w.login(principal.Local)
	w.clock.add(time.Minute)
	w.login(principal.Local) // the person's share is full: their first session makes room
	if n := w.c.sessions.len(); n != 2 {
		t.Errorf("%d sessions, want the bound 2", n)
	}
	resp, _ := first.Get(w.srv.URL + "/approvals")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("evicted session: %s", resp.Status)
	}
	w.get(second, "/approvals")
	w.clock.add(time.Hour)
	resp, _ = second.Get(w.srv.URL + "/approvals")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired session: %s", resp.Status)
	}
	// Logging out ends the session server-side, not only the cookie.
	cl, token := w.login(principal.Local)
	var cookie *http.Cookie
	u, _ := url.Parse(w.srv.URL)
	for _, ck := range cl.Jar.Cookies(u) {
		cookie = ck
	}
	w.post(cl, "/logout", url.Values{"csrf": {token}}, nil)
	req, _ := http.NewRequest("GET", w.srv.URL+"/approvals", nil)
	req.AddCookie(cookie)
	resp, _ = w.client().Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a logged-out session's cookie replayed: %s", resp.Status)
	}
}

// TestApproverRightsFollowGroups: a person outside a request's approvers
// is told so and decides nothing; a member of a named group decides.
func TestApproverRightsFollowGroups(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/console/"})
	dev, devToken := w.login(principal.Principal{Subject: "dana", Via: principal.ViaOAuth, Groups: []string{"dev"}})
	ops, opsToken := w.login(principal.Principal{Subject: "olek", Via: principal.ViaOAuth, Groups: []string{"ops"}})
	asked := w.ask(approvals.Request{Kind: approvals.Permission, Tool: "deploy", Approvers: []string{approvals.GroupKey("", "ops")},
		Grant: "--- config.yaml\n+++ config.yaml\n+      net: [api.example.com]\n"})
	id := w.waitPending(1)[0].ID
	page := w.get(dev, "/console/approvals")
	if !strings.Contains(page, "You are not among this request's approvers.") || strings.Contains(page, `value="approve"`) {
		t.Errorf("dev's page offers a decision it cannot make:\n%s", page)
	}
	resp, body := w.post(dev, "/console/approvals/"+id, url.Values{"csrf": {devToken}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "You (dana) are not among this request&#39;s approvers: it names group &#34;ops&#34;, and your groups are dev.") {
		t.Errorf("dev decides: %s\n%s", resp.Status, body)
	}
	page = w.get(ops, "/console/approvals")
	if !strings.Contains(page, `<span class="add">&#43;      net: [api.example.com]</span>`) {
		t.Errorf("the grant diff is not shown line by line:\n%s", page)
	}
	resp, body = w.post(ops, "/console/approvals/"+id, url.Values{"csrf": {opsToken}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("ops decides: %s\n%s", resp.Status, body)
	}
	d := <-asked
	if !d.d.Approved || !d.d.Persist || d.d.By != `subject "olek"` {
		t.Errorf("decision %+v", d.d)
	}
	// Deciding again: the question is gone.
	resp, body = w.post(ops, "/console/approvals/"+id, url.Values{"csrf": {opsToken}, "decision": {"deny"}}, nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "no longer waiting") {
		t.Errorf("second decision: %s", resp.Status)
	}
}

func TestAlwaysIsForPermissions(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/"})
	cl, token := w.login(principal.Local)
	asked := w.ask(approvals.Request{Kind: approvals.Gate, Tool: "danger"})
	id := w.waitPending(1)[0].ID
	resp, body := w.post(cl, "/approvals/"+id, url.Values{"csrf": {token}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is for a permission") {
		t.Errorf("always on a gate: %s", resp.Status)
	}
	w.post(cl, "/approvals/"+id, url.Values{"csrf": {token}, "decision": {"deny"}}, nil)
	if d := <-asked; d.d.Approved || d.err != nil {
		t.Errorf("deny: %+v %v", d.d, d.err)
	}
}

type asked struct {
	d   approvals.Decision
	err error
}

// ask puts r to the broker as a waiting call does.
func (w *world) ask(r approvals.Request) <-chan asked {
	ch := make(chan asked, 1)
	go func() {
		d, err := w.broker.Ask(context.Background(), r)
		ch <- asked{d, err}
	}()
	return ch
}

func (w *world) pending() []approvals.Request {
	p, _ := w.broker.Pending(context.Background())
	return p
}

// waitPending waits until n questions wait, driven by the broker's own
// change notifications.
func (w *world) waitPending(n int) []approvals.Request {
	w.t.Helper()
	changes, cancel := w.broker.Subscribe()
	defer cancel()
	for {
		if p := w.pending(); len(p) == n {
			return p
		}
		select {
		case <-changes:
		case <-time.After(30 * time.Second):
			w.t.Fatalf("never %d pending", n)
		}
	}
}

type fakeTools struct{}

func (fakeTools) List(context.Context) (ToolList, error) { return ToolList{}, nil }
func (fakeTools) Grant(context.Context, GrantRequest, bool) (GrantResult, error) {
	return GrantResult{}, errors.New("no")
}

type fakeInstaller struct{}

func (fakeInstaller) Review(context.Context, string) (InstallReview, error) {
	return InstallReview{}, errors.New("no")
}
func (fakeInstaller) Install(context.Context, string, bool) (string, error) {
	return "", errors.New("no")
}

// TestLiveStreamsBounded: the live pages a console holds open at once are
// bounded (each is a goroutine and a connection); the Activity pages
// share one watch of the audit log, so each notices a write.
func TestLiveStreamsBounded(t *testing.T) {
	dir := t.TempDir()
	audit := dir + "/audit.jsonl"
	w := newWorld(t, Options{Prefix: "/", MaxSessions: 1, AuditPath: audit})
	cl, _ := w.login(principal.Local)
	open := func(path string) (*http.Response, *bufio.Reader) {
		resp, err := cl.Get(w.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return resp, nil
		}
		t.Cleanup(func() { resp.Body.Close() })
		br := bufio.NewReader(resp.Body)
		if line, _ := br.ReadString('\n'); line != "event: change\n" {
			t.Fatalf("first line %q", line)
		}
		br.ReadString('\n')
		br.ReadString('\n')
		return resp, br
	}
	var activity []*bufio.Reader
	for i := range maxStreamsPerSession {
		path := "/approvals/events"
		if i%2 == 0 {
			path = "/activity/events"
		}
		if _, br := open(path); br == nil {
			t.Fatalf("stream %d refused", i)
		} else if i%2 == 0 {
			activity = append(activity, br)
		}
	}
	if resp, br := open("/approvals/events"); br != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("stream past the bound: %s", resp.Status)
	}
	if err := os.WriteFile(audit, []byte(`{"event":"call"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, br := range activity {
		if line, err := br.ReadString('\n'); line != "event: change\n" {
			t.Errorf("activity page %d after a write: %q %v", i, line, err)
		}
	}
}

// sharedDown is a shared approvals backend that cannot be reached.
type sharedDown struct{}

func (sharedDown) Ask(context.Context, approvals.Request) (approvals.Decision, error) {
	return approvals.Decision{}, fmt.Errorf("%w: postgres://warden@db/approvals: connection refused", approvals.ErrUnavailable)
}
func (sharedDown) Pending(context.Context) ([]approvals.Request, error) {
	return nil, fmt.Errorf("%w: postgres://warden@db/approvals: connection refused", approvals.ErrUnavailable)
}
func (sharedDown) Decide(context.Context, string, approvals.Decision, []string) error {
	return fmt.Errorf("%w: postgres://warden@db/approvals: connection refused", approvals.ErrUnavailable)
}
func (sharedDown) Subscribe() (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

// TestLocalFallbackShown: with the shared backend down and
// on_backend_error: local, the questions waiting on this replica are
// listed (the backend's failure as a banner above them), and "Always" on
// one of them is checked against it and applied.
func TestLocalFallbackShown(t *testing.T) {
	local := approvals.NewMemory(0)
	f := &approvals.Fallback{Shared: sharedDown{}, Local: local, UseLocal: func() bool { return true }}
	w := newWorld(t, Options{Prefix: "/", Broker: f})
	w.broker = local
	ch := make(chan asked, 1)
	go func() {
		d, err := f.Ask(context.Background(), approvals.Request{Kind: approvals.Permission, Tool: "deploy", Grant: "+      net: [api.example.com]\n"})
		ch <- asked{d, err}
	}()
	id := w.waitPending(1)[0].ID
	cl, token := w.login(principal.Local)
	for _, path := range []string{"/approvals", "/approvals/list"} {
		page := w.get(cl, path)
		if !strings.Contains(page, `<p class="error" id="approvals-unavailable" role="alert">Some waiting questions cannot be listed: approvals backend unavailable: postgres://warden@db/approvals: connection refused</p>`) ||
			!strings.Contains(page, `id="request-`+id+`"`) || strings.Contains(page, "Nothing is waiting") {
			t.Errorf("%s with the shared backend down:\n%s", path, page)
		}
	}
	resp, body := w.post(cl, "/approvals/"+id, url.Values{"csrf": {token}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Approved: deploy.") {
		t.Fatalf("always: %s\n%s", resp.Status, body)
	}
	if d := <-ch; d.err != nil || !d.d.Approved || !d.d.Persist {
		t.Errorf("decision: %+v %v", d.d, d.err)
	}
}

// TestAlwaysNeedsAGrant: a permission whose question offers no grant
// (config would refuse it) shows no "Always", and an "Always" posted
// anyway is refused; approving once still works.
func TestAlwaysNeedsAGrant(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/"})
	cl, token := w.login(principal.Local)
	asked := w.ask(approvals.Request{Kind: approvals.Permission, Tool: "deploy"})
	id := w.waitPending(1)[0].ID
	if page := w.get(cl, "/approvals"); !strings.Contains(page, `value="approve"`) || strings.Contains(page, `value="always"`) {
		t.Errorf("the page offers “Always” without a grant:\n%s", page)
	}
	resp, body := w.post(cl, "/approvals/"+id, url.Values{"csrf": {token}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "is not offered for this permission: config would not take its grant") {
		t.Errorf("always without a grant: %s\n%s", resp.Status, body)
	}
	w.post(cl, "/approvals/"+id, url.Values{"csrf": {token}, "decision": {"approve"}}, nil)
	if d := <-asked; !d.d.Approved || d.d.Persist || d.err != nil {
		t.Errorf("approve: %+v %v", d.d, d.err)
	}
}
