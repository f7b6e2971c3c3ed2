package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/calltime"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/runtime/internal/guest"
	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/runtime/internal/trap"
	"github.com/warden-run/warden/tool"
)

// CallRequest is one call of a tool.
type CallRequest struct {
	// Arguments is the JSON object of arguments; empty means {}.
	Arguments json.RawMessage
	// Cursor continues a paginated tool's listing.
	Cursor string
	// CallID names the call in logs.
	CallID string
	// Session identifies the client session, for IsolationSession.
	Session string
	// Grants is what config grants the tool for this call.
	Grants tool.Capabilities
	// Observer receives the call's log lines and progress; nil discards them.
	Observer tool.Observer
	// Timeout lowers the tool's deadline for this call when non-zero.
	Timeout time.Duration
	// Client is the MCP client the call may ask (tool.Client); nil when
	// none can be asked.
	Client tool.Client
	// Config is the tool's own configuration (hostfuncs.Call.Config).
	Config map[string]hostfuncs.SecretValue
	// Secrets is config's secrets as the tool sees them (hostfuncs.Call.Secrets).
	Secrets map[string]hostfuncs.Secret
	// TimeoutSetting names the setting behind Timeout ("tools.limits.<tool>.timeout"),
	// for a timeout failure to name when Timeout is the bound that ended the call.
	TimeoutSetting string
	// Budget, when set, is the call's deadline and fuel in place of the
	// module's (Limits.Timeout and Fuel) and the descriptor's timeoutMs,
	// which bound an interactive call: a call that runs as an MCP task
	// runs under its task budget. Timeout above still lowers it when set;
	// a zero field of Budget leaves the module's bound.
	Budget *Budget
}

// Budget is the deadline and fuel of one call, with the settings that
// raise them for the out_of_fuel and timeout failures to name.
type Budget struct {
	Timeout                     time.Duration
	Fuel                        int64
	TimeoutSetting, FuelSetting Setting
}

// guestKinds are the error kinds a guest may report itself.
var guestKinds = map[tool.Kind]bool{
	tool.KindInvalidArguments: true, tool.KindNotFound: true, tool.KindDenied: true,
	tool.KindFailed: true, tool.KindCancelled: true,
	// A guest may pass on what the host told it: that the client lacks a
	// feature the tool cannot do without.
	tool.KindUnsupported: true,
}

// Call runs the tool. It never returns nil and never panics: every failure,
// the guest's or the sandbox's, is an error Result with its tool.Kind, and
// the next call works. The result's Outcome is what the call measured, and
// its Meta says the same to clients (tool.Outcome.PutMeta).
func (t *Tool) Call(ctx context.Context, req CallRequest) *tool.Result {
	start := time.Now()
	res := t.call(ctx, req)
	res.Outcome.Duration = time.Since(start)
	if res.Meta == nil {
		res.Meta = make(map[string]any, 3)
	}
	res.Outcome.PutMeta(res.Meta, res.Error)
	return res
}

// Timeout is the tool's deadline: its module's, lowered by its
// descriptor's own (a CallRequest may lower it further).
func (t *Tool) Timeout() time.Duration {
	timeout := t.module.limits.Timeout
	if d := t.Descriptor.Timeout(); d > 0 && d < timeout {
		timeout = d
	}
	return timeout
}

