package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// maxShownArguments bounds the arguments a confirmation shows.
const maxShownArguments = 2 << 10

// gate decides whether the call c of t may run. It returns nil to run it,
// or the result to answer instead (a block, a fixed result, a refusal).
// A confirmation asks the person through c.Client; on a 2026-07-28 client
// the ask stops the call with an input-required result, and the retry
// carries the person's answer. pol is the policy the call runs under.
func (a *App) gate(ctx context.Context, pol *policy.Policy, c mcpserver.Call, d *tool.Descriptor, grants tool.Capabilities) *tool.Result {
	g, why, ok := gateOf(pol, pol.Tool(c.Name), d, grants)
	return a.applyGate(ctx, pol, c, d, grants, g, why, ok)
}

// applyGate is gate for the gate gateOf resolved (g, why; ok false when
// none applies) under pol, for a caller that resolved it already (admit).
func (a *App) applyGate(ctx context.Context, pol *policy.Policy, c mcpserver.Call, d *tool.Descriptor, grants tool.Capabilities, g config.Gate, why string, ok bool) *tool.Result {
	if !ok {
		return nil
	}
	rec := a.caps.rec.get()
	if rec == nil {
		return a.decideGate(ctx, pol, c, d, grants, g, why, nil)
	}
	var action string
	res := a.decideGate(ctx, pol, c, d, grants, g, why, &action)
	if action == "" || action == config.GateAllow {
		return res // no gate stood in the way
	}
	dec := observe.Decision{Event: "gate", Detail: action, Outcome: "allow"}
	switch {
	case res == nil:
	case res.Error != nil && res.Error == tool.ErrInputRequired:
		return res // asked; the retry decides
	case res.Error != nil:
		dec.Outcome, dec.Denied, dec.Reason = "deny", true, res.Error.Message
	default:
		dec.Outcome = "result" // answered by config; the tool did not run
	}
	rec.Decision(ctx, dec)
	return res
}

// decideGate is applyGate for the gate g that applies (why names it);
// action, when not nil, is set to its action.
func (a *App) decideGate(ctx context.Context, pol *policy.Policy, c mcpserver.Call, d *tool.Descriptor, grants tool.Capabilities, g config.Gate, why string, action *string) *tool.Result {
	// An entry of the tool's exact name beats any pattern: the line that
	// lets this one tool through.
	if action != nil {
		*action = g.Action
	}
	allowLine := gateAllowLine(c.Name)
	switch g.Action {
	case config.GateBlock:
		msg := fmt.Sprintf("tool %s is blocked by %s", c.Name, why)
		if g.Message != "" {
			msg += ": " + g.Message
		}
		return gated(tool.ErrorResult(tool.Errorf(tool.KindDenied, "%s (%s)", msg, a.configLine(allowLine))), "block")
	case config.GateResult:
		return gated(&tool.Result{Content: []tool.Content{{Type: "text", Text: g.Result}}}, "result")
	case config.GateConfirm:
	default: // allow
		return nil
	}
	moduleName, digest := "", ""
	if t, ok := a.catalog.Table().Tool(c.Name); ok {
		moduleName, digest = t.Module().Name(), t.Module().SHA256()
	}
	if c.Client == nil || !c.Client.Supports(tool.ClientElicit) || !pol.MayApprove(c.Name, principal.From(ctx)) {
		return a.confirmInConsole(ctx, pol, c, d, grants, why, moduleName, digest)
	}
	// warden's mark and the config asked under: a 2026-07-28 answer is
	// taken only for this very question under this very config.
	params, _ := json.Marshal(map[string]any{
		"message":         confirmMessage(c, moduleLabel(moduleName, digest), d, grants, why),
		"requestedSchema": json.RawMessage(`{"type":"object","properties":{}}`),
		"_meta":           a.caps.prompts.digests.questionMeta(questionConfirm, pol.Config()),
	})
	wait := pol.ClientWait()
	askCtx, cancel := context.WithTimeoutCause(ctx, wait, hostfuncs.ErrClientWait)
	defer cancel()
	answers, err := c.Client.Ask(askCtx, []tool.ClientRequest{{Key: tool.KeyConfirm, Method: tool.MethodElicit, Params: params}})
	switch {
	case tool.IsInputRequired(err):
		// The server answers with the request; nothing ran.
		return tool.ErrorResult(tool.ErrInputRequired)
	case err != nil && ctx.Err() != nil:
		return tool.ErrorResult(tool.Errorf(tool.KindCancelled, "the call ended while waiting for a person to confirm %s", c.Name))
	case err != nil && askCtx.Err() != nil:
		return gated(tool.ErrorResult(tool.Errorf(tool.KindTimeout,
			"no one confirmed %s within %s (tools.defaults.client_wait); nothing ran", c.Name, wait)), "timeout")
	case err != nil:
		return tool.ErrorResult(tool.Errorf(tool.KindDenied, "could not ask a person to confirm %s (%s): %v; nothing ran", c.Name, why, err))
	}
	var answer struct {
		Action string `json:"action"`
	}
	if err := json.Unmarshal(answers[0], &answer); err != nil || answer.Action != "accept" {
		action := termsafe.Line(answer.Action) // the client's words
		if action == "" {
			action = "no answer"
		}
		return gated(tool.ErrorResult(tool.Errorf(tool.KindDenied,
			"the person did not confirm %s (%s); nothing ran", c.Name, action)), "declined")
	}
	return nil
}

