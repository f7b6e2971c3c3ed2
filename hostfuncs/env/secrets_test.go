package env

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/secrets"
	"github.com/warden-run/warden/tool"
)

const (
	fileSecretV1 = "file-s3cret-v1-0xabad1dea"
	fileSecretV2 = "file-s3cret-v2-0xdefec8ed"
	ringSecret   = "ring-s3cret-0xc0ffee00"
)

// secretFixture serves one secret of each source: deploy_key from a file,
// ring_key from the keyring (go-keyring's in-memory mock: e2e/serve tests
// the real Secret Service), host_key from a variable, each bound to tool
// "github" served by its own module, as the tool's policy resolves them
// (internal/policy: boundView is github's view, unboundView any other
// tool's); read collects what Read hears.
func secretFixture(t *testing.T) (f *fixture, file string, read *[]string) {
	t.Helper()
	keyring.MockInit()
	if err := secrets.Store("ring-entry", ringSecret); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(t.TempDir(), "deploy_key")
	if err := os.WriteFile(file, []byte(fileSecretV1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WARDEN_TEST_SECRET_VAR", hostSecret)
	unboundView = map[string]hostfuncs.Secret{
		"deploy_key": {Source: secrets.Source{Kind: secrets.File, Ref: file}, Where: "config.yaml:7"},
		"ring_key":   {Source: secrets.Source{Kind: secrets.Keyring, Ref: "ring-entry"}, Where: "config.yaml:9"},
		"host_key":   {Source: secrets.Source{Kind: secrets.Env, Ref: "WARDEN_TEST_SECRET_VAR"}, Where: "config.yaml:11"},
		"gone_key":   {Source: secrets.Source{Kind: secrets.File, Ref: file + ".missing"}, Where: "config.yaml:13"},
	}
	boundView = map[string]hostfuncs.Secret{}
	for name, s := range unboundView {
		s.Module = "github"
		boundView[name] = s
	}
	var heard []string
	cfg := Config{
		Values: map[string]Value{"API_TOKEN": {Value: literalSecret}},
		Read:   func(v string) { heard = append(heard, v) },
	}
	f = &fixture{logs: &strings.Builder{}, obs: &recorder{}}
	var err error
	if f.env, err = New(cfg, slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))); err != nil {
		t.Fatal(err)
	}
	return f, file, &heard
}

// The secrets' views secretFixture makes: tool github's, every other's.
var boundView, unboundView map[string]hostfuncs.Secret

// secretCall is a call of toolName served by module, with the secrets as
// its tool's policy sees them.
func secretCall(toolName, module string, grants ...string) *hostfuncs.Call {
	view := unboundView
	if configkey.Fold(toolName) == "github" {
		view = boundView
	}
	return &hostfuncs.Call{Tool: toolName, Module: module, Grants: tool.Capabilities{Env: grants}, Secrets: view}
}

// TestSecretBoundToolOnly: the bound tool reads each secret as its source
// holds it; another tool, even one granted every env key by name, gets the
// exact refusal naming the secret and the config line that would allow
// it; a module serving a tool of the bound name is refused too.
func TestSecretBoundToolOnly(t *testing.T) {
	f, _, heard := secretFixture(t)
	for key, want := range map[string]string{"DEPLOY_KEY": fileSecretV1, "ring_key": ringSecret, "Host_Key": hostSecret} {
		out, err := f.serve(t, secretCall("GitHub", "github"), `{"op":"get","key":"`+key+`"}`)
		if err != nil || out != (getReply{Key: key, Value: want}) {
			t.Fatalf("get %s by the bound tool: %v %v", key, out, err)
		}
	}
	if len(*heard) != 3 {
		t.Fatalf("Read heard %d values, want 3", len(*heard))
	}
	out, err := f.serve(t, secretCall("echo", "echo", "DEPLOY_KEY", "API_TOKEN"), `{"op":"get","key":"DEPLOY_KEY"}`)
	wantKind(t, err, tool.KindDenied)
	const want = `env: secret "DEPLOY_KEY" is not bound to tool "echo" (config key secrets.deploy_key.tools, config.yaml:7: add echo there to allow it)`
	if te := err.(*tool.Error); out != nil || te.Message != want || te.Need != nil {
		t.Fatalf("get by another tool: %v %v, want %q without a need (a prompt cannot bind a secret)", out, err, want)
	}
	_, err = f.serve(t, secretCall("github", "evil"), `{"op":"get","key":"ring_key"}`)
	wantKind(t, err, tool.KindDenied)
	if want := `env: secret "ring_key" is bound to tool "github" served by module "github", and module "evil" serves it now (config key secrets.ring_key.tools, config.yaml:9)`; err.(*tool.Error).Message != want {
		t.Fatalf("get by another module: %v, want %q", err, want)
	}
	// list: the bound tool sees its secrets (upper-cased) beside its keys;
	// another sees none of them.
	out, err = f.serve(t, secretCall("github", "github", "API_TOKEN"), `{"op":"list"}`)
	if err != nil || strings.Join(out.(listReply).Keys, ",") != "API_TOKEN,DEPLOY_KEY,GONE_KEY,HOST_KEY,RING_KEY" {
		t.Fatalf("list by the bound tool: %v %v", out, err)
	}
	out, err = f.serve(t, secretCall("echo", "echo", "API_TOKEN"), `{"op":"list"}`)
	if err != nil || strings.Join(out.(listReply).Keys, ",") != "API_TOKEN" {
		t.Fatalf("list by another tool: %v %v", out, err)
	}
	// A tool with no env grant but a bound secret may list.
	if out, err = f.serve(t, secretCall("github", "github"), `{"op":"list"}`); err != nil || len(out.(listReply).Keys) != 4 {
		t.Fatalf("list with secrets only: %v %v", out, err)
	}
	for _, v := range []string{fileSecretV1, ringSecret, hostSecret} {
		if strings.Contains(f.logs.String(), v) {
			t.Fatalf("the log holds a secret value:\n%s", f.logs)
		}
	}
}