// call validates the arguments, then runs the call on the module's body,
// waiting for it to load first if need be.
func (t *Tool) call(ctx context.Context, req CallRequest) *tool.Result {
	m := t.module
	name := t.Descriptor.Name
	if err := t.validateArguments(&req); err != nil {
		return tool.ErrorResult(err)
	}
	b, err := m.acquire(ctx, req.Observer)
	if err != nil {
		return tool.ErrorResult(m.bodyError(ctx, name, err))
	}
	defer m.release()
	timeout := t.Timeout()
	request := tool.Request{Tool: name, Arguments: req.Arguments, CallID: req.CallID, Cursor: req.Cursor}
	var res *tool.Result
	out := b.invoke(ctx, invocation{
		name: name, grantsOf: name, requested: t.Descriptor.Capabilities, timeout: timeout, req: &req,
		run: func(ctx context.Context, in *guest.Instance) ([]byte, *tool.Error, error) {
			return b.engine.Run(ctx, in, request)
		},
		decode: func(raw []byte, respErr *tool.Error, state *guest.CallState) bool {
			res = t.decodeResponse(raw, respErr)
			if respErr == nil && res.Error != nil && res.Error.Kind != tool.KindBadOutput {
				res.Error = m.guestError("tool "+name, res.Error, state)
				res.Content[0] = tool.TextContent(res.Error.Error())
			}
			// A response the guest could not produce properly says nothing
			// against the instance itself, but a fresh one is cheap insurance.
			return !res.IsError || res.Error.Kind != tool.KindBadOutput
		},
	})
	if out.err != nil {
		res = tool.ErrorResult(out.err)
	}
	res.Outcome = out.outcome
	res.Captured = out.captured
	return res
}

// invocation is one run of a guest export on an instance of a module, under
// the call path's sandbox: a pooled instance, the call's deadline, fuel,
// memory and grants, its CallState for the host functions. Tool calls,
// resource reads, prompts and completions all run through body.invoke.
type invocation struct {
	// name is what runs, for messages: a tool's name, "resource test://x".
	name string
	// grantsOf is the tool whose grants apply (hostfuncs.Call.Tool, which
	// capability refusals name); name when empty.
	grantsOf string
	// requested is what the tool grantsOf names requested in its
	// descriptor: what a permission prompt may offer.
	requested tool.Capabilities
	// timeout is the deadline before req.Timeout lowers it.
	timeout time.Duration
	req     *CallRequest
	run     func(ctx context.Context, in *guest.Instance) (raw []byte, respErr *tool.Error, err error)
	// decode judges the guest's response and reports whether the instance
	// may serve again. state is the call's: what the host told the guest.
	decode func(raw []byte, respErr *tool.Error, state *guest.CallState) (keep bool)
}

// invoked is how an invocation ended: err is set when the guest failed (or
// no instance could run it) and decode was not called; outcome is what was
// measured once the guest ran (Ran is set then).
type invoked struct {
	err      *tool.Error
	outcome  tool.Outcome
	captured *tool.Captured
}

