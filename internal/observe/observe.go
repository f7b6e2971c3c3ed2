// Package observe records what warden does for the people who run it: an
// audit log of every call and every capability decision, Prometheus metrics
// and OpenTelemetry traces. Each is optional; a Recorder fans one event out
// to those that are on.
//
// The app holds a Recorder, or nil when all three are off: every
// observation point is guarded by that nil check, so a server with
// observability off allocates nothing more per call.
package observe

import (
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"

	"github.com/warden-run/warden/internal/principal"
)

// Recorder hears of every call and every decision taken for one.
type Recorder interface {
	// CallStarted returns ctx carrying the call, for the events that
	// follow within it (capability uses, decisions) and for CallEnded.
	CallStarted(ctx context.Context, c CallStart) context.Context
	// CallEnded records the call CallStarted put in ctx.
	CallEnded(ctx context.Context, e CallEnd)
	// CapabilityUse records one host capability request and its decision.
	CapabilityUse(ctx context.Context, u Use)
	// Decision records a gate's or a permission prompt's decision.
	Decision(ctx context.Context, d Decision)
	// QueueWaited records how long a call waited for a call slot.
	QueueWaited(d time.Duration)
}

// CallStart describes a run of module code as it begins: a tools/call, or
// a feature request (resources/read, prompts/get, completion/complete)
// that runs as a tool, with that tool's grants.
type CallStart struct {
	// Method is the MCP method of the request (tools/call, resources/read,
	// ...); "" for a caller that does not say.
	Method string
	// Tool is the tool called, or the tool a feature request runs as (""
	// for a feature that runs as none); Module serves it.
	Tool, Module, Session string
	// Target is what a feature request names (a resource URI, a prompt
	// name, a completion's reference); "" for a tools/call, whose Tool is
	// what it names.
	Target string
	// Known is whether the request is a tools/call of a loaded tool: only
	// those become metric series, so that a client cannot make up series
	// and the call metrics count tool calls only.
	Known bool
	// Arguments are the client's arguments; only recorded when the audit
	// log is told to (log.audit_arguments).
	Arguments json.RawMessage
}

// CallEnd is a call's outcome.
type CallEnd struct {
	// Kind is the result's error kind, "ok" when it succeeded.
	Kind     string
	Fuel     uint64
	Duration time.Duration
	// Reason is the error message of a denied call.
	Reason string
}

// Use is one host capability request.
type Use struct {
	// Capability is the import's name: fs, memory, net, env, lsp, or a
	// client feature (elicit, sample, roots, ask).
	Capability string
	// Tool and Module name the caller when ctx carries no call.
	Tool, Module string
	Op           string
	// The detail, by capability: fs Path and Mode (read|write), net Host,
	// memory Topic, env Key, lsp Language.
	Path, Mode, Host, Topic, Key, Language string
	Denied                                 bool
	Reason                                 string // why it was denied
	Start                                  time.Time
}

// Decision is a gate's or a permission prompt's decision.
type Decision struct {
	// Event is "gate", "prompt", or "approval": a question put to the
	// console (asked, then approved, denied, expired or refused).
	Event string
	// Detail is what was decided: the gate action (confirm, block,
	// result) or the grant a prompt asked for ("fs.read=src").
	Detail string
	// Capability is, for a prompt, the capability the grant is of (fs,
	// net, memory, env, lsp); empty for a gate.
	Capability string
	// Outcome is what was decided: allow, deny; a prompt's once/always.
	Outcome string
	Denied  bool
	Reason  string
	// Decider is who answered an approval in the console ("" otherwise).
	Decider string
}

// Hub is the Recorder that fans events out to the audit log, the metrics
// and the traces, each nil when off.
type Hub struct {
	audit   *Audit
	metrics *Metrics
	tracing *Tracing
	args    bool
	now     func() time.Time
}

