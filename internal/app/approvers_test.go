package app

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/mcpserver"
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
		res, err := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}, Client: c})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// No console: eve's own "accept" is never asked for; refused.
	p := &person{elicit: true, answers: []string{"accept"}}
	res := callAs(eve, p)
	if !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) ||
		!strings.Contains(res.Error.Message, "only its approvers may confirm it (access.roles.<role>.approve names hostcalls), and the caller eve is not among them") {
		t.Fatalf("eve without a console: %+v", res.Error)
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("eve was asked %d questions about her own gated call", len(q))
	}

	// An approver calling is asked as before.
	p = &person{elicit: true, answers: []string{"accept"}}
	if res := callAs(rita, p); res.IsError || !ran(res) || len(p.questions()) != 1 {
		t.Fatalf("rita: %+v, %d questions", res.Error, len(p.questions()))
	}

	// With a console: eve's call waits there; the question names the
	// approvers with their issuer; a dev cannot decide, a releaser can.
	w.app.ConsoleServes()
	b := w.app.Approvals()
	changes, cancel := b.Subscribe()
	defer cancel()
	end := make(chan *tool.Result)
	p = &person{elicit: true, answers: []string{"accept"}}
	go func() { end <- callAs(eve, p) }()
	r := waitQuestions(t, b, changes, 1)[0]
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
	if res := <-end; res.IsError || !ran(res) {
		t.Fatalf("approved by rita: %+v", res.Error)
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("eve was asked %d questions with a console serving", len(q))
	}
}

// TestPromptApproversNotTheCaller: a permission prompt of a tool whose
// approvers config names is not put to a caller outside them, even through
// a client that can elicit (they would grant their own call); an approver
// calling is asked as before. The guest reads HOME at start (requested,
// not granted): that read is the prompt.
func TestPromptApproversNotTheCaller(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, `    hostcalls: {fs: {read: [docs/readme.md]}}
server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  roles:
    releasers:
      groups: [release]
      approve: [hostcalls]
`)
	callAs := func(ctx context.Context, c tool.Client) {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"fs": readDocs})
		res, err := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: c})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	eve := principal.With(context.Background(), principal.Principal{Subject: "eve", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"dev"}})
	p := &person{elicit: true, answers: []string{"accept:once"}}
	callAs(eve, p)
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("eve, outside the approvers, was asked %d questions: %s", len(q), q[0].Params)
	}
	rita := principal.With(context.Background(), principal.Principal{Subject: "rita", Via: principal.ViaOAuth, Issuer: approverIssuer, Groups: []string{"release"}})
	p = &person{elicit: true, answers: []string{"accept:once"}}
	callAs(rita, p)
	if q := p.questions(); len(q) != 1 || !strings.Contains(string(q[0].Params), "HOME") {
		t.Fatalf("rita, an approver: %d questions %+v, want one, about env HOME", len(q), q)
	}
}
