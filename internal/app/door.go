package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// A request runs a module's code as a tool, its policy subject: a
// tools/call as the tool it calls, a resource read, prompt get or
// completion as the tool its feature names (the descriptor's tool field),
// or as no tool, with no grants. mcpserver's door applies the subject's
// OAuth scopes, rates and call limits to every such request; admit applies
// the rest of the subject's policy, the same for all of them, so that no
// way into a module runs with less than a call of the tool would
// (RATIONALE.md, "One door into module code").

// entrance is one request that runs module code, as admit sees it.
type entrance struct {
	// method is the MCP method (mcpserver.MethodCallTool, ...).
	method string
	// what names the request in messages: "tool x", "resource y", ...
	what string
	// subject is the tool whose policy applies, "" for none; tool is it,
	// as module serves it (nil without a subject).
	subject string
	tool    *runtime.Tool
	module  *runtime.Module
	// notServed is the answer when the subject is not served to clients:
	// the one a client asking for an unknown name gets.
	notServed func() error
	// call carries the Pass, session, observer, client and, for the gate's
	// confirmation, the request's arguments.
	call mcpserver.Call
}

// admit applies the policy of one request into module code, looked up
// once in the policy in force (internal/policy): the Pass must admit the
// request as its subject; a hidden subject, or one held back while a rival
// module loads, is not served; a gate may block it, answer in its place
// (a tools/call gets the gate's fixed result, a feature a refusal: the
// module does not run) or ask a person first (a completion, which cannot
// ask, is refused). What
// it returns is the runtime request to run it with: the subject's grants
// (bound to their module), timeout (or, for a call that runs as an MCP
// task, its task budget) and tool config; or the result that
// answers instead (answer), or the error that refuses it.
func (a *App) admit(ctx context.Context, e entrance) (context.Context, runtime.CallRequest, *tool.Result, error) {
	req := runtime.CallRequest{Session: e.call.Session, Observer: e.call.Observer, Client: e.call.Client}
	if err := e.call.Pass.Admits(e.method, e.subject); err != nil {
		a.log.Error("request into module code refused: not admitted by the server's pipeline", "method", e.method, "tool", e.subject, "error", err)
		return ctx, req, nil, err
	}
	if e.subject == "" {
		return ctx, req, nil, nil // runs with no grants: no tool's policy to apply
	}
	pol := a.Policy()
	cfg := pol.Config()
	tp := pol.Tool(e.subject) // the one lookup: everything below reads tp
	if !tp.Exposed {
		return ctx, req, nil, e.notServed()
	}
	if e.method == mcpserver.MethodCallTool {
		if err := tp.CheckTask(&e.tool.Descriptor, e.call.Task); err != nil {
			return ctx, req, nil, err
		}
	}
	waitFor := a.catalog.HeldBy(cfg, tp.Bound, tp.HasGrant, e.tool)
	if waitFor != "" && e.method != mcpserver.MethodCallTool {
		// A feature answers as an unknown name does: the client is not
		// told which tool it runs as, nor which module is loading.
		return ctx, req, nil, e.notServed()
	}
	if waitFor != "" {
		// mcpserver waits for loads before it serves a name it does not
		// list, so only a caller that did not wait gets here.
		return ctx, req, nil, tool.Errorf(tool.KindNotFound, "tool %q is not served until module %s has loaded (a module that may serve the name instead)", e.subject, waitFor)
	}
	// The grant belongs to a module, not to the name: a tool served by
	// another module than the one its entry is bound to gets nothing, and
	// each capability it is then refused says why.
	module := e.module.Name()
	grants, elsewhere := tp.Grants(module)
	// The caller's roles (access.roles) narrow, or widen, the grant; a
	// widening role's grant is bound to the entry's module as the entry is.
	person := pol.Person(principal.From(ctx))
	grants, narrowed := person.Grants(tp, module, grants)
	if person.Narrows(tp) {
		// What the caller's roles leave is all they get: it is not put to
		// them as a permission prompt either, whether or not the roles
		// took anything away, or they would widen their own grant.
		ctx = context.WithValue(ctx, narrowedKey{}, true)
	}
	if note := strings.Join(nonEmpty(grantNote(tp, module, elsewhere), narrowed), "; "); note != "" {
		ctx = withGrantNote(ctx, note)
	}
	// The subject's gate, resolved once for the checks below and the gate.
	g, why, gated := gateOf(pol, tp, &e.tool.Descriptor, grants)
	asks := gated && g.Action == config.GateConfirm
	if e.method == mcpserver.MethodComplete && asks {
		return ctx, req, nil, tool.Errorf(tool.KindDenied,
			"%s runs as tool %s, which runs only after a person confirms it (%s), and a completion cannot ask a person; to let it run without asking, set %s",
			e.what, e.subject, why, a.configLine(gateAllowLine(e.subject)))
	}
	c := e.call
	c.Name = e.subject
	if res := a.applyGate(ctx, pol, c, &e.tool.Descriptor, grants, g, why, gated); res != nil {
		if e.method == mcpserver.MethodCallTool {
			return ctx, req, res, nil
		}
		if res.Error != nil {
			return ctx, req, nil, res.Error
		}
		// A gate's fixed result stands in for the tool's own answer; a
		// feature has no answer it could stand in for, so it does not run.
		return ctx, req, nil, tool.Errorf(tool.KindDenied,
			"%s runs as tool %s, whose gate (tools.gates.%s) answers with a fixed result instead of running it; nothing ran (%s)",
			e.what, e.subject, tp.GateKey, a.configLine(gateAllowLine(e.subject)))
	}
	// A person confirmed the call as the question described it, under
	// cfg: its grants, its gate. When config changed while they read it
	// (a grant revoked, the entry rebound, the gate set to block), the
	// answer is not for the call that would run now, and grants resolved
	// from cfg are no longer config's: nothing runs, and the caller asks
	// again, under the config in force.
	if digests := a.caps.prompts.digests; asks && digests != nil && digests.of(a.Config()) != digests.of(cfg) {
		err := tool.Errorf(tool.KindDenied,
			"config changed while a person was asked to confirm %s; the answer was for the config it was asked under, so nothing ran: call again to be asked under the config in force",
			e.subject)
		if e.method == mcpserver.MethodCallTool {
			return ctx, req, tool.ErrorResult(err), nil // as a gate's refusal is
		}
		return ctx, req, nil, err
	}
	req.Grants = grants
	if e.call.Task {
		// A task runs under the task budget alone: the interactive
		// timeout (the module's, the descriptor's, the tool's own) is
		// what a task is there to outlast.
		budget := pol.TaskBudget(tp, module)
		req.Budget = &budget
	} else {
		req.Timeout = tp.Timeout
		req.TimeoutSetting = "tools.limits." + tp.Key + ".timeout"
	}
	req.Config = tp.Config(module)
	req.Secrets = tp.Secrets()
	return ctx, req, nil, nil
}

