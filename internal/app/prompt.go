package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/approvals"
	"github.com/warden-run/warden/internal/capset"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/policy"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// maxPromptsPerCall bounds the permission prompts one call may put to the
// person: a tool that asks for file after file must not turn into a stream
// of questions.
const maxPromptsPerCall = 8

// Answers of a permission prompt.
const (
	allowOnce   = "once"
	allowAlways = "always"
	deny        = "deny"
)

// prompter puts a denied capability to the person (a permission prompt):
// when a tool is refused something its descriptor requested, config does
// not grant, and no deny rule forbids, and the client can ask, the person
// chooses allow once (this call), allow always (written into config.yaml as
// a grant of the tool, kept with its comments, applied by the running
// server) or deny.
type prompter struct {
	// policy returns the policy in force and, through it, the config it
	// was resolved from; set once the live config exists.
	policy func() *policy.Policy
	// reload applies the config file as it is now, so that a grant just
	// written holds from the next call on, not only once the watcher sees it.
	reload func() error
	// sumOf returns the sha256 of the loaded module called name, "" if
	// none: the prompt names the module serving the call by it.
	sumOf   func(module string) string
	digests *configDigests
	log     *slog.Logger
	rec     *recorderRef
	// approvals takes the questions of a client that cannot show them,
	// when approvals.via routes them to the console; nil: never.
	approvals *approvalsState
}

// retry serves a denied request again after the person allowed it. It
// returns the new outcome, or the original when nothing was allowed.
func (p *prompter) retry(ctx context.Context, call *hostfuncs.Call, serve func() (any, error), result any, err error) (any, error) {
	if ctx.Value(narrowedKey{}) != nil {
		return result, err // the caller's role narrowed the grant (door.go)
	}
	for range maxPromptsPerCall {
		need, ok := p.promptable(ctx, call, err)
		if !ok {
			return result, err
		}
		if asked, why := p.asked(ctx, call); !asked {
			if why != "" {
				err = withNote(err, why)
			}
			return result, err
		}
		pol := p.policy()
		cfg := pol.Config()
		if why := boundElsewhere(pol.Tool(call.Tool), call); why != "" {
			return result, withNote(err, why)
		}
		q := p.question(cfg, call, need)
		decision, by, askErr := p.ask(ctx, call, need, q)
		// audit records the prompt as applied (outcome), with who
		// answered in the console (by; "" for the client).
		audit := func(outcome, reason string) {
			if rec := p.rec.get(); rec != nil {
				capability, _, _ := strings.Cut(need.Key, ".") // fs.read, memory.topics
				rec.Decision(ctx, observe.Decision{Event: "prompt", Detail: need.Key + "=" + need.Value, Capability: capability,
					Outcome: outcome, Denied: outcome == deny || outcome == "unanswered", Reason: reason, Decider: by})
			}
		}
		if askErr != nil {
			audit("unanswered", askErr.Error())
			return result, withNote(err, askErr.Error())
		}
		if decision == deny {
			why := approverNote(ctx, pol, call.Tool, deniedBy(by), true)
			audit(deny, why)
			return result, withNote(err, why)
		}
		widen(&call.Grants, need)
		applied, reason := decision, ""
		if decision == allowAlways {
			if werr := p.persist(call, need, q.digest, by); werr != nil {
				// The person was told "written to config.yaml": the call's
				// result says it was not, and why (never only this log),
				// and the audit records what applied: this call only.
				p.log.Error("permission prompt: could not write the grant", "tool", call.Tool, "module", call.Module, "grant", need.Key+"="+termsafe.Escape(need.Value), "by", approverOf(by), "error", werr)
				addNotice(ctx, fmt.Sprintf("warden: the grant %s was NOT saved to %s: %v; it applied to this call only",
					termsafe.Line(q.line), cfg.File, termsafe.Message(werr.Error())))
				applied, reason = allowOnce, "the grant was not written: "+werr.Error()
			}
		}
		audit(applied, reason)
		if by != "" && p.approvals != nil {
			p.approvals.approved(ctx, approvals.Permission, call.Tool, by, applied == allowAlways)
		}
		result, err = serve()
	}
	return result, err
}

// boundElsewhere returns why a denial of call is not put to the person, ""
// when it may be: the tool's grant entry belongs to another module than the
// one serving it (its module field, or the tool's name when it has none,
// as when that module is absent and another serves the name). "Allow
// always" would have to write into that module's grant, and a person asked
// about tool X cannot tell whose rights they widen; the config line that
// fixes it is the one the denial's note names (config.GrantElsewhereError).
// tp is the policy of call.Tool.
func boundElsewhere(tp policy.ToolPolicy, call *hostfuncs.Call) string {
	bound, ok := tp.Bound, tp.HasGrant
	if !ok || bound == call.Module {
		return ""
	}
	return fmt.Sprintf("not put to the person: tools.grants.%s belongs to module %s, and tool %s is served by module %s",
		configkey.Fold(call.Tool), bound, call.Tool, call.Module)
}