// TestSecretRotated: a secret file rewritten between two calls is what the
// second call reads, and Read hears the new value (for the logs to redact
// it) before the tool gets it.
func TestSecretRotated(t *testing.T) {
	f, file, heard := secretFixture(t)
	get := func() string {
		t.Helper()
		out, err := f.serve(t, secretCall("github", "github"), `{"op":"get","key":"deploy_key"}`)
		if err != nil {
			t.Fatal(err)
		}
		return out.(getReply).Value
	}
	if v := get(); v != fileSecretV1 {
		t.Fatalf("first read %q", v)
	}
	if err := os.WriteFile(file, []byte(fileSecretV2+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if v := get(); v != fileSecretV2 {
		t.Fatalf("after rotation read %q, want %q", v, fileSecretV2)
	}
	if got := *heard; len(got) != 2 || got[1] != fileSecretV2 {
		t.Fatalf("Read heard %q", got)
	}
}

// TestSecretUnreadable: a secret whose source holds nothing, or too much,
// is an error naming the secret, its source and its config line, never a
// value.
func TestSecretUnreadable(t *testing.T) {
	f, file, _ := secretFixture(t)
	_, err := f.serve(t, secretCall("github", "github"), `{"op":"get","key":"GONE_KEY"}`)
	wantKind(t, err, tool.KindNotFound)
	want := `env: secret "GONE_KEY" (file ` + file + `.missing, config key secrets.gone_key, config.yaml:13) cannot be read: ` + file + `.missing does not exist: not found`
	if err.(*tool.Error).Message != want {
		t.Fatalf("missing file:\n got %v\nwant %s", err, want)
	}
	big := strings.Repeat(fileSecretV1, secrets.MaxSize/len(fileSecretV1)+1)
	if err := os.WriteFile(file, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = f.serve(t, secretCall("github", "github"), `{"op":"get","key":"deploy_key"}`)
	wantKind(t, err, tool.KindUnavailable)
	if want := `cannot be read: ` + file + ` is larger than 64 KiB: a secret file holds one value`; !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), fileSecretV1) {
		t.Fatalf("oversized file: %v, want it to end %q", err, want)
	}
	t.Setenv("WARDEN_TEST_SECRET_VAR", "")
	os.Unsetenv("WARDEN_TEST_SECRET_VAR")
	_, err = f.serve(t, secretCall("github", "github"), `{"op":"get","key":"host_key"}`)
	wantKind(t, err, tool.KindNotFound)
	if want := `env: secret "host_key" (env WARDEN_TEST_SECRET_VAR, config key secrets.host_key, config.yaml:11) cannot be read: variable WARDEN_TEST_SECRET_VAR is not set: not found`; err.(*tool.Error).Message != want {
		t.Fatalf("unset variable:\n got %v\nwant %s", err, want)
	}
	keyring.MockInit() // empty
	_, err = f.serve(t, secretCall("github", "github"), `{"op":"get","key":"ring_key"}`)
	wantKind(t, err, tool.KindNotFound)
	if want := `env: secret "ring_key" (keyring ring-entry, config key secrets.ring_key, config.yaml:9) cannot be read: no keyring entry "ring-entry" of service "warden" (store one with: warden secret set ring-entry): not found`; err.(*tool.Error).Message != want {
		t.Fatalf("no keyring entry:\n got %v\nwant %s", err, want)
	}
}

// TestSecretReadsTheCallsView: the capability keeps no secrets of its
// own: what a call may read is what the call carries (its tool's policy,
// resolved at each reload), so a call whose view no longer binds the
// secret is refused and one without secrets sees none.
func TestSecretReadsTheCallsView(t *testing.T) {
	f, _, _ := secretFixture(t)
	if out, err := f.serve(t, secretCall("github", "github"), `{"op":"get","key":"host_key"}`); err != nil || out.(getReply).Value != hostSecret {
		t.Fatalf("bound: %v %v", out, err)
	}
	revoked := &hostfuncs.Call{Tool: "github", Module: "github", Secrets: unboundView}
	_, err := f.serve(t, revoked, `{"op":"get","key":"host_key"}`)
	wantKind(t, err, tool.KindDenied)
	if want := `env: secret "host_key" is not bound to tool "github" (config key secrets.host_key.tools, config.yaml:11: add github there to allow it)`; err.(*tool.Error).Message != want {
		t.Fatalf("revoked: %v, want %q", err, want)
	}
	none := &hostfuncs.Call{Tool: "github", Module: "github", Grants: tool.Capabilities{Env: []string{"API_TOKEN"}}}
	if out, err := f.serve(t, none, `{"op":"list"}`); err != nil || strings.Join(out.(listReply).Keys, ",") != "API_TOKEN" {
		t.Fatalf("list without secrets: %v %v", out, err)
	}
}

// TestSecretRevokedMidCall: a get reads a secret only when both the call's
// view and the live one (Config.Secrets: the policy in force now) let the
// tool read it. A call admitted with the binding is refused once a reload
// revokes it, or removes the secret, with the text saying so; a binding
// added by a reload does not reach a call admitted without it; a source
// changed by a reload is read from where config names it now.
func TestSecretRevokedMidCall(t *testing.T) {
	f, file, _ := secretFixture(t)
	live := boundView
	cfg := Config{Values: map[string]Value{"API_TOKEN": {Value: literalSecret}},
		Secrets: func(name string) map[string]hostfuncs.Secret {
			if configkey.Fold(name) != "github" {
				return unboundView
			}
			return live
		}}
	if err := f.env.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	call := secretCall("github", "github") // admitted with the binding
	get := func(key string) (any, error) {
		t.Helper()
		return f.serve(t, call, `{"op":"get","key":"`+key+`"}`)
	}
	if out, err := get("host_key"); err != nil || out.(getReply).Value != hostSecret {
		t.Fatalf("bound both ways: %v %v", out, err)
	}

	live = unboundView // the reload that revokes it
	_, err := get("host_key")
	wantKind(t, err, tool.KindDenied)
	if want := `env: secret "host_key" is not bound to tool "github" (config key secrets.host_key.tools, config.yaml:11: add github there to allow it); a reload during this call revoked it`; err.(*tool.Error).Message != want {
		t.Fatalf("revoked mid-call:\n got %v\nwant %s", err, want)
	}
	// No grant and no secret it may read now: nothing to list.
	if _, err := f.serve(t, call, `{"op":"list"}`); err == nil || !strings.Contains(err.Error(), `env: tool "github" has no env grant`) {
		t.Fatalf("list after the revocation: %v, want refused", err)
	}

	live = map[string]hostfuncs.Secret{} // the reload that removes every secret
	_, err = get("deploy_key")
	wantKind(t, err, tool.KindDenied)
	if want := `env: secret "deploy_key" is no longer in config (config key secrets.deploy_key): a reload during this call removed it`; err.(*tool.Error).Message != want {
		t.Fatalf("removed mid-call:\n got %v\nwant %s", err, want)
	}

	// Bound now, but not when the call was admitted: refused.
	live = boundView
	unbound := &hostfuncs.Call{Tool: "github", Module: "github", Secrets: unboundView}
	if _, err := f.serve(t, unbound, `{"op":"get","key":"host_key"}`); err == nil || !strings.Contains(err.Error(), `is not bound to tool "github"`) {
		t.Fatalf("bound by a reload after the call was admitted: %v, want refused", err)
	}

	// The source moved by a reload: read where config names it now.
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.WriteFile(moved, []byte(fileSecretV2), 0o600); err != nil {
		t.Fatal(err)
	}
	live = map[string]hostfuncs.Secret{"deploy_key": {Source: secrets.Source{Kind: secrets.File, Ref: moved}, Module: "github", Where: "config.yaml:7"}}
	if out, err := get("deploy_key"); err != nil || out.(getReply).Value != fileSecretV2 {
		t.Fatalf("moved source: %v %v, want the value at %s, not %s", out, err, moved, file)
	}
}
