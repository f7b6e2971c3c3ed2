package app

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestConfirmedCallRunsUnderTheConfigInForce: the owner revokes a tool's
// grant while a person is asked to confirm a call of it (a server request
// the client answers in place). The answer was given to a question about
// the old grant, and the call is not run with a grant config no longer
// gives: it is refused, nothing ran, and the next call runs under the
// config in force.
func TestConfirmedCallRunsUnderTheConfigInForce(t *testing.T) {
	w := newEscapeWorld(t)
	const gate = "\n  gates:\n    hostcalls: {action: confirm}"
	w.setGrants(t, "    hostcalls: {env: [VISIBLE]}"+gate)
	var reloadErr error
	p := &person{elicit: true, answers: []string{"accept"}, onAsk: func() {
		// The owner revokes while the person reads the question.
		if reloadErr = os.WriteFile(w.cfgPath, []byte(w.config("    hostcalls: {}"+gate)), 0o644); reloadErr == nil {
			reloadErr = w.app.live.Reload()
		}
	}}
	args, _ := json.Marshal(map[string]any{"env": map[string]any{"op": "get", "key": "VISIBLE"}})
	callWith := func(c tool.Client) *tool.Result {
		res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: c})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := callWith(p)
	if reloadErr != nil {
		t.Fatal(reloadErr)
	}
	if q := p.questions(); len(q) != 1 || q[0].Key != "warden/confirm" {
		t.Fatalf("questions: %d, want only the confirmation", len(q))
	}
	if !res.IsError || ran(res) || res.Error.Kind != tool.KindDenied ||
		!strings.Contains(res.Error.Message, "config changed while a person was asked to confirm hostcalls") {
		t.Fatalf("a call confirmed under a revoked grant: %+v %s", res.Error, res.StructuredContent)
	}
	// The next call is asked again, under the config in force, and runs
	// with what it now grants: nothing.
	res = callWith(&person{elicit: true, answers: []string{"accept"}})
	if res.IsError || !ran(res) {
		t.Fatalf("the next call: %+v", res.Error)
	}
	var out struct{ Env outcome }
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil || kindOf(out.Env) != tool.KindDenied {
		t.Fatalf("env after the revoke: %s (%v)", res.StructuredContent, err)
	}
}
