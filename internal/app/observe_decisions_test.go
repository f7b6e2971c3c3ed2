package app

import (
	"path/filepath"
	"testing"

	"github.com/warden-run/warden/internal/observe"
)

// auditTo turns on the audit log of w's app (and metrics, returned) and
// returns the log's path and a func closing it (flushing every line).
func auditTo(t *testing.T, w *escapeWorld) (string, *observe.Metrics, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	audit, err := observe.OpenAudit(observe.AuditOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	src := w.app.ObserveSources()
	src.AuditDropped = audit.Dropped
	metrics := observe.NewMetrics(src)
	w.app.SetRecorder(observe.New(observe.Options{Audit: audit, Metrics: metrics}))
	closed := false
	close := func() {
		if closed {
			return
		}
		closed = true
		w.app.SetRecorder(nil)
		if err := audit.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(close)
	return path, metrics, close
}

func wantAudit(t *testing.T, got, want []auditFields) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// A person's answer to a permission prompt is one prompt line before the
// request's own line (which carries the final decision): allow once,
// allow always (and no prompt, so no line, on the next call), deny and a
// declined form.
func TestObservePromptDecisions(t *testing.T) {
	w := newEscapeWorld(t)
	path, _, closeAudit := auditTo(t, w)
	p := &person{elicit: true, answers: []string{"accept:once", "accept:deny", "decline", "accept:always"}}
	for range 5 {
		w.callWith(t, p, readDocs)
	}
	closeAudit()
	if n := len(p.questions()); n != 4 {
		t.Fatalf("asked %d times, want 4", n)
	}
	local := func(f auditFields) auditFields {
		f.Who, f.Via, f.Tool, f.Module = "local", "local", "hostcalls", "hostcalls"
		return f
	}
	prompt := func(outcome, decision string) auditFields {
		return local(auditFields{Event: "prompt", Capability: "fs", Gate: "fs.read=docs/readme.md", Outcome: outcome, Decision: decision})
	}
	read := func(decision string) auditFields {
		return local(auditFields{Event: "fs", Capability: "fs", Op: "read", Path: "docs/readme.md", Mode: "read", Decision: decision})
	}
	env := local(auditFields{Event: "env", Capability: "env", Op: "get", Key: "VISIBLE", Decision: "deny"})
	call := local(auditFields{Event: "call", Decision: "allow", Kind: "ok"})
	wantAudit(t, readAudit(t, path), []auditFields{
		prompt("once", "allow"), read("allow"), env, call,
		prompt("deny", "deny"), read("deny"), env, call,
		prompt("deny", "deny"), read("deny"), env, call,
		prompt("always", "allow"), read("allow"), env, call,
		read("allow"), env, call, // granted now: nobody asked
	})
}

// A gate's confirmation the person declines is a gate deny line, and the
// call's line says denied; accepted, a gate allow line and the call ran.
func TestObserveGateConfirm(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, "  gates:\n    hostcalls: {action: confirm}")
	path, _, closeAudit := auditTo(t, w)
	// The tool's default requests (README.md, env HOME) then prompt: denied.
	p := &person{elicit: true, answers: []string{"decline", "accept", "accept:deny", "accept:deny"}}
	if res := gateCall(t, w, p); !res.IsError || ran(res) {
		t.Fatalf("declined, the tool ran: %+v", res)
	}
	if res := gateCall(t, w, p); res.IsError || !ran(res) {
		t.Fatalf("accepted, the tool did not run: %+v", res.Error)
	}
	closeAudit()
	local := func(f auditFields) auditFields {
		f.Who, f.Via, f.Tool, f.Module = "local", "local", "hostcalls", "hostcalls"
		return f
	}
	wantAudit(t, readAudit(t, path), []auditFields{
		local(auditFields{Event: "gate", Gate: "confirm", Outcome: "deny", Decision: "deny"}),
		local(auditFields{Event: "call", Decision: "deny", Kind: "denied"}),
		local(auditFields{Event: "gate", Gate: "confirm", Outcome: "allow", Decision: "allow"}),
		local(auditFields{Event: "prompt", Capability: "fs", Gate: "fs.read=README.md", Outcome: "deny", Decision: "deny"}),
		local(auditFields{Event: "fs", Capability: "fs", Op: "read", Path: "README.md", Mode: "read", Decision: "deny"}),
		local(auditFields{Event: "prompt", Capability: "env", Gate: "env=HOME", Outcome: "deny", Decision: "deny"}),
		local(auditFields{Event: "env", Capability: "env", Op: "get", Key: "HOME", Decision: "deny"}),
		local(auditFields{Event: "call", Decision: "allow", Kind: "ok"}),
	})
}
