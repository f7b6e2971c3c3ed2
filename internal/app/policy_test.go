package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/warden-run/warden/config"
)

// TestReloadSwapsConfigAndPolicyTogether: a reload puts the new config and
// its policy in force at once. A call after it sees, in one request, the
// new gate (the confirmation names it) and the new grants (the
// confirmation lists them, and the tool reads with them); and the config
// the app reports is the one the policy was resolved from.
func TestReloadSwapsConfigAndPolicyTogether(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, "    hostcalls: {fs: {read: [src]}}")
	before := w.app.Policy()
	if before.Config() != w.app.Config() {
		t.Fatal("the config in force is not the one its policy was resolved from")
	}
	if tp := before.Tool("hostcalls"); tp.Gated || tp.Bound != "hostcalls" {
		t.Fatalf("policy before the reload: %+v", tp)
	}

	w.setGrants(t, "    hostcalls: {fs: {read: [docs], write: [out]}}\n  gates:\n    hostcalls: {action: confirm}")
	after := w.app.Policy()
	if after == before || after.Config() != w.app.Config() || after.Config() == before.Config() {
		t.Fatalf("reload: policy swapped %v, config and policy together %v", after != before, after.Config() == w.app.Config())
	}
	p := &person{elicit: true, answers: []string{"accept"}}
	res, fs := w.callWith(t, p, readDocs)
	if res.IsError || fs.Error != nil || !strings.Contains(string(fs.Result), "docs-marker") {
		t.Fatalf("the call under the new grants: %+v, fs %+v", res.Error, fs)
	}
	q := p.questions()
	if len(q) != 1 || q[0].Key != "warden/confirm" {
		t.Fatalf("the new gate did not ask: %+v", q)
	}
	var params struct{ Message string }
	if err := json.Unmarshal(q[0].Params, &params); err != nil {
		t.Fatal(err)
	}
	granted := ""
	for _, line := range strings.Split(params.Message, "\n") {
		if strings.HasPrefix(line, "Granted: ") {
			granted = line
		}
	}
	if !strings.Contains(params.Message, "tools.gates.hostcalls") || !strings.Contains(granted, "docs") || !strings.Contains(granted, "out") || strings.Contains(granted, "src") {
		t.Fatalf("the confirmation does not show the new gate and grants together:\n%s", params.Message)
	}
}

// TestAdmitReadsOnlyThePolicy: what a call is allowed is looked up once, in
// the policy resolved when the config loaded, and not asked of the config
// again on the call's path. Changing the config value in force behind the
// policy's back (never done outside this test: a config is immutable once
// loaded) changes nothing for the next call: it is not hidden, not gated,
// and keeps its grants.
func TestAdmitReadsOnlyThePolicy(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, "    hostcalls: {fs: {read: [docs]}}")
	cfg := w.app.Config()
	cfg.Tools.Grants = nil
	cfg.Tools.Gates = map[string]config.Gate{"hostcalls": {Action: config.GateBlock}}
	cfg.Tools.Hide = []string{"*"}
	cfg.Security.Confirm = "on"
	res, fs := w.callWith(t, nil, readDocs)
	if res.IsError || !ran(res) || fs.Error != nil || !strings.Contains(string(fs.Result), "docs-marker") {
		t.Fatalf("the call did not run under the policy resolved at load: %+v, fs %+v", res.Error, fs)
	}
	if w.app.Policy().Config() != cfg {
		t.Fatal("the policy in force is not the config's")
	}
}

// TestLateReloadCallbackKeepsTheLatestPolicy: two reloads at once may call
// back in either order; a callback for an older config that arrives after
// a newer one was put in force leaves the newer config and its policy in
// force, as config.Live holds it.
func TestLateReloadCallbackKeepsTheLatestPolicy(t *testing.T) {
	w := newEscapeWorld(t)
	old := w.app.Config()
	w.setGrants(t, "  gates:\n    hostcalls: {action: block}")
	latest := w.app.Policy()
	w.app.configChanged(old) // the older reload's callback, late
	if w.app.Policy() != latest || w.app.Config() != w.app.live.Current() || !w.app.Policy().Tool("hostcalls").Gated {
		t.Fatalf("a late callback put an older config in force: gated %v", w.app.Policy().Tool("hostcalls").Gated)
	}
}
