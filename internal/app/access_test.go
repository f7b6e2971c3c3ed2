package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestPersonalGrants: a call runs with the grant its caller's roles leave
// (access.roles), taken from the call's principal: a reader whose role
// narrows hostcalls' grant is refused the secret, naming the config line
// that narrowed it; someone in no role, and a local caller, get it; with
// access.widen a role's grant adds to tools.grants for its members only.
func TestPersonalGrants(t *testing.T) {
	dir := hostcallsProject(t)
	const secret = "s3cret-access-test"
	configWith := func(widen bool, base, overlay string) string {
		return fmt.Sprintf(`project: {root: %s}
env: {values: {SECRET: {value: %s}}}
tools:
  dir: tools
  cache_dir: %s
  grants:
    hostcalls: %s
server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  widen: %v
  roles:
    readers:
      groups: [readers]
      grants:
        hostcalls: %s
`, dir, secret, userCacheDir, base, widen, overlay)
	}
	a, cfgPath := startApp(t, dir, configWith(false, "{env: [SECRET], memory: read}", "{memory: read}"), nil)
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatal(errs)
	}
	reader := principal.Principal{Subject: "bob", Via: principal.ViaOAuth, Issuer: "https://id.example.com", Groups: []string{"readers"}}
	other := principal.Principal{Subject: "dave", Via: principal.ViaOAuth, Issuer: "https://id.example.com", Groups: []string{"Readers"}}
	envOf := func(who principal.Principal) (string, *tool.Error) {
		t.Helper()
		ctx := principal.With(context.Background(), who)
		res, err := a.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls",
			Arguments: json.RawMessage(`{"env":{"op":"get","key":"SECRET"}}`), Observer: nopObserver{}})
		if err != nil || res.IsError {
			t.Fatalf("call as %s: %v %+v", who.Subject, err, res)
		}
		var out struct {
			Env struct {
				Result json.RawMessage `json:"result"`
				Error  *tool.Error     `json:"error"`
			} `json:"env"`
		}
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(out.Env.Result), secret) {
			return secret, out.Env.Error
		}
		return string(out.Env.Result), out.Env.Error
	}

	value, denied := envOf(reader)
	if value == secret || denied == nil || denied.Kind != tool.KindDenied {
		t.Fatalf("reader: value %q, error %+v: want denied", value, denied)
	}
	want := `access.roles.readers.grants.hostcalls narrows tools.grants.hostcalls for "bob", a member of the role (access.widen is false), in ` + cfgPath +
		": the line that would allow it lists the value under access.roles.readers.grants.hostcalls too"
	if !strings.Contains(denied.Message, want) {
		t.Errorf("reader's refusal %q\nwant it to name the line: %q", denied.Message, want)
	}
	for _, who := range []principal.Principal{other, principal.Local} {
		if value, denied := envOf(who); value != secret || denied != nil {
			t.Errorf("%s (no role): value %q, error %+v, want the secret", who.Subject, value, denied)
		}
	}

	// A person cannot widen their own grant without access.widen: a role
	// listing more than tools.grants gives nothing more.
	if err := os.WriteFile(cfgPath, []byte(configWith(false, "{memory: read}", "{env: [SECRET], memory: read}")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.live.Reload(); err != nil {
		t.Fatal(err)
	}
	if value, denied := envOf(reader); value == secret || denied == nil {
		t.Errorf("narrowing role listing more than tools.grants: value %q, error %+v, want denied", value, denied)
	}

	// With access.widen the role's grant adds, for its members only.
	if err := os.WriteFile(cfgPath, []byte(configWith(true, "{memory: read}", "{env: [SECRET]}")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.live.Reload(); err != nil {
		t.Fatal(err)
	}
	if value, denied := envOf(reader); value != secret || denied != nil {
		t.Errorf("widening role, member: value %q, error %+v, want the secret", value, denied)
	}
	if value, _ := envOf(other); value == secret {
		t.Error("widening role: a non-member (group Readers is not readers) got the secret")
	}
}

// TestWideningRoleBoundToTheModule: a widening role's grant adds to the
// module tools.grants.hostcalls is bound to, and to no other: while the
// entry is bound to module elsewhere, the module hostcalls serving a tool
// of that name gets nothing from the role, even for its members.
func TestWideningRoleBoundToTheModule(t *testing.T) {
	dir := hostcallsProject(t)
	const secret = "s3cret-rival-test"
	a, _ := startApp(t, dir, fmt.Sprintf(`project: {root: %s}
env: {values: {SECRET: {value: %s}}}
tools:
  dir: tools
  cache_dir: %s
  grants:
    hostcalls: {module: elsewhere}
server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  widen: true
  roles:
    readers:
      groups: [readers]
      grants:
        hostcalls: {env: [SECRET]}
`, dir, secret, userCacheDir), nil)
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatal(errs)
	}
	ctx := principal.With(context.Background(), principal.Principal{Subject: "bob", Via: principal.ViaOAuth,
		Issuer: "https://id.example.com", Groups: []string{"readers"}})
	res, err := a.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls",
		Arguments: json.RawMessage(`{"env":{"op":"get","key":"SECRET"}}`), Observer: nopObserver{}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var out struct {
		Env struct {
			Result json.RawMessage `json:"result"`
			Error  *tool.Error     `json:"error"`
		} `json:"env"`
	}
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out.Env.Result), secret) || out.Env.Error == nil || out.Env.Error.Kind != tool.KindDenied {
		t.Fatalf("module hostcalls, entry bound to elsewhere: env %s error %+v, want denied", out.Env.Result, out.Env.Error)
	}
	if !strings.Contains(out.Env.Error.Message, "tools.grants.hostcalls is bound to module elsewhere") {
		t.Errorf("refusal %q does not say the grant is bound elsewhere", out.Env.Error.Message)
	}
}

