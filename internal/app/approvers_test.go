package app

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/pgtest"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/tool"
)

// gateApprovers is a confirm gate whose tool names its approvers: the
// members of group release at id.example.com.
const gateApprovers = confirmGate + `
server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  roles:
    releasers:
      groups: [release]
      approve: [hostcalls]
`

const approverIssuer = "https://id.example.com"

// TestGateApproversNotTheCaller: when config names who may confirm a
// tool (access.roles.<role>.approve), a caller outside them is never asked
// through their own client, which would let them confirm their own call:
// without a console the call is refused saying so; with one, the question
// waits there for an approver, whom the broker checks with the issuer; an
// approver calling is asked through elicitation as before.
func TestGateApproversNotTheCaller(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, gateApprovers)
	eve := principal.With(context.Background(), principal.Principal{Subject: "eve", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"dev"}})
	rita := principal.With(context.Background(), principal.Principal{Subject: "rita", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"release"}})
	callAs := func(ctx context.Context, c tool.Client) *tool.Result {
		t.Helper()
		res, err := tryGateCall(w, ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// No console: eve's own "accept" is never asked for; refused, saying
	// why (the role whose approve list names the tool), whether or not
	// her client could have asked.
	notAmong := "tool hostcalls runs only after a person confirms it (tools.gates.hostcalls), and only its approvers may confirm it: " +
		"the caller eve is not among them (access.roles.releasers.approve names hostcalls)"
	allow := "; to let it run without asking, set tools.gates.hostcalls.action: allow in " + w.cfgPath
	for _, elicit := range []bool{true, false} {
		p := &person{elicit: elicit, answers: []string{"accept"}}
		res := callAs(eve, p)
		if want := notAmong + ", and no console serves the question to an approver (approvals.via)" + allow; !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) ||
			res.Error.Message != want {
			t.Fatalf("eve without a console (elicit %v): %+v\nwant %s", elicit, res.Error, want)
		}
		if q := p.questions(); len(q) != 0 {
			t.Fatalf("eve was asked %d questions about her own gated call", len(q))
		}
	}

	// An approver calling is asked as before.
	p := &person{elicit: true, answers: []string{"accept"}}
	if res := callAs(rita, p); res.IsError || !ran(res) || len(p.questions()) != 1 {
		t.Fatalf("rita: %+v, %d questions", res.Error, len(p.questions()))
	}

	// With a console: eve's call waits there; the question names the
	// approvers with their issuer; a dev cannot decide, a releaser can.
	w.app.ConsoleServes()
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	p = &person{elicit: true, answers: []string{"accept"}}
	end := inBackground(func() (*tool.Result, error) { return tryGateCall(w, eve, p) })
	r := waitQuestions(t, b, changes, 1, end.ended)[0]
	if want := []string{approvals.GroupKey(approverIssuer, "release")}; len(r.Approvers) != 1 || r.Approvers[0] != want[0] {
		t.Fatalf("approvers %q, want %q", r.Approvers, want)
	}
	devBy, devGroups := approvals.Decider(principal.Principal{Subject: "dan", Issuer: approverIssuer, Groups: []string{"dev"}})
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: devBy}, devGroups); !errors.Is(err, approvals.ErrNotYours) {
		t.Fatalf("a dev decides: %v, want ErrNotYours", err)
	}
	// The same group name at another issuer is not the role's group.
	otherBy, otherGroups := approvals.Decider(principal.Principal{Subject: "rita", Issuer: "https://evil.example.com", Groups: []string{"release"}})
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: otherBy}, otherGroups); !errors.Is(err, approvals.ErrNotYours) {
		t.Fatalf("release at another issuer decides: %v, want ErrNotYours", err)
	}
	ritaBy, ritaGroups := approvals.Decider(principal.Principal{Subject: "rita", Issuer: approverIssuer, Groups: []string{"release"}})
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: ritaBy}, ritaGroups); err != nil {
		t.Fatal(err)
	}
	if res := end.result(t); res.IsError || !ran(res) {
		t.Fatalf("approved by rita: %+v", res.Error)
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("eve was asked %d questions with a console serving", len(q))
	}

	// Denied in the console: the refusal says the question waited there
	// for an approver, and who denied it.
	end = inBackground(func() (*tool.Result, error) { return tryGateCall(w, eve, p) })
	r = waitQuestions(t, b, changes, 1, end.ended)[0]
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: false, By: ritaBy}, ritaGroups); err != nil {
		t.Fatal(err)
	}
	want := notAmong + ", so it waited in the console for an approver; denied in the console by " + ritaBy + "; nothing ran" + allow
	if res := end.result(t); !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) || res.Error.Message != want {
		t.Fatalf("denied by rita: %+v\nwant %s", res.Error, want)
	}
}