// promptable returns the need of a denial that may be put to the person.
func (p *prompter) promptable(ctx context.Context, call *hostfuncs.Call, err error) (tool.Need, bool) {
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindDenied || te.Need == nil {
		return tool.Need{}, false // deny-list refusals carry no need: never offered
	}
	if p.policy == nil || !p.policy().PermissionPrompts() {
		return tool.Need{}, false
	}
	if call.Prompted[*te.Need] || len(call.Prompted) >= maxPromptsPerCall || !requested(call.Requested, *te.Need) {
		return tool.Need{}, false
	}
	return *te.Need, true
}

// asked reports whether a promptable denial is put to someone: the
// caller's client (it can show the question, and the caller may answer
// it), or the console (approvals.via). When nobody is asked because the
// caller is outside the tool's approvers, why says so for the denial,
// naming the role lines that would have them asked; a client without
// elicitation and no console is the usual case of a denial, which says
// what to grant already, and gets no note.
func (p *prompter) asked(ctx context.Context, call *hostfuncs.Call) (asked bool, why string) {
	pol := p.policy()
	if callerAnswers(ctx, pol, call) || (p.approvals != nil && p.approvals.routed(pol)) {
		return true, ""
	}
	if outside := outsideApprovers(ctx, pol, call.Tool); outside != "" {
		why = fmt.Sprintf("not put to the person: only the approvers of tool %s may grant it: %s, and %s", call.Tool, outside, noConsole)
	}
	return false, why
}

// requested reports whether the tool's descriptor asked for need: a
// prompt only ever offers what the person could have reviewed at install.
// It is capset.CoversNeed, the rule install review and update diffs use:
// "*" never covers an internal host (loopback, private, link-local,
// localhost), and a memory level alone is the whole store.
func requested(r tool.Capabilities, need tool.Need) bool { return capset.CoversNeed(r, need) }

// The question's answers, and the schema offering them: "always" only when
// config would take the grant (prompt.question).
var (
	permissionSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Allow?",` +
		`"enum":["once","always","deny"],"enumNames":["Allow once (this call)","Allow always for this tool and module (written to config.yaml)","Deny"]}},` +
		`"required":["decision"]}`)
	permissionOnceSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Allow?",` +
		`"enum":["once","deny"],"enumNames":["Allow once (this call)","Deny"]}},` +
		`"required":["decision"]}`)
)

// permissionQuestion is one permission prompt as put to the person.
type permissionQuestion struct {
	params  json.RawMessage
	message string // the text params show
	line    string // the grant "allow always" writes
	always  bool   // "allow always" is offered
	// diff is the change "allow always" makes to config.yaml, as the
	// console shows it ("" when not offered).
	diff string
	// digest is the sha256 of the module serving the call as the question
	// names it: "allow always" writes a grant bound to the module's name,
	// so it is refused when another digest serves that name at the write.
	digest string
}

// question builds the prompt for need: the tool and the module serving it
// (with the start of its sha256), what it asks for, and the exact grant
// "allow always" would write, offered only when config would take that
// very edit (config.CheckEdit), else why not. The question carries
// warden's mark and the digest of cfg (questionMeta).
func (p *prompter) question(cfg *config.Config, call *hostfuncs.Call, need tool.Need) permissionQuestion {
	key := configkey.Fold(call.Tool)
	configKey := strings.ReplaceAll(need.Key, "memory.topics", "memory_topics")
	q := permissionQuestion{line: fmt.Sprintf("tools.grants.%s.%s: [%q]", key, configKey, need.Value)}
	if need.Key == "memory" {
		q.line = fmt.Sprintf("tools.grants.%s.memory: %s", key, need.Value)
	}
	if call.Module != "" {
		q.line += fmt.Sprintf(" (with tools.grants.%s.module: %s)", key, call.Module)
	}
	module := "an unnamed module"
	if call.Module != "" {
		module = "module " + termsafe.Line(call.Module)
		if p.sumOf != nil {
			q.digest = p.sumOf(call.Module)
			if len(q.digest) >= 12 {
				module += ", sha256 " + q.digest[:12]
			}
		}
	}
	msg := fmt.Sprintf("warden: tool %s (%s) asks for %s %s, which config does not grant it.\nIts descriptor requested it. ",
		termsafe.Line(call.Tool), module, need.Key, termsafe.Line(need.Value))
	diff, checkErr := config.DiffEdit(cfg.File, grantEdit(call, need))
	q.always = checkErr == nil
	if q.always {
		q.diff = diff
	}
	schema := permissionSchema
	if q.always {
		msg += fmt.Sprintf("\"Allow always\" adds %s to %s.", termsafe.Line(q.line), cfg.File)
	} else {
		schema = permissionOnceSchema
		msg += fmt.Sprintf("\"Allow always\" is not offered: config would refuse %s (%s).",
			termsafe.Line(q.line), termsafe.Message(checkErr.Error()))
	}
	q.message = msg
	params := map[string]any{"message": msg, "requestedSchema": schema}
	if p.digests != nil {
		params["_meta"] = p.digests.questionMeta(questionPermission, cfg)
	}
	q.params, _ = json.Marshal(params)
	return q
}