func (b *body) invoke(ctx context.Context, inv invocation) invoked {
	m := b.m
	req, name := inv.req, inv.name
	fuel := m.fuel(req)
	if req.Budget != nil && req.Budget.Timeout > 0 {
		inv.timeout = req.Budget.Timeout
	}
	timeout := inv.timeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	// The deadline started when the call arrived: what it waited for a
	// slot in the MCP layer (calltime) is already spent.
	left := timeout
	if waited := calltime.QueueWait(ctx); waited > 0 {
		if left -= waited; left <= 0 {
			return invoked{err: tool.Errorf(tool.KindTimeout, "%s did not finish within %s (while waiting %s for a call slot)%s", name, timeout, waited.Round(time.Millisecond), timeoutHint(m.limits, inv))}
		}
	}
	callCtx, deadline := newCallDeadline(ctx, left)
	defer deadline.stop()

	in, fresh, err := b.pool.acquire(callCtx, req.Session)
	if err != nil {
		if callCtx.Err() != nil {
			return invoked{err: contextError(ctx, name, timeout, "waiting for a free instance", timeoutHint(m.limits, inv))}
		}
		if te, ok := err.(*tool.Error); ok && te.Kind == tool.KindUnavailable {
			return invoked{err: te}
		}
		m.rt.log.Error("instantiate failed", "module", m.name, "tool", name, "error", err)
		return invoked{err: tool.Errorf(tool.KindInternal, "start an instance of %s: %v", m.name, err)}
	}

	observer := req.Observer
	if observer == nil {
		observer = guest.DiscardObserver{}
	}
	grantsOf := inv.grantsOf
	if grantsOf == "" {
		grantsOf = name
	}
	state := guest.NewCallState(&hostfuncs.Call{
		Tool: grantsOf, Module: m.name, Grants: req.Grants, Config: req.Config, Secrets: req.Secrets, Observer: observer,
		Client: req.Client, Hold: deadline.hold, Requested: inv.requested,
	}, in.Instance, m.limits.guest())
	guestCtx := guest.WithState(callCtx, state)
	in.CallCtx.Store(&guestCtx)
	in.Memory.Refused.Store(false)
	in.acct.refused.Store(false)

	stop := in.Meter.Start(guestCtx, fuel.Fuel)
	raw, respErr, err := inv.run(guestCtx, in.Instance)
	consumed, reason := stop()
	if callCtx.Err() != nil && (reason == instrument.StopNone || err == nil) {
		// The call's context ended before the guest was done: a host
		// function that waited stopped the guest (guest.StopIfDone), or
		// the guest answered before the watchdog's interrupt took. The
		// call outlived its deadline (or its caller), whatever the guest
		// answered: it fails as such, and its instance, stopped at an
		// arbitrary point, is not reused.
		reason = instrument.StopCanceled
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			reason = instrument.StopDeadline
		}
		if err == nil {
			err = callCtx.Err()
		}
	}
	state.FinishLogs()
	captured := m.collectOutput(in, name, req.CallID)
	out := invoked{outcome: tool.Outcome{Ran: true, Fuel: consumed, FreshState: fresh}, captured: captured}
	if err != nil {
		b.pool.release(context.Background(), in, false)
		out.err = b.failure(ctx, in, name, err, reason, stopped{timeout: timeout, timeoutHint: timeoutHint(m.limits, inv), fuel: fuel, captured: captured, denial: state.Denial})
		if spent := deadline.waitSpent(); spent > 0 && out.err.Kind == tool.KindTimeout && ctx.Err() == nil {
			// Say which bound ended it: the call had waited for the client
			// all that tools.defaults.client_wait allows a call, and ran
			// out its own timeout after.
			e := *out.err
			e.Message += fmt.Sprintf("; it had already waited %s for the client, all that tools.defaults.client_wait allows one call, so its later waits counted against its timeout", spent)
			out.err = &e
		}
		return out
	}
	keep := inv.decode(raw, respErr, state)
	b.pool.release(context.Background(), in, keep)
	return out
}

// fuel is the fuel req runs under and the setting that raises it: its
// Budget's when set, else the module's.
func (m *Module) fuel(req *CallRequest) Budget {
	if req.Budget != nil && req.Budget.Fuel > 0 {
		return *req.Budget
	}
	return Budget{Fuel: m.limits.Fuel, FuelSetting: m.limits.FuelSetting}
}

// guestError is the failure a guest reported (a kind a guest may report),
// as the client gets it: attributed to what ran, "reported by tool T
// (module M), not by warden: ..." ("resource URI", "prompt P" for a
// feature), so that no tool can word a failure as
// warden's own (a gate's refusal, a denial naming a grant to add, "warden:
// the person allowed ..."). An error the host replied to one of the guest's
// requests during the call, passed on unchanged, stays as warden wrote it:
// those are warden's words.
func (m *Module) guestError(who string, e *tool.Error, state *guest.CallState) *tool.Error {
	if state != nil && state.Told(e.Kind, e.Message) {
		return e
	}
	attributed := *e
	attributed.Message = "reported by " + termsafe.Line(who) + " (module " + termsafe.Line(m.name) + "), not by warden: " + e.Message
	return &attributed
}

