package console

// Tests of the security review's findings (issue 34): each fails without
// its fix.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/principal"
)

// sessionClient opens a session for who directly (an OpenID login's, with
// admin as given) and returns a client holding its cookie and its CSRF
// token.
func (w *world) sessionClient(who principal.Principal, admin bool) (*http.Client, *session) {
	w.t.Helper()
	s, err := w.c.sessions.open(who, admin)
	if err != nil {
		w.t.Fatal(err)
	}
	cl := w.client()
	u, _ := url.Parse(w.srv.URL + w.c.Prefix())
	cl.Jar.SetCookies(u, []*http.Cookie{{Name: w.c.cookieName(), Value: s.id, Path: w.c.cookiePath()}})
	return cl, s
}

// TestLoopbackConsoleUnderRandomPrefix (finding 1): a loopback console is
// served under a random 128-bit path per launch and its session cookie is
// scoped to that path. Another server on the same host, which the browser
// sends the cookie to (cookies ignore ports), finds nothing without the
// path, even holding the cookie.
func TestLoopbackConsoleUnderRandomPrefix(t *testing.T) {
	p1, p2 := RandomPrefix("/"), RandomPrefix("/console/")
	if !regexp.MustCompile(`^/[0-9a-f]{32}/$`).MatchString(p1) || !regexp.MustCompile(`^/console/[0-9a-f]{32}/$`).MatchString(p2) || RandomPrefix("/") == p1 {
		t.Fatalf("prefixes %q %q: want 128 random bits per call", p1, p2)
	}
	w := newWorld(t, Options{Prefix: p1, SessionTTL: LocalSessionTTL})
	link := w.c.NewLoginLink(principal.Local)
	if !strings.HasPrefix(link, p1+"login?token=") {
		t.Fatalf("link %q is not under the prefix", link)
	}
	cl := w.client()
	resp, err := cl.Get(w.srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ck := resp.Cookies()
	if len(ck) != 1 || ck[0].Path != p1 {
		t.Fatalf("session cookie %+v: want Path %s", ck, p1)
	}
	w.get(cl, p1+"approvals")
	// The cookie as the other server received it, on the paths it can guess.
	for _, path := range []string{"/", "/approvals", "/tools", "/login?token=" + strings.Repeat("a", 64), "/static/console.js"} {
		req, _ := http.NewRequest("GET", w.srv.URL+path, nil)
		req.AddCookie(ck[0])
		resp, err := w.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "data-csrf") {
			t.Errorf("GET %s without the prefix: %s\n%s", path, resp.Status, b)
		}
	}
	// The local session is the short one.
	w.clock.add(LocalSessionTTL)
	resp, _ = cl.Get(w.srv.URL + p1 + "approvals")
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a local session after %s: %s", LocalSessionTTL, resp.Status)
	}
}

// TestOIDCStartKeepsNoServerState (finding 2): a flood of unauthenticated
// oidc/start requests (GET and HEAD), more than the old 256-entry table,
// leaves nothing on the server, and a real login afterwards succeeds.
func TestOIDCStartKeepsNoServerState(t *testing.T) {
	p := newProvider(t)
	w := oidcWorld(t, p, "")
	for i := range 600 {
		method := "GET"
		if i%2 == 1 {
			method = "HEAD"
		}
		req, _ := http.NewRequest(method, w.srv.URL+"/console/oidc/start", nil)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Fatalf("start %d (%s): %s", i, method, resp.Status)
		}
	}
	p.loginAs(map[string]any{"sub": "alice"})
	_, status, page := oidcLogin(t, w)
	if status != http.StatusOK || !strings.Contains(page, `id="continue"`) {
		t.Fatalf("a real login after 600 starts: %d\n%s", status, page)
	}
	// A flow cookie this console did not seal (or one altered) is refused.
	o := w.c.opts.OIDC
	good := o.seal(pendingLogin{State: "s", Nonce: "n", Verifier: "v", Expires: time.Now().Add(time.Minute).Unix()})
	if got, ok := o.open(good); !ok || got.State != "s" {
		t.Fatalf("own flow cookie: %+v %v", got, ok)
	}
	bad := []byte(good)
	bad[len(bad)/2] ^= 1
	for _, v := range []string{string(bad), "", "x", strings.Repeat("A", 40)} {
		if _, ok := o.open(v); ok {
			t.Errorf("flow cookie %q opened", v)
		}
	}
	other := &OIDC{Issuer: "https://i", ClientID: "c", RedirectURL: "https://r", ClientSecret: "another"}
	if err := other.init(); err != nil {
		t.Fatal(err)
	}
	if _, ok := other.open(good); ok {
		t.Error("a flow cookie opened under another key")
	}
	// Replicas sharing the client secret open each other's cookies.
	twin := &OIDC{Issuer: "https://i", ClientID: "c", RedirectURL: "https://r", ClientSecret: testClientSecret}
	if err := twin.init(); err != nil {
		t.Fatal(err)
	}
	if _, ok := twin.open(good); !ok {
		t.Error("a replica with the same client secret does not open the flow cookie")
	}
}