// featureEntrance is the entrance of a feature of m that runs as the tool
// subject ("" for none); what names the request, notServed is the answer
// to a client asking for a feature that is not served.
func (a *App) featureEntrance(method, what string, m *runtime.Module, subject string, call mcpserver.FeatureCall, args any, notServed func() error) (entrance, error) {
	e := entrance{method: method, what: what, subject: subject, module: m, notServed: notServed,
		call: mcpserver.Call{Session: call.Session, Observer: call.Observer, Client: call.Client, Pass: call.Pass}}
	if subject == "" {
		return e, nil
	}
	e.tool = subjectTool(m, subject)
	if e.tool == nil {
		// Checked when the module loaded (its features name its tools).
		return e, tool.Errorf(tool.KindInternal, "%s runs as tool %q, which module %s does not serve", what, subject, m.Name())
	}
	if served, ok := a.catalog.Table().Tool(subject); !ok || served != e.tool {
		// The name is refused, or served by another module (a pinned
		// rival): no client can call m's tool, and its features are not
		// served either.
		return e, notServed()
	}
	// What the person confirming it reads as its arguments: the request.
	e.call.Arguments, _ = json.Marshal(args)
	return e, nil
}

// subjectTool returns m's tool called subject, nil if none.
func subjectTool(m *runtime.Module, subject string) *runtime.Tool {
	for _, t := range m.Tools() {
		if t.Descriptor.Name == subject {
			return t
		}
	}
	return nil
}

// gateAllowLine is the gate line that lets the tool called name run.
func gateAllowLine(name string) string {
	return fmt.Sprintf("tools.gates.%s.action: allow", configkey.Fold(name))
}

// nonEmpty lists the notes that say something.
func nonEmpty(notes ...string) []string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// narrowedKey marks a call whose grants the caller's roles decide
// (access.roles, policy.Person.Narrows): its denials are never put to the
// person as prompts.
type narrowedKey struct{}
