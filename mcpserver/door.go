package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/calltime"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/tool"
)

// Methods that run module code. Each goes through [Server]'s one door
// (enter); TestEveryMethodIsClassified fails for a method the server
// answers that is neither one of these nor known to run no module code.
const (
	MethodCallTool     = "tools/call"
	MethodReadResource = "resources/read"
	MethodGetPrompt    = "prompts/get"
	MethodComplete     = "completion/complete"
)

// Pass is the server's word that a request came through its door: the
// request's caller passed the OAuth scopes, rate limits and call limits of
// the request's policy subject. Only this package makes a Pass that admits
// anything (the door, and [LocalPass] for the operator's own calls; a
// Pass{} made elsewhere admits nothing). [Tools.Call] and the [Features]
// methods (Options.Features), which run module code, take one and must refuse a request whose
// Pass does not admit what they are about to run, so that an entry point
// that skips the door fails on its first request, and in the tests that
// enumerate the entry points.
type Pass struct {
	method  string
	subject string
	local   bool
}

// Method is the MCP method the request came in as (MethodCallTool, ...);
// "" for a LocalPass.
func (p *Pass) Method() string {
	if p == nil {
		return ""
	}
	return p.method
}

// Subject is the request's policy subject: the tool whose policy applies
// (a feature's Tool), "" for one that runs with no tool's grants.
func (p *Pass) Subject() string {
	if p == nil {
		return ""
	}
	return p.subject
}

// Admits returns nil when p was made by the door for a request of method
// whose policy subject is subject, and otherwise an internal error saying
// what disagreed: a request that skipped the door, or a door that checked
// another tool's policy than the one the request runs under.
func (p *Pass) Admits(method, subject string) error {
	switch {
	case p == nil, p.method == "" && !p.local: // none, or a Pass{} made outside the door
		return tool.Errorf(tool.KindInternal, "%s as tool %q did not come through the server's request pipeline; refused", method, subject)
	case p.local:
		return nil
	case p.method != method || p.subject != subject:
		return tool.Errorf(tool.KindInternal,
			"%s as tool %q was admitted by the server's request pipeline as %s as tool %q; refused", method, subject, p.method, p.subject)
	}
	return nil
}

// LocalPass is the Pass of a request made in process by the operator
// rather than by an MCP client (warden call): there is no client,
// so no OAuth scope, rate limit or call slot applies. The policy Tools
// applies itself (exposure, gates, grants) still does.
func LocalPass() *Pass { return &Pass{local: true} }

// door describes one request into module code for [enter]: what it is,
// and how each of its outcomes is answered in its method's reply type R.
type door[R any] struct {
	method string // MethodCallTool, ...
	// name is what the request names (a tool, a URI, a prompt), for the
	// requestState; what is how messages and the observer call it
	// ("resource <uri>").
	name, what string
	// subject is the policy subject: the tool whose scopes, rate, limits
	// and (in Tools) exposure, gates and grants apply; "" for a feature
	// that runs with no tool's grants.
	subject string
	// owner is a feature's owner, whose instance limits a feature with no
	// subject waits for (Options.OwnerLimits); "" for a tools/call.
	owner string
	// args are the request's arguments as the requestState digests them.
	args     json.RawMessage
	session  *mcp.ServerSession
	extra    *mcp.RequestExtra
	progress any // the client's progressToken; nil when it sent none
	// capsOf is the request's ClientCapabilities method; nil when the
	// request has no client link (a completion cannot ask the client).
	capsOf    func() *mcp.ClientCapabilities
	state     string
	responses mcp.InputResponseMap

	// refused answers a request the door turned away before the module
	// ran (over a rate, no call slot in time): tools/call with a result,
	// the features with an error.
	refused func(*tool.Result) (R, error)
	// stopped answers a run that stopped for the client's answers.
	stopped func(inputs mcp.InputRequestMap, state string) R
	// failed answers a run that returned an error.
	failed func(error) (R, error)
	// kind is the failure kind a reply carries ("" for none), for the
	// missing-capabilities mapping; nil when failures are errors only.
	kind func(R) tool.Kind
}

// entry is what the door hands the run: the Pass, and the request's
// session, observer and client link.
type entry struct {
	Pass     *Pass
	Session  string
	Observer tool.Observer
	// Client is the request's client link; nil for a request with none.
	Client tool.Client
}