// TestSessionsBoundedPerPerson (finding 3): one account logging in again
// and again evicts only its own sessions (at most MaxSessionsPerSubject);
// a full table refuses a new person's login instead of ending someone
// else's session.
func TestSessionsBoundedPerPerson(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/console/", MaxSessions: 20})
	admin, _ := w.sessionClient(principal.Principal{Subject: "root", Issuer: "https://idp", Via: principal.ViaOAuth}, true)
	mallory := principal.Principal{Subject: "mallory", Issuer: "https://idp", Via: principal.ViaOAuth}
	for range 500 {
		w.clock.add(time.Second)
		if _, err := w.c.sessions.open(mallory, false); err != nil {
			t.Fatalf("mallory's own logins: %v", err)
		}
	}
	if n := w.c.sessions.len(); n != 1+DefaultMaxSessionsPerSubject {
		t.Errorf("%d sessions, want the admin's and mallory's %d", n, DefaultMaxSessionsPerSubject)
	}
	w.get(admin, "/console/approvals")
	// The same subject at another issuer is another person.
	w.c.sessions.open(principal.Principal{Subject: "mallory", Issuer: "https://other", Via: principal.ViaOAuth}, false)
	if n := w.c.sessions.len(); n != 2+DefaultMaxSessionsPerSubject {
		t.Errorf("%d sessions after another issuer's mallory", n)
	}
	// Fill the table with other people; the next person is refused.
	for i := w.c.sessions.len(); i < 20; i++ {
		if _, err := w.c.sessions.open(principal.Principal{Subject: "p" + string(rune('a'+i)), Via: principal.ViaOAuth}, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.c.sessions.open(principal.Principal{Subject: "late", Via: principal.ViaOAuth}, false); err != errSessionsFull {
		t.Errorf("a login past the bound: %v, want errSessionsFull", err)
	}
	w.get(admin, "/console/approvals")
}

// openStream opens a live stream and reads its first event.
func openStream(t *testing.T, w *world, cl *http.Client, path string) (*http.Response, *bufio.Reader) {
	t.Helper()
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

// ended reads a stream to its end: true when the server closed it, false
// when it is still open after 30 s (the failure; the test's cleanup closes
// it).
func ended(br *bufio.Reader) bool {
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil
	case <-time.After(30 * time.Second):
		return false
	}
}

// TestStreamsPerSessionEndWithSession (finding 4): the stream bound is
// per session (a second session opens its own), and a stream ends when
// its session does: at logout at once, at expiry on the next event or
// the periodic check.
func TestStreamsPerSessionEndWithSession(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/", SessionTTL: time.Hour})
	a, aToken := w.login(principal.Local)
	var aStreams []*bufio.Reader
	for i := range maxStreamsPerSession {
		_, br := openStream(t, w, a, "/approvals/events")
		if br == nil {
			t.Fatalf("stream %d refused", i)
		}
		aStreams = append(aStreams, br)
	}
	if resp, br := openStream(t, w, a, "/approvals/events"); br != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a's stream past its bound: %s", resp.Status)
	}
	b, _ := w.login(principal.Principal{Subject: "b", Via: principal.ViaOAuth})
	_, bStream := openStream(t, w, b, "/approvals/events")
	if bStream == nil {
		t.Fatal("b's first stream refused: the bound is not per session")
	}

	// Logout ends a's streams at once, without an event.
	w.post(a, "/logout", url.Values{"csrf": {aToken}}, nil)
	for i, br := range aStreams {
		if !ended(br) {
			t.Errorf("a's stream %d outlived the logout", i)
		}
	}
	// Expiry: b's stream ends on the next event, not sending it.
	w.clock.add(time.Hour)
	asked := w.ask(approvals.Request{Kind: approvals.Gate, Tool: "x"})
	if !ended(bStream) {
		t.Error("b's stream outlived its session")
	}
	id := w.waitPending(1)[0].ID
	w.broker.Decide(t.Context(), id, approvals.Decision{}, nil)
	<-asked

	// Expiry without any event: the periodic check ends the stream.
	w.c.streamCheck = time.Millisecond
	c, _ := w.login(principal.Local)
	_, cStream := openStream(t, w, c, "/approvals/events")
	w.clock.add(time.Hour)
	if !ended(cStream) {
		t.Error("c's stream outlived its session with no event")
	}
	w.c.streams.mu.Lock()
	n := len(w.c.streams.n)
	w.c.streams.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sessions still counted as streaming", n)
	}
}