// TestPromptApproversNotTheCaller: a permission prompt of a tool whose
// approvers config names is not put to a caller outside them, even through
// a client that can elicit (they would grant their own call): without a
// console the denial says why, naming the role whose approve list would
// have them asked; with one, the question waits there for an approver,
// and a question nobody answers says so. An approver calling is asked as
// before. The guest reads HOME at start (requested, not granted): that
// read is the prompt.
func TestPromptApproversNotTheCaller(t *testing.T) {
	w := newEscapeWorld(t)
	// approvers is the config, with tools' extra lines after the grant.
	approvers := func(extra string) string {
		return "    hostcalls: {fs: {read: [docs/readme.md]}}\n" + extra + `server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  roles:
    releasers:
      groups: [release]
      approve: [hostcalls]
`
	}
	w.setGrants(t, approvers(""))
	// callAs returns the env read's outcome: HOME, denied or prompted.
	callAs := func(ctx context.Context, c tool.Client) outcome {
		t.Helper()
		return w.callEnv(t, ctx, c, nil)
	}
	const denied = `env: key "HOME" is not granted to tool "hostcalls" (config key tools.grants.hostcalls.env)`
	const grant = " (warden grant hostcalls env=HOME)"
	notAmong := "only the approvers of tool hostcalls may grant it: the caller eve is not among them (access.roles.releasers.approve names hostcalls)"
	eve := principal.With(context.Background(), principal.Principal{Subject: "eve", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"dev"}})
	p := &person{elicit: true, answers: []string{"accept:once"}}
	env := callAs(eve, p)
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("eve, outside the approvers, was asked %d questions: %s", len(q), q[0].Params)
	}
	want := denied + " (not put to the person: " + notAmong + ", and no console serves the question to an approver (approvals.via))" + grant
	if env.Error == nil || env.Error.Kind != tool.KindDenied || env.Error.Message != want {
		t.Fatalf("eve without a console: %+v\nwant %s", env.Error, want)
	}
	rita := principal.With(context.Background(), principal.Principal{Subject: "rita", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"release"}})
	p = &person{elicit: true, answers: []string{"accept:once"}}
	callAs(rita, p)
	if q := p.questions(); len(q) != 1 || !strings.Contains(string(q[0].Params), "HOME") {
		t.Fatalf("rita, an approver: %d questions %+v, want one, about env HOME", len(q), q)
	}

	// With a console, client_wait over as the question is asked: it waits
	// for an approver and expires on the broker's own deadline.
	w.app.ConsoleServes()
	w.setGrants(t, approvers("  defaults:\n    client_wait: 1ns\n"))
	p = &person{elicit: true, answers: []string{"accept:once"}}
	env = callAs(eve, p)
	want = denied + " (" + notAmong + ", so it waited in the console for an approver; nobody answered in the console within 1ns (tools.defaults.client_wait))" + grant
	if env.Error == nil || env.Error.Kind != tool.KindDenied || env.Error.Message != want || len(p.questions()) != 0 {
		t.Fatalf("eve with a console: %+v, %d questions\nwant %s", env.Error, len(p.questions()), want)
	}

	// Denied in the console by an approver: the denial says why eve was
	// not asked, as a gate's refusal does, and who denied it.
	w.setGrants(t, approvers(""))
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	end := inBackground(func() (outcome, error) { return tryCallEnv(w, eve, p, nil) })
	r := waitQuestions(t, b, changes, 1, end.ended)[0]
	ritaBy, ritaGroups := approvals.Decider(principal.Principal{Subject: "rita", Issuer: approverIssuer, Groups: []string{"release"}})
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: false, By: ritaBy}, ritaGroups); err != nil {
		t.Fatal(err)
	}
	want = denied + " (" + notAmong + ", so it waited in the console for an approver; denied in the console by " + ritaBy + ")" + grant
	if env := end.result(t); env.Error == nil || env.Error.Kind != tool.KindDenied || env.Error.Message != want || len(p.questions()) != 0 {
		t.Fatalf("denied in the console: %+v\nwant %s", env.Error, want)
	}
}

