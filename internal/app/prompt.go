package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/capset"
	"github.com/warden-run/warden/internal/observe"
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
	cfg func() *config.Config // set once the live config exists
	// reload applies the config file as it is now, so that a grant just
	// written holds from the next call on, not only once the watcher sees it.
	reload func() error
	log    *slog.Logger
	rec    *recorderRef
}

// retry serves a denied request again after the person allowed it. It
// returns the new outcome, or the original when nothing was allowed.
func (p *prompter) retry(ctx context.Context, call *hostfuncs.Call, serve func() (any, error), result any, err error) (any, error) {
	for range maxPromptsPerCall {
		need, ok := p.promptable(call, err)
		if !ok {
			return result, err
		}
		decision, askErr := p.ask(ctx, call, need)
		if rec := p.rec.get(); rec != nil {
			capability, _, _ := strings.Cut(need.Key, ".") // fs.read, memory.topics
			d := observe.Decision{Event: "prompt", Detail: need.Key + "=" + need.Value, Capability: capability, Outcome: decision, Denied: decision == deny || askErr != nil}
			switch {
			case askErr != nil:
				d.Outcome, d.Reason = "unanswered", askErr.Error()
			case decision == deny:
				d.Reason = "the person denied it when asked"
			}
			rec.Decision(ctx, d)
		}
		if askErr != nil {
			return result, withNote(err, askErr.Error())
		}
		if decision == deny {
			return result, withNote(err, "the person denied it when asked")
		}
		widen(&call.Grants, need)
		if decision == allowAlways {
			if werr := p.persist(call, need); werr != nil {
				p.log.Error("permission prompt: could not write the grant", "tool", call.Tool, "grant", need.Key+"="+need.Value, "error", werr)
			}
		}
		result, err = serve()
	}
	return result, err
}

// promptable returns the need of a denial that may be put to the person.
func (p *prompter) promptable(call *hostfuncs.Call, err error) (tool.Need, bool) {
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindDenied || te.Need == nil {
		return tool.Need{}, false // deny-list refusals carry no need: never offered
	}
	if p.cfg == nil || !p.cfg().PermissionPrompts() || call.Client == nil || !call.Client.Supports(tool.ClientElicit) {
		return tool.Need{}, false
	}
	if call.Prompted[*te.Need] || len(call.Prompted) >= maxPromptsPerCall || !requested(call.Requested, *te.Need) {
		return tool.Need{}, false
	}
	return *te.Need, true
}

// requested reports whether the tool's descriptor asked for need: a
// prompt only ever offers what the person could have reviewed at install.
// It is capset.CoversNeed, the rule install review and update diffs use:
// "*" never covers an internal host (loopback, private, link-local,
// localhost), and a memory level alone is the whole store.
func requested(r tool.Capabilities, need tool.Need) bool { return capset.CoversNeed(r, need) }

// permissionSchema is the question: one of three answers.
var permissionSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Allow?",` +
	`"enum":["once","always","deny"],"enumNames":["Allow once (this call)","Allow always for this tool (written to config.yaml)","Deny"]}},` +
	`"required":["decision"]}`)

// ask puts need to the person and returns allowOnce, allowAlways or deny.
func (p *prompter) ask(ctx context.Context, call *hostfuncs.Call, need tool.Need) (string, error) {
	if call.Prompted == nil {
		call.Prompted = map[tool.Need]bool{}
	}
	call.Prompted[need] = true
	cfg := p.cfg()
	configKey := strings.ReplaceAll(need.Key, "memory.topics", "memory_topics")
	line := fmt.Sprintf("tools.grants.%s.%s: [%q]", strings.ToLower(call.Tool), configKey, need.Value)
	if need.Key == "memory" {
		line = fmt.Sprintf("tools.grants.%s.memory: %s", strings.ToLower(call.Tool), need.Value)
	}
	msg := fmt.Sprintf("warden: tool %s asks for %s %s, which config does not grant it.\n"+
		"Its descriptor requested it. \"Allow always\" adds %s to %s.",
		termsafe.Line(call.Tool), need.Key, termsafe.Line(need.Value), termsafe.Line(line), cfg.File)
	params, _ := json.Marshal(map[string]any{"message": msg, "requestedSchema": permissionSchema})
	release := func() {}
	if call.Hold != nil {
		release = call.Hold()
	}
	wait := cfg.ClientWait()
	askCtx, cancel := context.WithTimeout(ctx, wait)
	key := fmt.Sprintf("warden/permission-%d", len(call.Prompted))
	answers, err := call.Client.Ask(askCtx, []tool.ClientRequest{{Key: key, Method: tool.MethodElicit, Params: params}})
	cancel()
	release()
	switch {
	case tool.IsInputRequired(err):
		panic(tool.ErrInputRequired) // stop the guest: the answer comes with the retry
	case err != nil && ctx.Err() != nil:
		return "", fmt.Errorf("the call ended while the person was asked")
	case err != nil && askCtx.Err() != nil:
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
	case allowOnce, allowAlways:
		return answer.Content.Decision, nil
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
// the module serving it; the config watcher applies it to later calls.
func (p *prompter) persist(call *hostfuncs.Call, need tool.Need) error {
	cfg := p.cfg()
	change := config.GrantChange{Key: need.Key, Values: []string{need.Value}}
	_, err := config.EditFile(cfg.File, func(d *config.Document) error {
		if _, _, ok := cfg.GrantModule(call.Tool); !ok && call.Module != "" {
			if err := d.BindGrant(call.Tool, call.Module); err != nil {
				return err
			}
		}
		return d.Grant(call.Tool, change)
	})
	if err == nil && p.reload != nil {
		err = p.reload()
	}
	if err == nil {
		p.log.Info("permission prompt: grant written", "tool", call.Tool, "grant", change.String(), "config", cfg.File)
	}
	return err
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