// Options selects the sinks of a Hub.
type Options struct {
	Audit   *Audit
	Metrics *Metrics
	Tracing *Tracing
	// AuditArguments records calls' arguments (bounded) in the audit log.
	AuditArguments bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// New returns a Recorder for o, or nil when every sink is off.
func New(o Options) Recorder {
	if o.Audit == nil && o.Metrics == nil && o.Tracing == nil {
		return nil
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Hub{audit: o.Audit, metrics: o.Metrics, tracing: o.Tracing, args: o.AuditArguments, now: o.Now}
}

// call is what CallStarted puts in the context.
type call struct {
	CallStart
	who  principal.Principal
	span trace.Span // nil without tracing
}

type callKey struct{}

func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// CallStarted implements Recorder.
func (h *Hub) CallStarted(ctx context.Context, s CallStart) context.Context {
	c := &call{CallStart: s, who: principal.From(ctx)}
	if !h.args {
		c.Arguments = nil
	}
	if h.tracing != nil {
		ctx, c.span = h.tracing.startCall(ctx, s)
	}
	return context.WithValue(ctx, callKey{}, c)
}

// CallEnded implements Recorder.
func (h *Hub) CallEnded(ctx context.Context, e CallEnd) {
	c := callFrom(ctx)
	if c == nil {
		return
	}
	if h.metrics != nil && c.Known {
		h.metrics.call(c.Tool, e)
	}
	if c.span != nil {
		endCall(c.span, e)
	}
	if h.audit != nil {
		l := h.line(c, "call")
		l.Kind = e.Kind
		l.Fuel = &e.Fuel
		ms := float64(e.Duration.Microseconds()) / 1000
		l.DurationMs = &ms
		l.Decision, l.Reason = "allow", ""
		if e.Kind == "denied" {
			l.Decision, l.Reason = "deny", clip(e.Reason, maxReason)
		}
		if c.Arguments != nil {
			l.Arguments, l.ArgumentsClipped = boundArguments(c.Arguments)
		}
		h.audit.write(l)
	}
}

// CapabilityUse implements Recorder.
func (h *Hub) CapabilityUse(ctx context.Context, u Use) {
	c := callFrom(ctx)
	if c == nil {
		c = &call{CallStart: CallStart{Tool: u.Tool, Module: u.Module}, who: principal.From(ctx)}
	}
	if h.metrics != nil && u.Denied {
		h.metrics.denied(u.Capability)
	}
	if h.tracing != nil && c.span != nil {
		h.tracing.capability(ctx, c.span, u, h.now())
	}
	if h.audit != nil {
		l := h.line(c, eventOf(u.Capability))
		l.Capability = u.Capability
		l.Op, l.Path, l.Mode = clip(u.Op, maxField), clip(u.Path, maxPath), u.Mode
		l.Host, l.Topic, l.Key, l.Language = clip(u.Host, maxField), clip(u.Topic, maxField), clip(u.Key, maxField), clip(u.Language, maxField)
		l.Decision = "allow"
		if u.Denied {
			l.Decision, l.Reason = "deny", clip(u.Reason, maxReason)
		}
		h.audit.write(l)
	}
}

// Decision implements Recorder.
func (h *Hub) Decision(ctx context.Context, d Decision) {
	c := callFrom(ctx)
	if c == nil {
		c = &call{who: principal.From(ctx)}
	}
	// An approval's denial is counted by warden_approvals_total, and the
	// gate or prompt refusal it leads to here.
	if h.metrics != nil && d.Denied && d.Event != "approval" {
		h.metrics.denied(d.Event)
	}
	if c.span != nil {
		c.span.AddEvent("warden."+d.Event, trace.WithAttributes(decisionAttrs(d)...))
	}
	if h.audit != nil {
		l := h.line(c, d.Event)
		l.Gate = clip(d.Detail, maxField)
		l.Capability = d.Capability
		l.Decision = "allow"
		if d.Denied {
			l.Decision = "deny"
		}
		l.Outcome = clip(d.Outcome, maxField)
		l.Reason = clip(d.Reason, maxReason)
		l.Decider = clip(d.Decider, maxField)
		h.audit.write(l)
	}
}

// QueueWaited implements Recorder.
func (h *Hub) QueueWaited(d time.Duration) {
	if h.metrics != nil {
		h.metrics.queueWait.Observe(d.Seconds())
	}
}

func (h *Hub) line(c *call, event string) *Line {
	return &Line{
		Time: h.now().UTC().Format(time.RFC3339Nano), Who: clip(c.who.Subject, maxField), Via: c.who.Via,
		Session: clip(c.Session, maxField), Method: c.Method, Tool: clip(c.Tool, maxField), Module: c.Module,
		Target: clip(c.Target, maxPath), Event: event,
	}
}

// eventOf maps a capability to its audit event: the client features are
// one event, "client".
func eventOf(capability string) string {
	switch capability {
	case "fs", "net", "memory", "env", "lsp":
		return capability
	}
	return "client"
}

// Bounds of the strings an audit line carries: guests and clients choose
// them, and a line must stay a line of sane length.
const (
	maxField     = 256
	maxPath      = 1024
	maxReason    = 1024
	maxArguments = 4096
)

// clip bounds s to n bytes of valid UTF-8, marking a cut with "…".
// Control and invisible characters are escaped when the line is written
// (Audit.write).
func clip(s string, n int) string {
	if len(s) <= n && utf8.ValidString(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// boundArguments returns raw when it is valid JSON within maxArguments,
// or else the clipped text as a JSON string and clipped true.
func boundArguments(raw json.RawMessage) (json.RawMessage, bool) {
	if len(raw) <= maxArguments && json.Valid(raw) {
		return raw, false
	}
	s, _ := json.Marshal(clip(string(raw), maxArguments))
	return s, true
}
