package app

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
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
	w.setGrants(t, secretBound("[hostcalls]"))
	wantValue("bound")

	w.setGrants(t, secretBound("[other]"))
	env := readKey()
	want := `env: secret "DEPLOY_KEY" is not bound to tool "hostcalls" (config key secrets.deploy_key.tools, ` + w.cfgPath + `:12: add hostcalls there to allow it)`
	if env.Error == nil || env.Error.Kind != tool.KindDenied || env.Error.Message != want {
		t.Fatalf("after the reload that revokes it: %+v %s\nwant %s", env.Error, env.Result, want)
	}

	w.setGrants(t, secretBound("[other, hostcalls]"))
	wantValue("bound again")
}

// secretBound is the grants and secrets of the secret tests: secret
// deploy_key, read from WARDEN_CLEANUP_DEPLOY, bound to tools.
func secretBound(tools string) string {
	return "    hostcalls: {fs: {read: [.]}}\nsecrets:\n  deploy_key:\n    env: WARDEN_CLEANUP_DEPLOY\n    tools: " + tools + "\n"
}

// TestSecretRevokedMidCall: a reload that takes the tool off a secret's
// tools list refuses the secret to a call already running, at its next
// get: the call was admitted with the binding (its view), but each get
// checks the policy in force too, so a long call (an MCP task) cannot keep
// reading a secret revoked minutes ago. The real guest reads the secret,
// is held at its progress report 3 of 3 (its host call blocks in the
// observer) while the reload lands, then reads it again.
func TestSecretRevokedMidCall(t *testing.T) {
	w := newEscapeWorld(t)
	t.Setenv("WARDEN_CLEANUP_DEPLOY", "deploy-s3cret-0xfeedface")
	w.setGrants(t, secretBound("[hostcalls]"))
	get := map[string]any{"op": "get", "key": "DEPLOY_KEY"}
	args, _ := json.Marshal(map[string]any{"fs": readDocs, "env": get, "env_again": get})
	hold := &holdAt{at: 3, reached: make(chan struct{}), release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(hold.release) })
	defer release() // a failing test must not leave the guest held
	end := inBackground(func() (*tool.Result, error) {
		return w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: hold})
	})
	select {
	case <-hold.reached:
	case <-end.ended:
		t.Fatalf("the call ended before it was held: %+v", end.result(t))
	}
	w.setGrants(t, secretBound("[other]"))
	release()
	res := end.result(t)
	var out struct {
		Env   outcome
		Again outcome `json:"env_again"`
	}
	if res.IsError || json.Unmarshal(res.StructuredContent, &out) != nil {
		t.Fatalf("call: %+v %s", res.Error, res.StructuredContent)
	}
	var first struct{ Value string }
	if out.Env.Error != nil || json.Unmarshal(out.Env.Result, &first) != nil || first.Value != "deploy-s3cret-0xfeedface" {
		t.Fatalf("the get before the reload: %+v %s", out.Env.Error, out.Env.Result)
	}
	want := `env: secret "DEPLOY_KEY" is not bound to tool "hostcalls" (config key secrets.deploy_key.tools, ` + w.cfgPath +
		`:12: add hostcalls there to allow it); a reload during this call revoked it`
	if e := out.Again.Error; e == nil || e.Kind != tool.KindDenied || e.Message != want || out.Again.Result != nil {
		t.Fatalf("the get after the reload: %+v %s\nwant %s", e, out.Again.Result, want)
	}
}

// holdAt is an observer that holds the call at its progress report at:
// the guest's host call blocks in it, so the guest stops at an exact point
// of its run. reached closes when it gets there; the call goes on once
// release is closed.
type holdAt struct {
	nopObserver
	at               float64
	reached, release chan struct{}
}

func (h *holdAt) Progress(p tool.Progress) {
	if p.Progress == h.at {
		close(h.reached)
		<-h.release
	}
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