func (t *Tool) validateArguments(req *CallRequest) *tool.Error {
	if len(bytes.TrimSpace(req.Arguments)) == 0 || bytes.Equal(bytes.TrimSpace(req.Arguments), []byte("null")) {
		req.Arguments = json.RawMessage("{}")
	}
	var args any
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return tool.Errorf(tool.KindInvalidArguments, "arguments of %s are not valid JSON: %v", t.Descriptor.Name, err)
	}
	if _, ok := args.(map[string]any); !ok {
		return tool.Errorf(tool.KindInvalidArguments, "arguments of %s must be a JSON object", t.Descriptor.Name)
	}
	if err := t.schemas.Input.Validate(args); err != nil {
		var limit *schema.LimitError
		if errors.As(err, &limit) {
			return tool.Errorf(tool.KindInvalidArguments, "arguments too complex to validate against the inputSchema of %s: %v", t.Descriptor.Name, limit)
		}
		return tool.Errorf(tool.KindInvalidArguments, "arguments do not match the input schema of %s: %v", t.Descriptor.Name, err)
	}
	return nil
}

// timeoutHint is the advice a timeout of inv ends with: the setting that
// raises the bound that ended it (Limits.TimeoutSetting,
// CallRequest.TimeoutSetting), or that the descriptor's timeoutMs set it,
// which config cannot raise. Built only when a call fails: the common call
// pays nothing for it.
func timeoutHint(l Limits, inv invocation) string {
	switch req := inv.req; {
	case req.Timeout > 0 && req.Timeout < inv.timeout:
		return Setting{Key: req.TimeoutSetting}.hint(req.Timeout.String())
	case req.Budget != nil && req.Budget.Timeout > 0:
		return req.Budget.TimeoutSetting.hint(req.Budget.Timeout.String())
	case inv.timeout < l.Timeout:
		return fmt.Sprintf("; the tool's descriptor lowers it to %s (timeoutMs), which config cannot raise", inv.timeout)
	}
	return l.TimeoutSetting.hint(l.Timeout.String())
}

// contextError explains a call whose context ended: its own deadline, or
// the caller's cancellation (or the caller's own deadline). hint, which
// ends the message when the call's own deadline passed, says what raises
// it.
func contextError(parent context.Context, name string, timeout time.Duration, doing, hint string) *tool.Error {
	if parent.Err() != nil {
		if errors.Is(parent.Err(), context.DeadlineExceeded) {
			return tool.Errorf(tool.KindTimeout, "%s: the caller's deadline passed while %s", name, doing)
		}
		return tool.Errorf(tool.KindCancelled, "%s: cancelled by the caller while %s", name, doing)
	}
	return tool.Errorf(tool.KindTimeout, "%s did not finish within %s (while %s)%s", name, timeout, doing, hint)
}

// stopped is what a failed guest call left for failure to explain it with.
type stopped struct {
	// timeout is the call's deadline; timeoutHint what raises it.
	timeout     time.Duration
	timeoutHint string
	// fuel is the call's fuel and the setting that raises it.
	fuel     Budget
	captured *tool.Captured
	// denial is the refusal the guest saw as an ordinary failure
	// (guest.CallState.Denial): an Extism plugin that panics on a config
	// key whose from_env variable is unset fails because of it.
	denial *tool.Error
}