// TestApproverQuestionRefusedAtOnce: a caller outside a tool's approvers
// whose question the console refuses at once (too many waiting, the
// database unreachable) is told why, never that it waited for an
// approver; and the approve entry the refusal quotes is the one config
// writes, here a pattern (host*), not the tool's name.
func TestApproverQuestionRefusedAtOnce(t *testing.T) {
	patterned := strings.Replace(gateApprovers, "approve: [hostcalls]", "approve: [host*]", 1)
	eve := principal.With(context.Background(), principal.Principal{Subject: "eve", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"dev"}})
	rita := principal.With(context.Background(), principal.Principal{Subject: "rita", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"release"}})
	head := "tool hostcalls runs only after a person confirms it (tools.gates.hostcalls), and only its approvers may confirm it: " +
		"the caller eve is not among them (access.roles.releasers.approve names host*)"

	// Too many waiting: rita's own question (her client cannot ask) fills
	// the console.
	w := newEscapeWorld(t)
	w.restart(t, "approvals:\n  max_pending: 1\n")
	w.app.ConsoleServes()
	w.setGrants(t, patterned)
	allow := "; to let it run without asking, set tools.gates.hostcalls.action: allow in " + w.cfgPath
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	first := gateCallInBackground(w, rita)
	r := waitQuestions(t, b, changes, 1, first.ended)[0]
	res, err := tryGateCall(w, eve, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := head + "; the console has too many questions waiting (approvals.max_pending: 1); nothing ran" + allow; !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) || res.Error.Message != want {
		t.Errorf("too many: %+v\nwant %s", res.Error, want) // and go on: the second case is apart
	}
	ritaBy, ritaGroups := approvals.Decider(principal.Principal{Subject: "rita", Issuer: approverIssuer, Groups: []string{"release"}})
	if err := b.Decide(context.Background(), r.ID, approvals.Decision{Approved: true, By: ritaBy}, ritaGroups); err != nil {
		t.Fatal(err)
	}
	if res := first.result(t); res.IsError || !ran(res) {
		t.Fatalf("rita's call, approved: %+v", res.Error)
	}

	// The database unreachable (approvals follow memory.backend): refused
	// at once, naming it.
	url := pg.DB(t)
	px := pgtest.NewProxy(t, url)
	u := newEscapeWorld(t)
	u.restart(t, "memory:\n  backend: "+px.URL+"\n")
	u.setGrants(t, patterned+"approvals:\n  via: console\nmemory:\n  backend: "+px.URL+"\n")
	px.Stop()
	res, err = tryGateCall(u, eve, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.Split(strings.Split(px.URL, "@")[1], "?")[0] // 127.0.0.1:port/db, no password in it
	prefix := head + "; the question could not wait in the console: approvals backend unavailable: postgres://postgres@" + db + ": "
	suffix := " (approvals.on_backend_error: refuse); nothing ran; to let it run without asking, set tools.gates.hostcalls.action: allow in " + u.cfgPath
	if !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) ||
		!strings.HasPrefix(res.Error.Message, prefix) || !strings.HasSuffix(res.Error.Message, suffix) || strings.Contains(res.Error.Message, "waited") {
		t.Fatalf("database unreachable: %+v\nwant %s<the driver's error>%s", res.Error, prefix, suffix)
	}
}
