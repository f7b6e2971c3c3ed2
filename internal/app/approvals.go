package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// approvalsState is where the questions wait that a call puts to a person
// whose client cannot show them (no elicitation): a gate's confirmation, a
// permission prompt. The console lists and decides them (App.Approvals);
// the gate and prompt paths ask and wait (ask). A client that can elicit
// is asked through elicitation only, never through the console: one
// person, one place to answer, and the 2026-07-28 input-required flow
// unchanged (docs/asking.md).
type approvalsState struct {
	broker approvals.Broker
	// close releases a shared backend (nil for the local one).
	close func()
	// backend names where questions wait, for messages: "local" or the
	// database without its password.
	backend string
	// max and maxPerCaller are approvals.max_pending and
	// max_pending_per_caller as read at start.
	max, maxPerCaller int
	// console is set once a console in this process answers the
	// questions (App.ConsoleServes): approvals.via: auto then routes.
	console atomic.Bool
	rec     *recorderRef

	pending  atomic.Int64 // this process's questions waiting now
	mu       sync.Mutex
	outcomes map[string]uint64 // warden_approvals_total
}

// newApprovals opens the broker cfg names (approvals.backend, else
// memory.backend's database, else this process). Under approvals.via:
// elicitation no question is ever routed, so no database is opened.
func newApprovals(ctx context.Context, cfg *config.Config, rec *recorderRef, logger *slog.Logger) (*approvalsState, error) {
	s := &approvalsState{rec: rec, max: cfg.Approvals.MaxPending, maxPerCaller: cfg.Approvals.MaxPendingPerCaller,
		backend: config.ApprovalsLocal, outcomes: map[string]uint64{}}
	local := approvals.NewMemory(s.max)
	local.MaxPerPrincipal = s.maxPerCaller
	s.broker = local
	backend := cfg.ApprovalsBackend()
	if backend == config.ApprovalsLocal || cfg.ApprovalsVia() == config.ApprovalsElicitation {
		return s, nil
	}
	shared, err := approvals.OpenPostgres(ctx, approvals.PostgresOptions{URL: backend, Max: s.max, MaxPerPrincipal: s.maxPerCaller, QueryTimeout: cfg.Memory.Postgres.QueryTimeout})
	if err != nil {
		return nil, fmt.Errorf("approvals.backend: %w", err)
	}
	s.backend, s.close = shared.Name(), shared.Close
	// UseLocal reads cfg until App.New has the live config (followConfig).
	s.broker = &approvals.Fallback{Shared: shared, Local: local, UseLocal: cfg.ApprovalsFallBackLocal}
	logger.Info("approvals: questions for the console wait in the database", "backend", s.backend)
	return s, nil
}

// followConfig makes the Fallback read approvals.on_backend_error from the
// config in force at each question.
func (s *approvalsState) followConfig(current func() *config.Config) {
	if f, ok := s.broker.(*approvals.Fallback); ok {
		f.UseLocal = func() bool { return current().ApprovalsFallBackLocal() }
	}
}

// Approvals returns the broker where the questions wait that calls put to
// a person whose client cannot show them: the console lists its Pending
// and Decides. Shared by replicas when approvals.backend (or
// memory.backend) is a database.
func (a *App) Approvals() approvals.Broker { return a.approvals.broker }

// ConsoleServes tells the app that a console in this process answers its
// questions (server.console under serve --http, `warden console`): under
// approvals.via: auto, from now on a question a client cannot show waits
// in Approvals for a person, rather than being refused at once.
func (a *App) ConsoleServes() { a.approvals.console.Store(true) }

// routed reports whether, under pol, a question the client cannot show
// goes to the console (approvals.via).
func (s *approvalsState) routed(pol *policy.Policy) bool {
	switch pol.Config().ApprovalsVia() {
	case config.ApprovalsConsole:
		return true
	case config.ApprovalsElicitation:
		return false
	}
	return s.console.Load()
}