// failure classifies a failed guest call. The meter's reason comes first: a
// fuel or depth trap and the watchdog's interrupt all surface from wazero as
// a plain trap, and only the meter knows which it was.
func (b *body) failure(parent context.Context, in *instance, name string, err error, reason instrument.StopReason, st stopped) *tool.Error {
	timeout, captured := st.timeout, st.captured
	m := b.m
	if in.acct.refused.Load() {
		return tool.Errorf(tool.KindUnavailable, "%s needed more memory than the instance memory budget has free: %d MiB (server.max_instance_memory) are held by instances running calls; raise server.max_instance_memory in the config to allow more",
			name, m.rt.budget.limit>>20)
	}
	if in.Memory.Refused.Load() {
		return tool.Errorf(tool.KindOutOfMemory, "%s needed more than its memory limit of %d MiB", name, m.limits.Memory>>20)
	}
	switch reason {
	case instrument.StopDeadline, instrument.StopCanceled:
		return contextError(parent, name, timeout, "running", st.timeoutHint)
	case instrument.StopFuel:
		fuel := strconv.FormatInt(st.fuel.Fuel, 10)
		return tool.Errorf(tool.KindOutOfFuel, "%s ran out of fuel after %s units%s", name, fuel, st.fuel.FuelSetting.hint(fuel))
	case instrument.StopStackOverflow:
		// The kind and class say it trapped (tool.Error.Error prints
		// both): the message says where, not "trapped" again.
		return &tool.Error{Kind: tool.KindTrapped, Trap: tool.TrapStackOverflow,
			Message: fmt.Sprintf("%s went deeper than %d nested calls", name, b.maxCallDepth)}
	}
	o, ok := trap.Classify(err)
	switch {
	case !ok:
		m.rt.log.Error("unclassified guest failure", "module", m.name, "tool", name, "error", err)
		return tool.Errorf(tool.KindInternal, "%s failed in an unexpected way: %v", name, err)
	case o.Host != nil:
		return o.Host
	case o.Trap != "":
		msg := name + " failed" + o.Where() + after(st.denial)
		if captured != nil {
			if cause := guest.Cause(captured.Stderr); cause != "" {
				// The trap alone ("unreachable") tells the model nothing;
				// a panicking guest says why on stderr.
				msg += "; its stderr says: " + cause
			}
		}
		return &tool.Error{Kind: tool.KindTrapped, Trap: o.Trap, Message: msg}
	default:
		code := o.Exit.ExitCode()
		msg := fmt.Sprintf("%s exited with code %d%s", name, code, after(st.denial))
		if captured != nil && captured.Stderr != "" {
			msg += ": " + guest.FirstLines(captured.Stderr, 3)
		}
		return &tool.Error{Kind: tool.KindGuestExit, ExitCode: &code, Message: msg}
	}
}

// after says what the guest was refused before it failed, as an Extism
// plugin's returned error says it (extism.failureError): the failure may
// well be the guest's reaction to it (a plugin that panics on a config
// value it did not get), and the refusal names what to set. "" for none.
func after(denial *tool.Error) string {
	switch {
	case denial == nil:
		return ""
	case denial.Kind == tool.KindDenied:
		return " after warden refused it: " + denial.Message
	}
	return " after " + denial.Message
}

// guestResponse is the JSON a guest returns from warden_call.
type guestResponse struct {
	Content           []tool.Content  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	Details           json.RawMessage `json:"details"`
	NextCursor        string          `json:"nextCursor"`
	Error             *tool.Error     `json:"error"`
}

func (t *Tool) decodeResponse(raw []byte, respErr *tool.Error) *tool.Result {
	name := t.Descriptor.Name
	if respErr != nil {
		return tool.ErrorResult(respErr)
	}
	var resp guestResponse
	if decodeGuestResponse(raw, &resp) {
		// The usual answer, decoded as json.Unmarshal would.
	} else if err := json.Unmarshal(raw, &resp); err != nil {
		return tool.ErrorResult(tool.Errorf(tool.KindBadOutput, "%s response is not valid JSON: %v", name, err))
	}
	if resp.Error != nil {
		if !guestKinds[resp.Error.Kind] {
			return tool.ErrorResult(tool.Errorf(tool.KindBadOutput, "%s reported error kind %q, which a tool may not report", name, resp.Error.Kind))
		}
		// A failure's content reaches the client too, so it is judged the
		// same way as a success's.
		if err := t.checkContent(resp.Content); err != nil {
			return tool.ErrorResult(err)
		}
		res := tool.ErrorResult(&tool.Error{Kind: resp.Error.Kind, Message: resp.Error.Message})
		res.Content = append(res.Content, resp.Content...)
		res.Details = resp.Details
		return res
	}
	if err := t.checkContent(resp.Content); err != nil {
		return tool.ErrorResult(err)
	}
	if err := t.checkStructured(resp.StructuredContent); err != nil {
		return tool.ErrorResult(err)
	}
	if resp.NextCursor != "" && !t.Descriptor.Paginates {
		return tool.ErrorResult(tool.Errorf(tool.KindBadOutput, "%s returned nextCursor but its descriptor does not declare paginates", name))
	}
	res := &tool.Result{Content: resp.Content, StructuredContent: resp.StructuredContent, Details: resp.Details, NextCursor: resp.NextCursor}
	if res.Content == nil {
		res.Content = []tool.Content{}
	}
	if len(res.Content) == 0 && len(res.StructuredContent) > 0 {
		// MCP asks servers to mirror structured output as text for clients
		// that do not read structuredContent.
		res.Content = []tool.Content{tool.TextContent(string(res.StructuredContent))}
	}
	return res
}