// canElicit reports whether the call's client can show a question.
func canElicit(call *hostfuncs.Call) bool {
	return call.Client != nil && call.Client.Supports(tool.ClientElicit)
}

// callerAnswers reports whether the call's own client may answer its
// questions: it can show them (elicitation), and config names no
// approvers of the tool (access.roles.<role>.approve) that the caller is
// not among. A caller outside them must not confirm their own call: the
// question waits in the console for an approver, or is refused.
func callerAnswers(ctx context.Context, pol *policy.Policy, call *hostfuncs.Call) bool {
	return canElicit(call) && pol.MayApprove(call.Tool, principal.From(ctx))
}

// deniedBy is the note a denial gets: who denied it, and where.
func deniedBy(by string) string {
	if by != "" {
		return "denied in the console by " + termsafe.Line(by)
	}
	return "the person denied it when asked"
}

// approverNote is what became of a question about toolName (what), put
// after why the caller was not asked when config names the tool's
// approvers and the caller is not among them: then the question went to
// the console, and waited says whether it waited there (a denial, an
// expiry) or was refused at once (too many waiting, the backend
// unavailable). The gate's refusal says the same (confirmInConsole).
func approverNote(ctx context.Context, pol *policy.Policy, toolName, what string, waited bool) string {
	outside := outsideApprovers(ctx, pol, toolName)
	if outside == "" {
		return what
	}
	sep := "; "
	if waited {
		sep = ", so it waited in the console for an approver; "
	}
	return fmt.Sprintf("only the approvers of tool %s may grant it: %s%s%s", toolName, outside, sep, what)
}

// ask puts q to the person and returns allowOnce, allowAlways or deny; an
// answer the question did not offer is deny. A client that can elicit is
// asked; one that cannot has the question wait in the console, and by is
// then who answered there.
func (p *prompter) ask(ctx context.Context, call *hostfuncs.Call, need tool.Need, q permissionQuestion) (decision, by string, err error) {
	if call.Prompted == nil {
		call.Prompted = map[tool.Need]bool{}
	}
	call.Prompted[need] = true
	pol := p.policy()
	wait := pol.ClientWait()
	release := func() {}
	if call.Hold != nil {
		release = call.Hold(wait)
	}
	if !callerAnswers(ctx, pol, call) {
		defer release()
		return p.askConsole(ctx, pol, call, q)
	}
	decision, err = p.elicit(ctx, call, q, wait, release)
	return decision, "", err
}

// askConsole has q wait in the console: approved with Persist is "allow
// always" (when offered, else once), approved is once, denied is deny.
func (p *prompter) askConsole(ctx context.Context, pol *policy.Policy, call *hostfuncs.Call, q permissionQuestion) (decision, by string, err error) {
	r := p.approvals.request(ctx, pol, approvals.Request{Kind: approvals.Permission, Tool: call.Tool, Module: call.Module, Digest: q.digest,
		Arguments: shownArguments(callArguments(ctx)), Question: q.message, Grant: q.diff})
	d, askErr := p.approvals.ask(ctx, r)
	switch {
	case askErr != nil:
		why := p.approvals.unanswered(d, askErr, pol.ClientWait())
		return "", "", errors.New(approverNote(ctx, pol, call.Tool, why, waitedInConsole(askErr)))
	case !d.Approved:
		return deny, d.By, nil
	case d.Persist && q.always:
		return allowAlways, d.By, nil
	}
	return allowOnce, d.By, nil
}