// enter is the one way into module code: every request that runs a
// module (tools/call, resources/read, prompts/get, completion/complete)
// is served by it, so that the checks of the request's policy subject are
// made once, here, for all of them: the caller's OAuth scopes, the
// per-client and per-tool rates, and a call slot under the tool's call
// limits. Then it links the client, observes the run, and maps what the
// run asked of the client and how it failed onto the protocol.
func enter[R any](s *Server, ctx context.Context, d *door[R], run func(context.Context, entry) (R, error)) (R, error) {
	var zero R
	if p := principal.From(ctx); d.subject != "" {
		if denial := s.toolScopeDenial(p, d.subject, nil); denial != nil {
			s.log.Warn("request refused: scope missing", "method", d.method, "tool", d.subject,
				"subject", p.Subject, "issuer", p.Issuer, "reason", denial.message)
			return zero, &jsonrpc.Error{Code: CodeInsufficientScope, Message: scopeMessage(d.method, d.name, d.subject, denial)}
		}
	}
	session := ""
	if d.session != nil {
		session = d.session.ID()
	}
	t := s.ticketFor(ctx, d.subject, session)
	if s.opts.OwnerLimits != nil && d.subject == "" && d.owner != "" {
		// No tool's limits, but its owner's instances all the same.
		t.limits = s.opts.OwnerLimits(d.owner)
	}
	var rates RateLimits
	if s.opts.RateLimit != nil {
		rates = s.opts.RateLimit()
	}
	if t.limits.Rate != nil {
		rates.PerTool = t.limits.Rate
	}
	if d.subject == "" {
		rates.PerTool = nil // no tool whose rate it could count against
	}
	if refused := s.rates.allow(ctx, principal.From(ctx), session, d.subject, rates); refused != nil {
		return d.refused(refused)
	}
	release, waited, busy := s.acquireTicket(ctx, t)
	if busy != nil {
		return d.refused(busy)
	}
	defer release()
	// The deadline counts the wait for a slot: it started when the
	// request arrived.
	ctx = calltime.WithQueueWait(ctx, waited)
	if s.opts.CallContext != nil && d.extra != nil && d.extra.Header != nil {
		ctx = s.opts.CallContext(ctx, d.extra.Header)
	}
	s.watchSession(session, d.session)

	var link *clientLink
	e := entry{Pass: &Pass{method: d.method, subject: d.subject}, Session: session}
	if d.capsOf != nil {
		link = newClientLink(d.session, d.capsOf)
		if err := s.beginLink(link, d.method, d.name, d.args, d.state, d.responses); err != nil {
			return zero, err
		}
		e.Client = link
	}
	obs := &observer{ctx: ctx, log: s.log, tool: d.what, session: d.session, token: d.progress}
	if d.method == MethodCallTool {
		// A tool's log notifications say whose they are in a form the
		// tool cannot choose: a tool called "warden" logs as "tool warden".
		obs.logger = "tool " + d.name
	}
	e.Observer = obs
	// Logged once the request holds its slot and goes to the module: the
	// point from which a cancellation reaches it. Tests synchronise on it.
	if d.method == MethodCallTool {
		s.log.Debug("tool call started", "tool", d.name)
	} else {
		s.log.Debug("module request started", "method", d.method, "name", d.name, "tool", d.subject)
	}
	res, err := run(ctx, e)
	obs.finish()
	if link != nil {
		if inputs, state, ierr := s.inputRequired(link, d.method, d.name, d.args); ierr != nil {
			return d.failed(tool.Errorf(tool.KindFailed, "%s: %v", d.what, ierr))
		} else if inputs != nil {
			return d.stopped(inputs, state), nil
		}
		kind := tool.KindOf(err)
		if err == nil && d.kind != nil {
			kind = d.kind(res)
		}
		if kind == tool.KindUnsupported {
			if missing := link.missingCapabilities(); missing != nil {
				return zero, missing
			}
		}
	}
	if err != nil {
		return d.failed(err)
	}
	return res, nil
}

// scopeMessage is the refusal of a request whose subject needs a scope the
// caller's token lacks: a tool's own call says so as it always has; a
// feature says what was asked and that it runs as the tool.
func scopeMessage(method, name, subject string, d *scopeDenial) string {
	if method == MethodCallTool {
		return d.message
	}
	return fmt.Sprintf("%s %q runs as tool %q: %s", method, name, subject, d.message)
}
