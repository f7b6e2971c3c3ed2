package console

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/console/browsertest"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
)

// TestBrowserApproveAndActivity drives Chromium through the console: it
// logs in with the one-time link, sees a gate's question appear live in
// Approvals while a call waits on the broker, approves it in the page (the
// waiting Ask returns the approval), then sees a denial appear live in
// Activity and filters for it, and cancels a task. Screenshots of each page go to the
// artifact directory (browsertest.ArtifactDir).
//
// The broker is driven directly (Memory.Ask stands for the gate path);
// e2e/serve's TestConsoleApprovesGateOfClientWithoutElicitation runs the
// same with a real server and a client without elicitation.
func TestBrowserApproveAndActivity(t *testing.T) {
	b := browsertest.New(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	metrics := observe.NewMetrics(observe.Sources{InstanceMemory: func() (used, peak, limit uint64) { return 3 << 20, 5 << 20, 256 << 20 }})
	store := &ownerStore{all: []tasks.Task{{ID: "t-1", Owner: tasks.OwnerOf(principal.Local, ""), Tool: "build", Status: tasks.Working, StatusMessage: "compiling 3/9", Created: time.Now(), Updated: time.Now()}}}
	w := newWorld(t, Options{Prefix: "/console/", AuditPath: audit, Metrics: metrics.Registry(), Tasks: store, now: time.Now})
	aud, err := observe.OpenAudit(observe.AuditOptions{Path: audit})
	if err != nil {
		t.Fatal(err)
	}
	defer aud.Close()
	rec := observe.New(observe.Options{Audit: aud, Metrics: metrics})

	// Log in: the link leads to Approvals, with the session's cookie.
	b.Do(chromedp.Navigate(w.srv.URL+w.c.NewLoginLink(principal.Local)),
		b.Visible("#no-approvals"))
	if who := b.Text("#who"); who != "local" {
		t.Errorf("logged in as %q", who)
	}
	// The live list is connected before the question is asked, so it can
	// only appear through the event stream.
	b.Do(b.Visible(`body[data-live="open"]`))
	b.Screenshot("approvals-empty")

	asked := w.ask(approvals.Request{ID: "gate1", Kind: approvals.Gate, Tool: "deploy", Module: "deploy",
		Digest: strings.Repeat("ab", 32), Arguments: `{"env":"prod"}`, Question: "Deploy to prod?", Principal: "local",
		Created: time.Now(), Deadline: time.Now().Add(10 * time.Minute)})
	b.Do(b.Visible("#request-gate1"))
	if q := b.Text("#request-gate1 .question"); q != "Deploy to prod?" {
		t.Errorf("question shown: %q", q)
	}
	if args := b.Text("#request-gate1 .arguments"); args != `{"env":"prod"}` {
		t.Errorf("arguments shown: %q", args)
	}
	b.Screenshot("approvals-pending")
	b.Do(chromedp.Click(chromedp.CSS("#request-gate1 button.approve")),
		b.Visible("#notice"))
	if n := b.Text("#notice"); n != "Approved: deploy." {
		t.Errorf("notice %q", n)
	}
	d := <-asked
	if d.err != nil || !d.d.Approved || d.d.By != `subject "local"` || d.d.Persist {
		t.Fatalf("the waiting call got %+v, %v", d.d, d.err)
	}
	b.Screenshot("approvals-approved")

	// Activity: a call and a denial, the denial written after the page's
	// stream is open.
	ctx := rec.CallStarted(principal.With(context.Background(), principal.Local), observe.CallStart{Method: "tools/call", Tool: "fetch", Module: "fetch", Known: true})
	rec.CallEnded(ctx, observe.CallEnd{Kind: "ok", Fuel: 12345, Duration: 3 * time.Millisecond})
	b.Do(chromedp.Navigate(w.srv.URL+"/console/activity"),
		b.Visible(`body[data-live="open"]`),
		b.Visible("#chart-calls svg"))
	rec.CapabilityUse(principal.With(context.Background(), principal.Local), observe.Use{Capability: "net", Tool: "fetch", Module: "fetch",
		Op: "get", Host: "evil.example", Denied: true, Reason: "net: evil.example is not granted"})
	b.Do(b.Visible(`#activity tr.line[data-decision="deny"][data-tool="fetch"]`))
	if mem := b.Text("#chart-memory"); !strings.Contains(mem, "used") || !strings.Contains(mem, "3 MiB") || !strings.Contains(mem, "256 MiB") {
		t.Errorf("instance memory chart: %q", mem)
	}
	if calls := b.Text("#chart-calls"); !strings.Contains(calls, "fetch") {
		t.Errorf("calls chart: %q", calls)
	}
	b.Screenshot("activity")

	// Filtered to denials: the allowed call's line is gone.
	b.Do(chromedp.Navigate(w.srv.URL+"/console/activity?decision=deny"),
		b.Visible(`#activity tr.line[data-decision="deny"]`))
	allowed := browsertest.Get(b, chromedp.Evaluate[int](`document.querySelectorAll('#activity tr.line[data-decision="allow"]').length`))
	if allowed != 0 {
		t.Errorf("filtered on deny, %d allowed lines shown", allowed)
	}
	b.Screenshot("activity-denials")

	// Tasks: the person's own, cancelled from the page.
	b.Do(chromedp.Navigate(w.srv.URL+"/console/tasks"), b.Visible(`#tasks tr[data-task="t-1"]`))
	b.Screenshot("tasks")
	b.Do(chromedp.Click(chromedp.CSS(`#tasks tr[data-task="t-1"] button`)), b.Visible("#notice"))
	if !store.cancelRequested(0) {
		t.Error("the task's cancellation was not requested")
	}
}

// TestBrowserOIDCLogin: a real browser logs in through the provider, on
// another site than the console (localhost against 127.0.0.1), so the
// provider's redirect back is a cross-site navigation: the Lax state cookie
// follows it, and the Strict session cookie is sent from the next, same-site
// navigation on: the callback's page refreshes to the console. The person then decides a question their group may.
func TestBrowserOIDCLogin(t *testing.T) {
	b := browsertest.New(t)
	p := newProvider(t)
	p.issuer = strings.Replace(p.srv.URL, "127.0.0.1", "localhost", 1)
	w := oidcWorld(t, p, "groups")
	p.loginAs(map[string]any{"sub": "alice", "groups": []string{"ops"}})

	b.Do(chromedp.Navigate(w.srv.URL+"/console/approvals"), b.Visible("#oidc-login"))
	b.Screenshot("oidc-login")
	// The callback's page moves on by itself (a same-site navigation).
	b.Do(chromedp.Click(chromedp.CSS("#oidc-login")), b.Visible("#no-approvals"))
	if who := b.Text("#who"); who != "alice ("+p.issuer+") · ops" {
		t.Errorf("logged in as %q", who)
	}
	b.Do(b.Visible(`body[data-live="open"]`))
	asked := w.ask(approvals.Request{ID: "q1", Kind: approvals.Gate, Tool: "deploy", Approvers: []string{approvals.GroupKey(p.issuer, "ops")}, Question: "Deploy?"})
	b.Do(b.Visible("#request-q1"), chromedp.Click(chromedp.CSS("#request-q1 button.approve")), b.Visible("#notice"))
	if d := <-asked; !d.d.Approved || d.d.By != approvals.SubjectKey(p.issuer, "alice") {
		t.Errorf("decision %+v", d.d)
	}
	b.Screenshot("oidc-approved")
}