// gateOf returns the gate that applies under pol to the tool whose policy
// is tp, with d its descriptor and grants its grants, and why it applies
// (the config line, or the default that set it); ok is false when none
// does.
func gateOf(pol *policy.Policy, tp policy.ToolPolicy, d *tool.Descriptor, grants tool.Capabilities) (g config.Gate, why string, ok bool) {
	if tp.Gated {
		return tp.Gate, "tools.gates." + tp.GateKey, true
	}
	if !pol.ConfirmDestructive() || !destructive(d) || !risky(grants) {
		return config.Gate{}, "", false
	}
	return config.Gate{Action: config.GateConfirm},
		"the default for tools annotated destructiveHint that hold a write, net or env grant (security.confirm)", true
}

func gated(r *tool.Result, how string) *tool.Result {
	if r.Meta == nil {
		r.Meta = map[string]any{}
	}
	r.Meta[tool.MetaGate] = how
	return r
}

// configLine names where a setting goes: the config file in use.
func (a *App) configLine(setting string) string {
	if f := a.Config().File; f != "" {
		return setting + " in " + f
	}
	return setting + " in config.yaml"
}

func destructive(d *tool.Descriptor) bool {
	return d.Annotations != nil && d.Annotations.DestructiveHint != nil && *d.Annotations.DestructiveHint
}

// risky reports whether grants let a tool change or reach what is outside
// it: files to write, hosts, secrets.
func risky(g tool.Capabilities) bool {
	return len(g.FS.Write) > 0 || len(g.Net) > 0 || len(g.Env) > 0
}

// moduleLabel names a module as a confirmation does: its name and the
// start of its sha256 digest ("" when unknown).
func moduleLabel(name, digest string) string {
	if len(digest) >= 12 {
		return name + ", sha256 " + digest[:12]
	}
	return name
}

// confirmMessage is what the person reads: the tool and the module serving
// it (name and start of its sha256, "" when unknown), its arguments and
// what it was granted, every part escaped so that neither the tool's
// descriptor nor the arguments (the agent's, not the person's) can dress up
// as warden's own words.
func confirmMessage(c mcpserver.Call, module string, d *tool.Descriptor, grants tool.Capabilities, why string) string {
	var b strings.Builder
	what := "run tool " + termsafe.Line(c.Name)
	if m := c.Pass.Method(); m != "" && m != mcpserver.MethodCallTool {
		what = m + " as tool " + termsafe.Line(c.Name) // a resource read or prompt get that runs as the tool
	}
	if module != "" {
		fmt.Fprintf(&b, "warden: %s (module %s)?\n", what, termsafe.Line(module))
	} else {
		fmt.Fprintf(&b, "warden: %s?\n", what)
	}
	fmt.Fprintf(&b, "Description: %s\n", termsafe.Line(d.Description))
	fmt.Fprintf(&b, "Arguments: %s\n", shownArguments(c.Arguments))
	fmt.Fprintf(&b, "Granted: %s\n", termsafe.Line(grants.Summary()))
	fmt.Fprintf(&b, "Asked because: %s.\n", why)
	b.WriteString("Accept to run it this once; decline and nothing runs.")
	return b.String()
}

// shownArguments are a call's arguments as a person is shown them, in the
// elicitation and in the console alike: at most maxShownArguments bytes
// (saying how many there were), escaped to one terminal-safe line.
func shownArguments(raw []byte) string {
	args := string(raw)
	if len(args) > maxShownArguments {
		args = args[:maxShownArguments] + fmt.Sprintf("… (%d bytes in all)", len(raw))
	}
	return termsafe.Line(args)
}
