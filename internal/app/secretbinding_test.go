package app

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestSecretBindingFollowsReload: a secret bound to a tool (secrets.<name>.
// tools) is read by its next call; a reload that takes the tool off the
// list revokes it from the next call on, with the refusal naming the line
// to add it back; a reload that binds it again restores it. The bindings
// come with each call from the tool's policy (internal/policy), resolved
// once per reload like its grants; the real guest reads the secret.
func TestSecretBindingFollowsReload(t *testing.T) {
	w := newEscapeWorld(t)
	t.Setenv("WARDEN_CLEANUP_DEPLOY", "deploy-s3cret-0xfeedface")
	bound := func(tools string) string {
		return "    hostcalls: {fs: {read: [.]}}\nsecrets:\n  deploy_key:\n    env: WARDEN_CLEANUP_DEPLOY\n    tools: " + tools + "\n"
	}
	readKey := func() outcome {
		t.Helper()
		return w.callEnv(t, context.Background(), nil, map[string]any{"op": "get", "key": "DEPLOY_KEY"})
	}
	wantValue := func(when string) {
		t.Helper()
		var got struct{ Value string }
		if env := readKey(); env.Error != nil || json.Unmarshal(env.Result, &got) != nil || got.Value != "deploy-s3cret-0xfeedface" {
			t.Fatalf("%s: %+v %s", when, env.Error, env.Result)
		}
	}
	w.setGrants(t, bound("[hostcalls]"))
	wantValue("bound")

	w.setGrants(t, bound("[other]"))
	env := readKey()
	want := `env: secret "DEPLOY_KEY" is not bound to tool "hostcalls" (config key secrets.deploy_key.tools, ` + w.cfgPath + `:12: add hostcalls there to allow it)`
	if env.Error == nil || env.Error.Kind != tool.KindDenied || env.Error.Message != want {
		t.Fatalf("after the reload that revokes it: %+v %s\nwant %s", env.Error, env.Result, want)
	}

	w.setGrants(t, bound("[other, hostcalls]"))
	wantValue("bound again")
}

// callEnv calls hostcalls as ctx's caller, through client c (nil: none),
// reading docs/readme.md and sending envReq to warden.env (nil: the
// guest's own, a get of HOME), and returns the env request's outcome.
func (w *escapeWorld) callEnv(t *testing.T, ctx context.Context, c tool.Client, envReq any) outcome {
	t.Helper()
	env, err := tryCallEnv(w, ctx, c, envReq)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// tryCallEnv is callEnv returning its failure: it never touches a
// testing.T, so a goroutine may call it (inBackground).
func tryCallEnv(w *escapeWorld, ctx context.Context, c tool.Client, envReq any) (outcome, error) {
	args := map[string]any{"fs": readDocs}
	if envReq != nil {
		args["env"] = envReq
	}
	raw, _ := json.Marshal(args)
	res, err := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: raw, Observer: nopObserver{}, Client: c})
	if err != nil || res.IsError {
		return outcome{}, fmt.Errorf("call: %v %+v", err, res)
	}
	var out struct{ Env outcome }
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		return outcome{}, err
	}
	return out.Env, nil
}