// request fills the fields every question shares: who asked, who may
// answer (policy.Approvers), and the deadline, client_wait from now.
func (s *approvalsState) request(ctx context.Context, pol *policy.Policy, r approvals.Request) approvals.Request {
	r.Principal = principal.From(ctx).Subject
	for _, a := range pol.Approvers(r.Tool) {
		if a.Group != "" {
			r.Approvers = append(r.Approvers, approvals.GroupKey(a.Issuer, a.Group))
		} else {
			r.Approvers = append(r.Approvers, approvals.SubjectKey(a.Issuer, a.Subject))
		}
	}
	r.Created = time.Now()
	r.Deadline = r.Created.Add(pol.ClientWait())
	return r
}

// ask puts r to the console and waits for the answer, bounded by
// r.Deadline and ctx, recording the question and how it ended (audit,
// warden_approvals_*). An approval is recorded by the caller once applied
// (approved): only then is it known whether a permission's grant was
// written, which the person's "Always" alone does not say.
func (s *approvalsState) ask(ctx context.Context, r approvals.Request) (approvals.Decision, error) {
	detail := string(r.Kind) + " " + r.Tool
	s.record(ctx, "asked", observe.Decision{Event: "approval", Detail: detail, Outcome: "asked"})
	s.pending.Add(1)
	d, err := s.broker.Ask(ctx, r)
	s.pending.Add(-1)
	dec := observe.Decision{Event: "approval", Detail: detail, Decider: d.By}
	switch {
	case err == nil && d.Approved:
		return d, nil
	case err == nil:
		dec.Outcome, dec.Denied, dec.Reason = "denied", true, "denied in the console"
		s.record(ctx, "denied", dec)
	case errors.Is(err, approvals.ErrExpired):
		dec.Outcome, dec.Denied, dec.Reason = "expired", true, "nobody answered in the console"
		s.record(ctx, "expired", dec)
	default:
		dec.Outcome, dec.Denied, dec.Reason = "failed", true, err.Error()
		s.record(ctx, "failed", dec)
	}
	return d, err
}

// approved records an approval of a question of kind about toolName,
// decided by by, as applied: always when a permission's grant was written
// to config.yaml, else for this call only.
func (s *approvalsState) approved(ctx context.Context, kind approvals.Kind, toolName, by string, always bool) {
	dec := observe.Decision{Event: "approval", Detail: string(kind) + " " + toolName, Decider: by, Outcome: "approved"}
	if always {
		dec.Outcome = "approved always"
	}
	s.record(ctx, "approved", dec)
}

func (s *approvalsState) record(ctx context.Context, outcome string, d observe.Decision) {
	s.mu.Lock()
	s.outcomes[outcome]++
	s.mu.Unlock()
	if rec := s.rec.get(); rec != nil {
		rec.Decision(ctx, d)
	}
}

// stats is observe.Sources.Approvals.
func (s *approvalsState) stats() (int, map[string]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]uint64, len(s.outcomes))
	for k, v := range s.outcomes {
		out[k] = v
	}
	return int(s.pending.Load()), out
}

