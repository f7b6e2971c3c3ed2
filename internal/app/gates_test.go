package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// ran reports whether a result comes from the tool running: only a call
// that ran reports the fuel it used.
func ran(r *tool.Result) bool {
	_, ok := r.Meta["warden/fuel"]
	return ok
}

func gateCall(t *testing.T, w *escapeWorld, c tool.Client) *tool.Result {
	t.Helper()
	res, err := tryGateCall(w, nil, c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// tryGateCall calls hostcalls with no arguments as ctx's caller (nil:
// context.Background()), through client c (nil: none). It never touches a
// testing.T, so a goroutine may call it (inBackground).
func tryGateCall(w *escapeWorld, ctx context.Context, c tool.Client) (*tool.Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	return w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}, Client: c})
}

func TestGates(t *testing.T) {
	w := newEscapeWorld(t)

	w.setGrants(t, "  gates:\n    hostcalls: {action: block, message: under review}")
	res := gateCall(t, w, &person{elicit: true, answers: []string{"accept"}})
	if !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) || res.Meta[tool.MetaGate] != "block" ||
		!strings.Contains(res.Error.Message, "under review") || !strings.Contains(res.Error.Message, "tools.gates.hostcalls.action: allow") {
		t.Fatalf("block: %+v %v", res.Error, res.Meta)
	}

	w.setGrants(t, "  gates:\n    host*: {action: result, result: not today}")
	res = gateCall(t, w, nil)
	if res.IsError || ran(res) || res.Content[0].Text != "not today" {
		t.Fatalf("result gate: %+v", res)
	}

	w.setGrants(t, "  gates:\n    hostcalls: {action: confirm}")
	p := &person{elicit: true, answers: []string{"decline"}}
	res = gateCall(t, w, p)
	if !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) || res.Meta[tool.MetaGate] != "declined" {
		t.Fatalf("declined: %+v %v", res.Error, res.Meta)
	}
	q := p.questions()
	if len(q) != 1 || q[0].Key != "warden/confirm" || !strings.Contains(string(q[0].Params), "run tool hostcalls") {
		t.Fatalf("confirmation asked: %+v", q)
	}
	p.answers = []string{"accept"}
	if res = gateCall(t, w, p); res.IsError || !ran(res) {
		t.Fatalf("accepted: %+v", res.Error)
	}
	// A client that cannot be asked: refused, naming the config line.
	res = gateCall(t, w, &person{elicit: false})
	if !res.IsError || res.Error.Kind != tool.KindDenied || ran(res) || !strings.Contains(res.Error.Message, "tools.gates.hostcalls.action: allow in "+w.cfgPath) {
		t.Fatalf("no elicitation: %+v", res.Error)
	}
	// A 2026-07-28 client answers in its next request: nothing runs now.
	res = gateCall(t, w, &person{elicit: true, mrtrOnce: true})
	if !res.IsError || ran(res) || !tool.IsInputRequired(res.Error) {
		t.Fatalf("input required: %+v", res.Error)
	}
	// A person who never answers: bounded, nothing ran.
	res = gateCall(t, w, &person{elicit: true})
	if !res.IsError || ran(res) {
		t.Fatalf("no answer: %+v", res.Error)
	}

	// An exact entry beats a pattern; allow exempts.
	w.setGrants(t, "  gates:\n    host*: {action: block}\n    hostcalls: {action: allow}")
	if res = gateCall(t, w, nil); res.IsError || !ran(res) {
		t.Fatalf("allow over a pattern: %+v", res.Error)
	}
}

func TestExposeAndHide(t *testing.T) {
	w := newEscapeWorld(t)
	listed := func() bool {
		for _, d := range w.app.List() {
			if d.Name == "hostcalls" {
				return true
			}
		}
		return false
	}
	if !listed() {
		t.Fatal("hostcalls not listed")
	}
	for _, lines := range []string{"  hide: [host*]", "  expose: [other, lsp_*]"} {
		w.setGrants(t, lines)
		if listed() {
			t.Fatalf("%s: hostcalls still listed", lines)
		}
		_, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}})
		if tool.KindOf(err) != tool.KindNotFound {
			t.Fatalf("%s: calling a hidden tool: %v", lines, err)
		}
	}
	w.setGrants(t, "  expose: [host*]\n  hide: [other]")
	if !listed() {
		t.Fatal("exposed again, yet not listed")
	}
}

func TestDestructiveToolsConfirmByDefault(t *testing.T) {
	w := newEscapeWorld(t)
	yes := true
	d := &tool.Descriptor{Name: "hostcalls", Description: "d", Annotations: &tool.Annotations{DestructiveHint: &yes}}
	write := tool.Capabilities{FS: tool.FSAccess{Write: []string{"out"}}}
	c := mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: json.RawMessage(`{"x":1}`), Client: &person{elicit: true, answers: []string{"decline"}}}
	cfg := w.app.Policy()
	if res := w.app.gate(context.Background(), cfg, c, d, write); res == nil || res.Error.Kind != tool.KindDenied {
		t.Fatalf("destructive with a write grant ran unasked: %+v", res)
	}
	if res := w.app.gate(context.Background(), cfg, c, d, tool.Capabilities{FS: tool.FSAccess{Read: []string{"."}}}); res != nil {
		t.Fatalf("destructive with only a read grant was gated: %+v", res.Error)
	}
	no := false
	if res := w.app.gate(context.Background(), cfg, c, &tool.Descriptor{Name: "hostcalls", Annotations: &tool.Annotations{DestructiveHint: &no}}, write); res != nil {
		t.Fatalf("non-destructive tool gated: %+v", res.Error)
	}
	w.setGrants(t, "security:\n  confirm: off")
	if res := w.app.gate(context.Background(), w.app.Policy(), c, d, write); res != nil {
		t.Fatalf("security.confirm: off still gated: %+v", res.Error)
	}
}