// TestNarrowedNotPrompted: what a caller's role took from a tool's grant
// is not put to them as a permission prompt, where "allow once" would
// give it back to the very person it was taken from; someone in no role
// is asked as before.
func TestNarrowedNotPrompted(t *testing.T) {
	w := newEscapeWorld(t)
	body := w.config("    hostcalls: {fs: {read: [docs/readme.md]}, memory: read}") + `server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  roles:
    readers:
      groups: [readers]
      grants:
        hostcalls: {memory: read}
`
	if err := os.WriteFile(w.cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	readerCtx := principal.With(context.Background(), principal.Principal{Subject: "bob", Via: principal.ViaOAuth,
		Issuer: "https://id.example.com", Groups: []string{"readers"}})
	callAs := func(ctx context.Context, c tool.Client) outcome {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"fs": readDocs})
		res, err := w.app.Call(ctx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: c})
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		var out struct{ FS outcome }
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatal(err)
		}
		return out.FS
	}
	p := &person{elicit: true, answers: []string{"accept:once"}}
	fs := callAs(readerCtx, p)
	if fs.Error == nil || fs.Error.Kind != tool.KindDenied || !strings.Contains(fs.Error.Message, "access.roles.readers.grants.hostcalls narrows") {
		t.Fatalf("reader: %+v, want denied naming the role's line", fs)
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("the reader was asked %d questions: a narrowed grant must not be put back by a prompt", len(q))
	}
	// Someone in no role has the grant and reads; prompts are on: the env
	// read the guest makes besides (HOME, requested, not granted) is put
	// to them.
	fs = callAs(context.Background(), p)
	if q := p.questions(); fs.Error != nil || len(q) != 1 || !strings.Contains(string(q[0].Params), "HOME") {
		t.Fatalf("local caller: %+v, questions %+v, want the read and one question, about env HOME", fs, q)
	}
}

// TestEqualRoleGrantNotPrompted: a role whose grant lists exactly what
// tools.grants gives takes nothing away, yet what it leaves is all its
// members get: a request past it is not put to them as a permission
// prompt, which they could answer themselves.
func TestEqualRoleGrantNotPrompted(t *testing.T) {
	w := newEscapeWorld(t)
	const grant = "{fs: {read: [docs/readme.md]}, memory: read}"
	body := w.config("    hostcalls: "+grant) + `server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
access:
  roles:
    readers:
      groups: [readers]
      grants:
        hostcalls: ` + grant + "\n"
	if err := os.WriteFile(w.cfgPath, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	readerCtx := principal.With(context.Background(), principal.Principal{Subject: "bob", Via: principal.ViaOAuth,
		Issuer: "https://id.example.com", Groups: []string{"readers"}})
	args, _ := json.Marshal(map[string]any{"fs": readDocs})
	p := &person{elicit: true, answers: []string{"accept:once"}}
	res, err := w.app.Call(readerCtx, mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: p})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	var out struct{ FS outcome }
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	if out.FS.Error != nil {
		t.Fatalf("reader: %+v, want the read the role leaves", out.FS)
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("the reader was asked %d questions (%s): a member must not prompt themselves past their role's grant", len(q), q[0].Params)
	}
}