// confirmInConsole is a gate's confirmation of the call c for a client
// that cannot show it: refused at once, naming the line that would let
// it run, unless approvals.via routes it to the console; then the same
// question (the tool, its module moduleName and digest, the arguments as
// the elicitation shows them) waits there until client_wait, and an
// approval lets the call run (nil).
func (a *App) confirmInConsole(ctx context.Context, pol *policy.Policy, c mcpserver.Call, d *tool.Descriptor, grants tool.Capabilities, why, moduleName, digest string) *tool.Result {
	// Why the caller's own client is not asked: a caller outside the
	// tool's approvers never is, whatever their client can show.
	cannot, outside := "this client cannot ask (it declared no elicitation capability)", outsideApprovers(ctx, pol, c.Name)
	if outside != "" {
		cannot = "only its approvers may confirm it: " + outside
	}
	refusal := func(happened string) *tool.Error {
		return tool.Errorf(tool.KindDenied,
			"tool %s runs only after a person confirms it (%s), and %s%s; to let it run without asking, set %s",
			c.Name, why, cannot, happened, a.configLine(gateAllowLine(c.Name)))
	}
	if !a.approvals.routed(pol) {
		if outside != "" {
			return tool.ErrorResult(refusal(", and " + noConsole))
		}
		return tool.ErrorResult(refusal(""))
	}
	r := a.approvals.request(ctx, pol, approvals.Request{Kind: approvals.Gate, Tool: c.Name, Module: moduleName, Digest: digest,
		Arguments: shownArguments(c.Arguments), Question: confirmMessage(c, moduleLabel(moduleName, digest), d, grants, why)})
	dec, err := a.approvals.ask(ctx, r)
	if err == nil && dec.Approved {
		a.approvals.approved(ctx, r.Kind, r.Tool, dec.By, false)
		return nil
	}
	waited := ""
	if outside != "" && waitedInConsole(err) {
		waited = ", so it waited in the console for an approver"
	}
	e := refusal(waited + "; " + a.approvals.unanswered(dec, err, pol.ClientWait()) + "; nothing ran")
	switch {
	case err == nil:
		return gated(tool.ErrorResult(e), "declined")
	case errors.Is(err, approvals.ErrExpired):
		e.Kind = tool.KindTimeout
		return gated(tool.ErrorResult(e), "timeout")
	case ctx.Err() != nil:
		e.Kind = tool.KindCancelled
	}
	return tool.ErrorResult(e)
}

// noConsole is why a question for an approver is refused at once: no
// console takes it to one.
const noConsole = "no console serves the question to an approver (approvals.via)"

// outsideApprovers says why the caller is not asked about the tool called
// name through their own client, "" when they may be: config names the
// tool's approvers, by the roles whose approve lists name it, and the
// caller is not among them (policy.MayApprove). A member of one of those
// roles would be asked.
func outsideApprovers(ctx context.Context, pol *policy.Policy, name string) string {
	who := principal.From(ctx)
	if pol.MayApprove(name, who) {
		return ""
	}
	var lines []string
	for _, r := range pol.ApproverRoles(name) {
		// The entry as config writes it: a pattern ("deploy*", "*")
		// is what to look for in config.yaml, not the tool's name.
		lines = append(lines, "access.roles."+r.Role+".approve names "+termsafe.Line(r.Pattern))
	}
	return fmt.Sprintf("the caller %s is not among them (%s)", termsafe.Line(who.Subject), strings.Join(lines, " and "))
}

// waitedInConsole reports whether a question that ask answered with err
// (nil: denied) waited in the console: it was denied, expired, or its call
// ended while it waited. One refused at once (too many waiting, the
// backend unavailable) never did, and a refusal must not say it did.
func waitedInConsole(err error) bool {
	return err == nil || errors.Is(err, approvals.ErrExpired) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// unanswered says what became of a question the console did not approve
// (d, err from ask), for the refusal: who denied it, or why nobody could.
func (s *approvalsState) unanswered(d approvals.Decision, err error, wait time.Duration) string {
	switch {
	case err == nil:
		return "denied in the console by " + termsafe.Line(d.By)
	case errors.Is(err, approvals.ErrExpired):
		return fmt.Sprintf("nobody answered in the console within %s (tools.defaults.client_wait)", wait)
	case errors.Is(err, approvals.ErrTooMany):
		return fmt.Sprintf("the console has too many questions waiting (approvals.max_pending: %d)", s.max)
	case errors.Is(err, approvals.ErrTooManyOfCaller):
		return fmt.Sprintf("the caller has too many questions waiting in the console (approvals.max_pending_per_caller: %d)", s.maxPerCaller)
	case errors.Is(err, approvals.ErrUnavailable):
		return fmt.Sprintf("the question could not wait in the console: %s (approvals.on_backend_error: refuse)", termsafe.Message(err.Error()))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the call ended while its question waited in the console"
	}
	return "the question could not wait in the console: " + termsafe.Message(err.Error())
}