// TestActivityReadsShared (finding 4): many Activity lists fetched after
// one write read the audit file once; a write makes the next fetch read
// it again.
func TestActivityReadsShared(t *testing.T) {
	audit := t.TempDir() + "/audit.jsonl"
	if err := os.WriteFile(audit, []byte(`{"event":"call","tool":"one"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, Options{Prefix: "/", AuditPath: audit})
	cl, _ := w.login(principal.Local)
	for range 20 {
		if page := w.get(cl, "/activity/list"); !strings.Contains(page, "one") {
			t.Fatalf("list without the line:\n%s", page)
		}
	}
	if n := w.c.auditTail.reads; n != 1 {
		t.Errorf("20 lists read the audit file %d times, want 1", n)
	}
	f, _ := os.OpenFile(audit, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"event":"call","tool":"two"}` + "\n")
	f.Close()
	for range 20 {
		if page := w.get(cl, "/activity/list?tool=two"); !strings.Contains(page, "two") {
			t.Fatalf("list without the new line:\n%s", page)
		}
	}
	if n := w.c.auditTail.reads; n != 2 {
		t.Errorf("after one write, %d reads, want 2", n)
	}
}

// TestActivityShowsTaskStatus: a task_status audit line (a task entering
// input_required) is listed with the change and what it asks.
func TestActivityShowsTaskStatus(t *testing.T) {
	audit := t.TempDir() + "/audit.jsonl"
	line := `{"event":"task_status","tool":"build","who":"alice","method":"tools/call","target":"t1","from":"working","outcome":"input_required","requests":"elicitation/create=2"}`
	if err := os.WriteFile(audit, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, Options{Prefix: "/", AuditPath: audit})
	cl, _ := w.login(principal.Local)
	page := w.get(cl, "/activity/list?tool=build")
	if !strings.Contains(page, "task_status") || !strings.Contains(page, "task t1: working → input_required, asks elicitation/create=2") {
		t.Errorf("the list without the task's status change:\n%s", page)
	}
}

// TestHeadDoesNotSpendLoginLink (finding 5): a HEAD of the login link (a
// link preview, a prefetcher) is refused and leaves the link usable.
func TestHeadDoesNotSpendLoginLink(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/"})
	link := w.c.NewLoginLink(principal.Local)
	req, _ := http.NewRequest("HEAD", w.srv.URL+link, nil)
	resp, err := w.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || len(resp.Cookies()) != 0 || resp.Header.Get("Allow") != "GET" {
		t.Errorf("HEAD of the link: %s %v", resp.Status, resp.Cookies())
	}
	resp, err = w.client().Get(w.srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("the link after a HEAD: %s", resp.Status)
	}
}

// TestAlwaysNeedsAdminAndAKnownPermission (finding 6): "always" writes a
// grant: a person who is not a console admin is refused, and so is an
// "always" for a question the console cannot see (it could be a gate).
func TestAlwaysNeedsAdminAndAKnownPermission(t *testing.T) {
	w := newWorld(t, Options{Prefix: "/"})
	dev, devSession := w.sessionClient(principal.Principal{Subject: "dana", Via: principal.ViaOAuth}, false)
	asked := w.ask(approvals.Request{Kind: approvals.Permission, Tool: "deploy", Grant: "+ net"})
	id := w.waitPending(1)[0].ID
	resp, body := w.post(dev, "/approvals/"+id, url.Values{"csrf": {devSession.csrf}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "writes a grant, which is for the console&#39;s admins") {
		t.Errorf("always by a non-admin: %s\n%s", resp.Status, body)
	}
	if len(w.pending()) != 1 {
		t.Fatal("the refused always decided the question")
	}
	// Once is theirs to approve.
	resp, _ = w.post(dev, "/approvals/"+id, url.Values{"csrf": {devSession.csrf}, "decision": {"approve"}}, nil)
	if d := <-asked; resp.StatusCode != http.StatusOK || !d.d.Approved || d.d.Persist {
		t.Errorf("approve once by a non-admin: %s %+v", resp.Status, d.d)
	}

	// An admin's "always" for an id the console does not see waiting (a
	// gate may be behind it, or Pending failed): refused, nothing decided.
	admin, token := w.login(principal.Local)
	gate := w.ask(approvals.Request{Kind: approvals.Gate, Tool: "danger"})
	gid := w.waitPending(1)[0].ID
	resp, body = w.post(admin, "/approvals/"+gid+"x", url.Values{"csrf": {token}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "not among the waiting ones") {
		t.Errorf("always for an unknown id: %s\n%s", resp.Status, body)
	}
	failing := &failingPending{Memory: w.broker}
	w2 := newWorld(t, Options{Prefix: "/", Broker: failing})
	admin2, s2 := w2.sessionClient(principal.Local, true)
	resp, body = w2.post(admin2, "/approvals/"+gid, url.Values{"csrf": {s2.csrf}, "decision": {"always"}}, nil)
	if resp.StatusCode != http.StatusConflict || len(w.pending()) != 1 {
		t.Errorf("always while Pending fails: %s\n%s", resp.Status, body)
	}
	w.broker.Decide(t.Context(), gid, approvals.Decision{}, nil)
	if d := <-gate; d.d.Approved || d.d.Persist {
		t.Errorf("gate decided %+v", d.d)
	}
}

// failingPending is a broker whose Pending fails (a database away).
type failingPending struct{ *approvals.Memory }

func (failingPending) Pending(context.Context) ([]approvals.Request, error) {
	return nil, errors.New("the database is unreachable")
}

// TestAdminSubjectsAndGroupsApart (finding 8): a group named like an
// admin's subject does not make its members admins, nor a subject named
// like an admin group.
func TestAdminSubjectsAndGroupsApart(t *testing.T) {
	p := newProvider(t)
	w := oidcWorld(t, p, "")
	w.c.opts.OIDC.AdminSubjects = []string{"root"}
	cases := []struct {
		claims map[string]any
		admin  bool
	}{
		{map[string]any{"sub": "eve", "groups": []string{"root"}}, false},
		{map[string]any{"sub": "platform", "groups": []string{"dev"}}, false},
		{map[string]any{"sub": "root"}, true},
		{map[string]any{"sub": "pat", "groups": []string{"platform"}}, true},
	}
	for _, tc := range cases {
		p.loginAs(tc.claims)
		cl, status, _ := oidcLogin(t, w)
		if status != http.StatusOK {
			t.Fatalf("%v: login %d", tc.claims, status)
		}
		page := w.get(cl, "/console/tools")
		if got := strings.Contains(page, `id="grant-form"`); got != tc.admin {
			t.Errorf("%v: admin %v, want %v", tc.claims, got, tc.admin)
		}
	}
}

// TestProviderErrorShownOnlyAsKnownCode (finding 9): the failed-login
// page names the provider's error only when it is an OAuth error code;
// any other text in the parameter is not shown.
func TestProviderErrorShownOnlyAsKnownCode(t *testing.T) {
	p := newProvider(t)
	w := oidcWorld(t, p, "")
	get := func(q string) string {
		resp, err := w.client().Get(w.srv.URL + "/console/oidc/callback?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %s", q, resp.Status)
		}
		return string(b)
	}
	if b := get("error=login_required&state=x"); !strings.Contains(b, "Login failed: the provider answered login_required. Start again.") {
		t.Errorf("known code:\n%s", b)
	}
	b := get("error=" + url.QueryEscape("Your account is locked; call +1-555-0100 to restore it") + "&state=x")
	if strings.Contains(b, "555") || strings.Contains(b, "locked") || !strings.Contains(b, "Login failed: the provider answered an error. Start again.") {
		t.Errorf("free text shown:\n%s", b)
	}
}

// TestPublicOriginBehindSameMachineProxy (finding 10): behind a reverse
// proxy on the same machine, serve requires a loopback Host, so the
// browser's Origin (the public name) is not the Host. The console's
// configured public origin is accepted for it; any other is not.
func TestPublicOriginBehindSameMachineProxy(t *testing.T) {
	for _, configured := range []string{"", "https://warden.example.com"} {
		w := newWorld(t, Options{Prefix: "/console/", Origin: configured})
		cl, token := w.login(principal.Local)
		for origin, want := range map[string]bool{
			"https://warden.example.com":      configured != "",
			"https://warden.example.com:8443": false,
			"http://warden.example.com":       false,
			"https://evil.example":            false,
		} {
			resp, body := w.post(cl, "/console/tools/grant", url.Values{"csrf": {token}}, func(r *http.Request) { r.Header.Set("Origin", origin) })
			if got := resp.StatusCode != http.StatusForbidden; got != want {
				t.Errorf("configured %q, Origin %s: %s, want allowed %v\n%s", configured, origin, resp.Status, want, body)
			}
		}
	}
}