// TestRateStoreFollowsTheBackend: the server's rate-limit buckets are the
// PostgreSQL database's when memory.backend names one (shared by the
// replicas), this process's on the file backend.
func TestRateStoreFollowsTheBackend(t *testing.T) {
	dir := t.TempDir()
	a, _ := startApp(t, dir, "project: {root: "+dir+"}\n", nil)
	if s := a.ServerOptions(mcpserver.Options{}).RateStore; s != nil {
		t.Errorf("file backend: rate store %v, want none", s)
	}
	url := pg.DB(t)
	dir = t.TempDir()
	a, _ = startApp(t, dir, "project: {root: "+dir+"}\nmemory: {backend: \""+url+"\"}\n", nil)
	s := a.ServerOptions(mcpserver.Options{}).RateStore
	if s == nil {
		t.Fatal("postgres backend: no rate store")
	}
	if !strings.HasPrefix(s.Name(), "postgres://postgres@127.0.0.1:") {
		t.Errorf("store named %q", s.Name())
	}
	for i, want := range []bool{true, false} {
		ok, _, err := s.Take(context.Background(), "tool \"echo\"", 1.0/3600, 1)
		if err != nil || ok != want {
			t.Errorf("take %d: %v %v, want %v", i, ok, err, want)
		}
	}
}

// TestMemoryResourcesCapped: a memory:// read runs as no tool, so no
// grant limits it; a role's memory_resources does. A member of a role
// capped to arch reads arch/db, is refused notes/pay (naming the line) and
// is not offered it as a completion; a member of a role with false reads
// nothing; someone in no role, and a local client, read every topic.
func TestMemoryResourcesCapped(t *testing.T) {
	a, _, _, _ := resourceWorld(t, true)
	for _, topic := range []string{"arch/db", "notes/pay"} {
		if res := call(t, a, "hostcalls", `{"memory":{"op":"set","topic":"`+topic+`","value":"x"}}`); res.IsError {
			t.Fatalf("set %s: %+v", topic, res.Error)
		}
	}
	cfgPath := a.Config().File
	body, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	body = []byte(strings.Replace(string(body), "server:\n", `server:
  oauth:
    resource: https://warden.example.com/mcp
    issuers: [{issuer: https://id.example.com, jwks_url: https://id.example.com/jwks}]
`, 1) + `access:
  roles:
    architects:
      groups: [architects]
      memory_resources: [arch]
    guests:
      groups: [guests]
      memory_resources: false
`)
	if err := os.WriteFile(cfgPath, body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.live.Reload(); err != nil {
		t.Fatal(err)
	}
	as := func(groups ...string) context.Context {
		return principal.With(context.Background(), principal.Principal{Subject: "bob", Via: principal.ViaOAuth,
			Issuer: "https://id.example.com", Groups: groups})
	}
	read := func(ctx context.Context, topic string) error {
		_, err := a.ReadResource(ctx, mcpserver.FeatureCall{Owner: MemoryOwner, Pass: mcpserver.LocalPass(), Observer: nopObserver{}}, "memory://"+topic)
		return err
	}
	complete := func(ctx context.Context) string {
		c, err := a.Complete(ctx, mcpserver.FeatureCall{Owner: MemoryOwner, Pass: mcpserver.LocalPass(), Observer: nopObserver{}},
			tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/resource", URI: memoryTemplate}, Argument: tool.CompleteArgument{Name: "topic"}})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(c.Values, ",")
	}
	architect := as("architects")
	if err := read(architect, "arch/db"); err != nil {
		t.Errorf("architect reading arch/db: %v", err)
	}
	err = read(architect, "notes/pay")
	var te *tool.Error
	want := `memory://notes/pay is not readable by "bob": access.roles.architects.memory_resources allows only the topics ["arch"] to the role's members (` + cfgPath + ")"
	if !errors.As(err, &te) || te.Kind != tool.KindDenied || te.Message != want {
		t.Errorf("architect reading notes/pay: %v\nwant denied: %s", err, want)
	}
	if got := complete(architect); got != "arch/db" {
		t.Errorf("architect's completion %q, want arch/db only", got)
	}
	if err := read(as("guests"), "arch/db"); err == nil || !strings.Contains(err.Error(), "access.roles.guests.memory_resources allows no topic") {
		t.Errorf("guest reading arch/db: %v, want refused", err)
	}
	if err := read(as("architects", "guests"), "arch/db"); err == nil {
		t.Error("a member of both roles read arch/db: every cap must allow it")
	}
	for _, ctx := range []context.Context{as("others"), context.Background()} {
		if err := read(ctx, "notes/pay"); err != nil {
			t.Errorf("no role: %v", err)
		}
		if got := complete(ctx); got != "arch/db,notes/pay" {
			t.Errorf("no role: completion %q", got)
		}
	}
}

// hostcallsProject returns a project directory whose tools dir holds the
// hostcalls test guest as hostcalls.wasm.
func hostcallsProject(t *testing.T) string {
	t.Helper()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../runtime/testdata/goguest/hostcalls"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "tools", "hostcalls.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