// elicit asks q through the client; release ends the call's hold.
func (p *prompter) elicit(ctx context.Context, call *hostfuncs.Call, q permissionQuestion, wait time.Duration, release func()) (string, error) {
	askCtx, cancel := context.WithTimeoutCause(ctx, wait, hostfuncs.ErrClientWait)
	key := tool.KeyPermission + strconv.Itoa(len(call.Prompted))
	answers, err := call.Client.Ask(askCtx, []tool.ClientRequest{{Key: key, Method: tool.MethodElicit, Params: q.params}})
	waitErr := askCtx.Err() // before cancel, which sets it
	cancel()
	release()
	switch {
	case tool.IsInputRequired(err):
		panic(tool.ErrInputRequired) // stop the guest: the answer comes with the retry
	case err != nil && ctx.Err() != nil:
		return "", fmt.Errorf("the call ended while the person was asked")
	case err != nil && errors.Is(waitErr, context.DeadlineExceeded):
		return "", fmt.Errorf("no answer within %s (tools.defaults.client_wait)", wait)
	case err != nil:
		return "", fmt.Errorf("the person could not be asked: %v", err)
	}
	var answer struct {
		Action  string `json:"action"`
		Content struct {
			Decision string `json:"decision"`
		} `json:"content"`
	}
	if json.Unmarshal(answers[0], &answer) != nil || answer.Action != "accept" {
		return deny, nil
	}
	switch answer.Content.Decision {
	case allowOnce:
		return allowOnce, nil
	case allowAlways:
		if q.always {
			return allowAlways, nil
		}
	}
	return deny, nil
}

// widen adds need to g for the rest of the call, never writing into slices
// the live config shares.
func widen(g *tool.Capabilities, need tool.Need) {
	add := func(s []string) []string { return append(slices.Clip(s), need.Value) }
	switch need.Key {
	case "fs.read":
		g.FS.Read = add(g.FS.Read)
	case "fs.write":
		g.FS.Write = add(g.FS.Write)
	case "net":
		g.Net = add(g.Net)
	case "env":
		g.Env = add(g.Env)
	case "lsp":
		g.LSP = add(g.LSP)
	case "memory":
		g.Memory = tool.MemoryAccess(need.Value)
	case "memory.topics":
		g.MemoryTopics = add(g.MemoryTopics)
	}
}

// persist writes need into config.yaml as a grant of the tool, bound to
// the module serving it, and applies it at once; by is who approved it in
// the console ("" for the client's person), for the log. It refuses when
// the module the person was shown (digest) is no longer the one loaded
// under that name: the grant, bound to the name, would go to a module
// nobody reviewed.
func (p *prompter) persist(call *hostfuncs.Call, need tool.Need, digest, by string) error {
	if p.sumOf != nil && call.Module != "" {
		if now := p.sumOf(call.Module); now != digest {
			return fmt.Errorf("module %s changed while the question waited (sha256 %s, now %s): the grant would go to a module nobody was shown",
				termsafe.Line(call.Module), shortDigest(digest), shortDigest(now))
		}
	}
	cfg := p.policy().Config()
	_, err := config.EditFile(cfg.File, grantEdit(call, need))
	if err == nil && p.reload != nil {
		err = p.reload()
	}
	if err == nil {
		p.log.Info("permission prompt: grant written", "tool", call.Tool, "module", call.Module, "grant", need.Key+"="+termsafe.Escape(need.Value), "config", cfg.File, "by", approverOf(by))
	}
	return err
}

// shortDigest is the start of a sha256 as messages show it, "none" when
// no module is loaded.
func shortDigest(sum string) string {
	switch {
	case sum == "":
		return "none"
	case len(sum) > 12:
		return sum[:12]
	}
	return sum
}

// approverOf names who approved a grant in a log: the console's decider,
// or the person the client asked.
func approverOf(by string) string {
	if by == "" {
		return "the client's person (elicitation)"
	}
	return termsafe.Line(by)
}

// grantEdit is the edit "allow always" makes: need added to the grant entry
// of the call's tool, bound to the module serving it. It refuses to write
// into an entry bound to another module, as the file is at the time of the
// edit (the owner may have rebound it since the question).
func grantEdit(call *hostfuncs.Call, need tool.Need) func(*config.Document) error {
	key := configkey.Fold(call.Tool)
	return func(d *config.Document) error {
		bound, exists, err := d.GrantBinding(key)
		if err != nil {
			return err
		}
		if exists && bound != call.Module {
			return fmt.Errorf("tools.grants.%s belongs to module %s, not to module %s serving the tool", key, bound, call.Module)
		}
		if !exists && call.Module != "" {
			if err := d.BindGrant(key, call.Module); err != nil {
				return err
			}
		}
		return d.Grant(key, config.GrantChange{Key: need.Key, Values: []string{need.Value}})
	}
}

// withNote adds why to a denial's message.
func withNote(err error, why string) error {
	te, ok := err.(*tool.Error)
	if !ok {
		return err
	}
	noted := *te
	noted.Message = te.Message + " (" + why + ")"
	return &noted
}

// moduleSHA256 returns the sha256 of the loaded module called name, "" if
// none is loaded.
func (a *App) moduleSHA256(name string) string {
	if m, err := a.module(name); err == nil {
		return m.SHA256()
	}
	return ""
}