// checkContent is the runtime's one judgment of a result's content blocks
// (tool.Content.Validate): every result, whoever asked for it (`warden call`,
// tools/call over either transport), is judged here and nowhere else, so a
// result the CLI shows as a success is one MCP sends as a success.
func (t *Tool) checkContent(content []tool.Content) *tool.Error {
	for i := range content {
		if err := content[i].Validate(); err != nil {
			msg := err.Error()
			var te *tool.Error
			if errors.As(err, &te) {
				msg = te.Message
			}
			return tool.Errorf(tool.KindBadOutput, "%s content[%d]: %s", t.Descriptor.Name, i, msg)
		}
	}
	return nil
}

func (t *Tool) checkStructured(raw json.RawMessage) *tool.Error {
	name := t.Descriptor.Name
	present := len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	if !present {
		if t.schemas.Output != nil {
			return tool.Errorf(tool.KindBadOutput, "%s declares an outputSchema but returned no structuredContent", name)
		}
		return nil
	}
	// raw is what a client receives, byte for byte (json.Valid and a
	// json.RawMessage's encoding both pass invalid UTF-8 through), while
	// json.Unmarshal below decodes them as U+FFFD and so would pass them: a
	// strict client may drop the session over a reply line that is not
	// UTF-8.
	if !utf8.Valid(raw) {
		return tool.Errorf(tool.KindBadOutput, "%s structuredContent is not valid UTF-8", name)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return tool.Errorf(tool.KindBadOutput, "%s structuredContent: %v", name, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return tool.Errorf(tool.KindBadOutput, "%s structuredContent must be a JSON object", name)
	}
	if t.schemas.Output != nil {
		if err := t.schemas.Output.Validate(v); err != nil {
			var limit *schema.LimitError
			if errors.As(err, &limit) {
				return tool.Errorf(tool.KindBadOutput, "%s structuredContent too complex to validate against its outputSchema: %v", name, limit)
			}
			return tool.Errorf(tool.KindBadOutput, "%s structuredContent does not match its outputSchema: %v", name, err)
		}
	}
	return nil
}

// collectOutput takes what the guest wrote to stdout and stderr during the
// call and logs it; it never reaches the process's stdout.
func (m *Module) collectOutput(in *instance, name, callID string) *tool.Captured {
	stdout, droppedOut := in.Stdout.Take()
	stderr, droppedErr := in.Stderr.Take()
	if stdout == "" && stderr == "" && droppedOut == 0 && droppedErr == 0 {
		return nil
	}
	c := &tool.Captured{Stdout: stdout, Stderr: stderr, Dropped: droppedOut + droppedErr}
	m.rt.log.Info("guest output", "tool", name, "call", callID,
		"stdout", termsafe.Escape(stdout), "stderr", termsafe.Escape(stderr), "dropped", c.Dropped)
	return c
}
