package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/warden-run/warden/internal/oauth"
	"github.com/warden-run/warden/internal/oauth/oauthtest"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// doorConfig serves the doors fixture: every tool may write out/; hidden
// is hidden, blocked blocked, fixed answered by its gate, confirmed asks a
// person, and scoped needs the OAuth scope doors:scoped.
const doorConfig = `project:
  root: .
tools:
  dir: ../tools
  cache_dir: %s
  hide: [hidden]
  scopes:
    scoped: [doors:scoped]
  gates:
    blocked: {action: block, message: not through any door}
    fixed: {action: result, result: fixed answer}
    confirmed: {action: confirm}
  grants:
%s`

// doorWorld is the doors fixture served by a real App over loopback HTTP
// as a resource server of a test issuer. It returns the app, the project's
// out dir, the server and a function connecting a client whose token
// holds scopes.
type doorWorld struct {
	app     *App
	out     string
	config  string
	server  *mcpserver.Server
	connect func(t *testing.T, scopes string) *mcp.ClientSession
	// connectAs is connect with the client's options (its handlers).
	connectAs func(t *testing.T, scopes string, opts *mcp.ClientOptions) *mcp.ClientSession
	// protocol is the revision clients connect at; 2025-11-25 unless set.
	protocol string
}

func newDoorWorld(t *testing.T) (w *doorWorld) {
	t.Helper()
	root := t.TempDir()
	project, tools := filepath.Join(root, "project"), filepath.Join(root, "tools")
	out := filepath.Join(project, "out")
	for _, dir := range []string{out, tools} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../runtime/testdata/goguest/doors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "doors.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	var grants strings.Builder
	for _, name := range doorTools {
		fmt.Fprintf(&grants, "    %s: {module: doors, fs: {write: [out]}}\n", name)
	}
	t.Setenv("HOME", filepath.Join(root, "home"))
	a, cfgPath := startApp(t, project, fmt.Sprintf(doorConfig, userCacheDir, grants.String()), nil)
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) > 0 {
		t.Fatal(errs)
	}
	s := mcpserver.New(a, a.ServerOptions(mcpserver.Options{Logger: discardLogger()}))
	t.Cleanup(func() { s.Close() })

	is := oauthtest.NewIssuer(t)
	is.AddKey(t, jose.ES256, "k1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resource := "http://" + ln.Addr().String() + mcpserver.PathMCP
	v, err := oauth.New(oauth.Options{Resource: resource, Issuers: []oauth.Issuer{{Issuer: is.URL, JWKSURL: is.JWKSURL()}},
		ClockSkew: time.Minute, RefreshMin: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- s.ServeListener(ctx, ln, mcpserver.HTTPOptions{OAuth: &mcpserver.OAuthOptions{
			Resource: resource, AuthorizationServers: []string{is.URL}, Verify: v.VerifyPrincipal}})
	}()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	connectAs := func(t *testing.T, scopes string, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		token := is.Sign(t, "k1", is.Claims(resource, "alice", time.Now(), scopes))
		client := mcp.NewClient(&mcp.Implementation{Name: "door-test", Version: "1"}, opts)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: resource, HTTPClient: &http.Client{Transport: bearerToken(token)},
		}, &mcp.ClientSessionOptions{ProtocolVersion: w.protocol})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	connect := func(t *testing.T, scopes string) *mcp.ClientSession { return connectAs(t, scopes, nil) }
	w = &doorWorld{app: a, out: out, config: cfgPath, server: s, connect: connect, connectAs: connectAs, protocol: "2025-11-25"}
	return w
}

// doorTools are the doors fixture's tools.
var doorTools = []string{"open", "hidden", "blocked", "scoped", "fixed", "confirmed"}

type bearerToken string

func (b bearerToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// written lists the files under out, sorted.
func (w *doorWorld) written(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(w.out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// doorRequest is one way into module code, as a client makes it, for
// the feature of the tool subject; trace is the file the module writes
// when it runs.
type doorRequest struct {
	method, shape, trace string
	do                   func(ctx context.Context, cs *mcp.ClientSession, subject string) error
}

// doorRequests are the requests through each method the server classifies
// as running module code (doorMethods), in every shape.
var doorRequests = []doorRequest{
	{mcpserver.MethodCallTool, "call", "call", func(ctx context.Context, cs *mcp.ClientSession, subject string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: subject, Arguments: map[string]any{}})
		if err == nil && res.IsError {
			return fmt.Errorf("tool error: %s", res.Content[0].(*mcp.TextContent).Text)
		}
		if err == nil && res.Content[0].(*mcp.TextContent).Text != "ran "+subject {
			return fmt.Errorf("answered %q", res.Content[0].(*mcp.TextContent).Text)
		}
		return err
	}},
	{mcpserver.MethodReadResource, "resource", "resource", func(ctx context.Context, cs *mcp.ClientSession, subject string) error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://" + subject + "/resource"})
		return err
	}},
	{mcpserver.MethodReadResource, "template", "template", func(ctx context.Context, cs *mcp.ClientSession, subject string) error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://" + subject + "/item/7"})
		return err
	}},
	{mcpserver.MethodGetPrompt, "prompt", "prompt", func(ctx context.Context, cs *mcp.ClientSession, subject string) error {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: subject + "_prompt"})
		return err
	}},
	{mcpserver.MethodComplete, "prompt", "complete-prompt", func(ctx context.Context, cs *mcp.ClientSession, subject string) error {
		_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: subject + "_prompt"},
			Argument: mcp.CompleteParamsArgument{Name: "a", Value: "x"}})
		return err
	}},
	{mcpserver.MethodComplete, "template", "complete-template", func(ctx context.Context, cs *mcp.ClientSession, subject string) error {
		_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "doors://" + subject + "/item/{id}"},
			Argument: mcp.CompleteParamsArgument{Name: "id", Value: "x"}})
		return err
	}},
}

// wantRefusal is the exact refusal of r for subject (by a client whose
// token lacks doors:scoped and that cannot ask a person), as a JSON-RPC
// code and message, or code 0 and what r's do returns for a tools/call
// answered with a result.
func (w *doorWorld) wantRefusal(r doorRequest, subject string) (int64, string) {
	what := map[string]string{
		"call": subject, "resource": "resource doors://" + subject + "/resource", "template": "resource doors://" + subject + "/item/7",
		"prompt": "prompt " + subject + "_prompt",
	}[r.shape]
	if r.method == mcpserver.MethodComplete {
		what = map[string]string{"prompt": "completion of prompt " + subject + "_prompt", "template": "completion of resource template doors://" + subject + "/item/{id}"}[r.shape]
	}
	name := map[string]string{
		"call": subject, "resource": "doors://" + subject + "/resource", "template": "doors://" + subject + "/item/7",
		"prompt": subject + "_prompt",
	}[r.shape]
	if r.method == mcpserver.MethodComplete && r.shape == "template" {
		name = "doors://" + subject + "/item/{id}"
	}
	allow := "tools.gates." + subject + ".action: allow in " + w.config
	denied := func(msg string) (int64, string) {
		if r.method == mcpserver.MethodCallTool {
			return 0, "tool error: denied: " + msg // a tool's result, not a protocol error
		}
		return jsonrpc.CodeInternalError, "denied: " + msg
	}
	switch subject {
	case "hidden":
		switch r.method {
		case mcpserver.MethodCallTool:
			return jsonrpc.CodeInvalidParams, `unknown tool "hidden"`
		case mcpserver.MethodReadResource:
			return mcp.CodeResourceNotFound, "Resource not found"
		case mcpserver.MethodGetPrompt:
			return jsonrpc.CodeInvalidParams, `unknown prompt "hidden_prompt"`
		case mcpserver.MethodComplete:
			typ := map[string]string{"prompt": "ref/prompt", "template": "ref/resource"}[r.shape]
			return jsonrpc.CodeInvalidParams, fmt.Sprintf("completion/complete: no prompt or resource template %q (%s)", name, typ)
		}
	case "scoped":
		msg := `tool "scoped" needs the scope doors:scoped, which the access token does not grant (tools.scopes.scoped in ` + w.config + `)`
		if r.method != mcpserver.MethodCallTool {
			msg = fmt.Sprintf("%s %q runs as tool %q: %s", r.method, name, subject, msg)
		}
		return mcpserver.CodeInsufficientScope, msg
	case "blocked":
		return denied("tool blocked is blocked by tools.gates.blocked: not through any door (" + allow + ")")
	case "fixed":
		if r.method == mcpserver.MethodCallTool {
			return 0, `answered "fixed answer"` // the gate's result stands in for the tool's
		}
		return denied(fmt.Sprintf("%s runs as tool fixed, whose gate (tools.gates.fixed) answers with a fixed result instead of running it; nothing ran (%s)", what, allow))
	case "confirmed":
		if r.method == mcpserver.MethodComplete {
			return denied(fmt.Sprintf("%s runs as tool confirmed, which runs only after a person confirms it (tools.gates.confirmed), and a completion cannot ask a person; to let it run without asking, set %s", what, allow))
		}
		return denied("tool confirmed runs only after a person confirms it (tools.gates.confirmed), and this client cannot ask (it declared no elicitation capability); to let it run without asking, set " + allow)
	}
	return 0, ""
}

// TestOneDoorIntoModuleCode: a hidden tool, a blocked one, one answered by
// its gate, one that needs a person's confirmation and one whose scope the
// caller's token lacks each serve a resource, a resource template, a
// prompt and completions that run as the tool; through every request the
// server answers that runs module code, each is refused exactly as a call
// of the tool is (or, where a feature cannot take the call's answer, with
// a refusal naming the gate), no byte is written with the tool's grant,
// and the session goes on serving. The same requests as an unrestricted
// tool (and as scoped, with the scope) run and leave their trace.
func TestOneDoorIntoModuleCode(t *testing.T) {
	w := newDoorWorld(t)
	ctx := context.Background()
	cs := w.connect(t, "")

	// A hidden tool's features are not listed, as the tool is not.
	lr, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range lr.Resources {
		uris = append(uris, r.URI)
	}
	want := "doors://blocked/resource doors://confirmed/resource doors://fixed/resource doors://nobody doors://open/resource doors://scoped/resource"
	if got := strings.Join(uris, " "); got != want {
		t.Errorf("resources/list = %s\nwant %s", got, want)
	}
	lt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tmpl := range lt.ResourceTemplates {
		if strings.Contains(tmpl.URITemplate, "hidden") {
			t.Errorf("resources/templates/list lists %s", tmpl.URITemplate)
		}
	}
	lp, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Prompts) != len(doorTools)-1 || slices.ContainsFunc(lp.Prompts, func(p *mcp.Prompt) bool { return p.Name == "hidden_prompt" }) {
		t.Errorf("prompts/list = %d prompts, hidden_prompt among them or one missing", len(lp.Prompts))
	}
	// Nor can a client subscribe to one.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "doors://hidden/resource"}); !isRPC(err, mcp.CodeResourceNotFound, "Resource not found") {
		t.Errorf("subscribe to a hidden tool's resource: %v", err)
	}

	for _, subject := range []string{"hidden", "blocked", "fixed", "confirmed", "scoped"} {
		for _, r := range doorRequests {
			t.Run(subject+"/"+r.method+"/"+r.shape, func(t *testing.T) {
				err := r.do(ctx, cs, subject)
				code, msg := w.wantRefusal(r, subject)
				if code == 0 {
					// A tools/call refusal is a tool result with isError.
					if err == nil || err.Error() != msg {
						t.Errorf("refusal = %v\nwant %s", err, msg)
					}
				} else if !isRPC(err, code, msg) {
					t.Errorf("refusal = %v\nwant %d %s", err, code, msg)
				}
				if got := w.written(t); slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, subject+"-") }) {
					t.Fatalf("module code ran as %s: out/ holds %v", subject, got)
				}
				// The session goes on serving, through the same door.
				if err := r.do(ctx, cs, "open"); err != nil {
					t.Fatalf("the next request as open: %v", err)
				}
				if !slices.Contains(w.written(t), "open-"+r.trace) {
					t.Fatalf("open's %s left no trace: out/ holds %v", r.trace, w.written(t))
				}
			})
		}
	}

	// With the scope, the same requests run as scoped.
	full := w.connect(t, "doors:scoped")
	for _, r := range doorRequests {
		if err := r.do(ctx, full, "scoped"); err != nil {
			t.Errorf("%s %s as scoped with the scope: %v", r.method, r.shape, err)
		}
	}
	var scoped []string
	for _, f := range w.written(t) {
		if strings.HasPrefix(f, "scoped-") {
			scoped = append(scoped, f)
		}
	}
	if got := strings.Join(scoped, " "); got != "scoped-call scoped-complete-prompt scoped-complete-template scoped-prompt scoped-resource scoped-template" {
		t.Errorf("scoped with the scope wrote %s", got)
	}

	// A feature that runs as no tool runs with no grants.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://nobody"})
	if err != nil || !strings.HasPrefix(rr.Contents[0].Text, "refused: ") {
		t.Errorf("doors://nobody = %+v, %v", rr, err)
	}
	if slices.Contains(w.written(t), "nobody-resource") {
		t.Error("a feature that runs as no tool wrote with a grant")
	}
}

// TestFeatureConfirmGate: a resource read or prompt get that runs as a
// tool gated by confirm asks the person as a call of the tool does, naming
// the request; declined, nothing runs; accepted, it runs once.
func TestFeatureConfirmGate(t *testing.T) {
	// 2025-11-25 asks with a server request; 2026-07-28 answers
	// input-required and the client retries with the answer.
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) { testFeatureConfirmGate(t, protocol) })
	}
}

func testFeatureConfirmGate(t *testing.T, protocol string) {
	w := newDoorWorld(t)
	w.protocol = protocol
	ctx := context.Background()
	var asked []string
	answer := "decline"
	cs := w.connectAs(t, "", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			first := strings.SplitN(req.Params.Message, "\n", 2)[0]
			// The module's sha256 differs with every build of the fixture.
			asked = append(asked, regexp.MustCompile(`sha256 [0-9a-f]{12}`).ReplaceAllString(first, "sha256 …"))
			return &mcp.ElicitResult{Action: answer}, nil
		},
	})
	read := func() error {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://confirmed/resource"})
		return err
	}
	get := func() error {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "confirmed_prompt"})
		return err
	}
	if err := read(); !isRPC(err, jsonrpc.CodeInternalError, "denied: the person did not confirm confirmed (decline); nothing ran") {
		t.Errorf("declined read: %v", err)
	}
	if err := get(); !isRPC(err, jsonrpc.CodeInternalError, "denied: the person did not confirm confirmed (decline); nothing ran") {
		t.Errorf("declined get: %v", err)
	}
	if got := w.written(t); len(got) > 0 {
		t.Fatalf("declined, yet out/ holds %v", got)
	}
	answer = "accept"
	if err := read(); err != nil {
		t.Errorf("accepted read: %v", err)
	}
	if err := get(); err != nil {
		t.Errorf("accepted get: %v", err)
	}
	if got := strings.Join(w.written(t), " "); got != "confirmed-prompt confirmed-resource" {
		t.Errorf("accepted, out/ holds %s", got)
	}
	askRead, askGet := "warden: resources/read as tool confirmed (module doors, sha256 …)?", "warden: prompts/get as tool confirmed (module doors, sha256 …)?"
	want := strings.Join([]string{askRead, askGet, askRead, askGet}, "|")
	if got := strings.Join(asked, "|"); got != want {
		t.Errorf("the person was asked %s\nwant %s", got, want)
	}
}

// isRPC reports whether err is the JSON-RPC error code with message.
func isRPC(err error, code int64, message string) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == code && rpcErr.Message == message
}

// doorMethods are the request methods that run module code: each goes
// through mcpserver's door, and TestOneDoorIntoModuleCode refuses a hidden,
// blocked and out-of-scope tool through each (doorRequests).
var doorMethods = []string{mcpserver.MethodCallTool, mcpserver.MethodReadResource, mcpserver.MethodGetPrompt, mcpserver.MethodComplete}

// noModuleCode are the request methods the server answers that run no
// module code: they answer from what the server holds (lists, the
// session's state) and never call Tools.Call or a Features method.
var noModuleCode = []string{
	"initialize", "ping", "server/discover", "logging/setLevel",
	"tools/list", "resources/list", "resources/templates/list", "prompts/list",
	"resources/subscribe", "resources/unsubscribe", "subscriptions/listen",
}

// specMethods are the client-to-server requests of the MCP revisions the
// go-sdk speaks, besides those its source names (sdkMethods), so that a
// method the go-sdk starts answering is tried even before it has a
// constant of its own.
var specMethods = []string{
	"initialize", "ping", "server/discover", "logging/setLevel", "completion/complete",
	"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
	"resources/subscribe", "resources/unsubscribe", "subscriptions/listen", "prompts/list", "prompts/get",
	"tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "sampling/createMessage", "elicitation/create", "roots/list",
}

// sdkMethods reads the method names the go-sdk's source declares (its
// method... constants), from the module the build uses.
func sdkMethods(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/modelcontextprotocol/go-sdk").Output()
	if err != nil {
		t.Fatalf("go list the go-sdk: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "mcp")
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the go-sdk's source in %s: %v", dir, err)
	}
	constant := regexp.MustCompile(`(?m)^\s*method[A-Za-z]*\s*=\s*"([a-z]+(?:/[A-Za-z]+)*)"`)
	var methods []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range constant.FindAllSubmatch(b, -1) {
			methods = append(methods, string(m[1]))
		}
	}
	if !slices.Contains(methods, "tools/call") {
		t.Fatalf("found no method constants in the go-sdk's source (%s): %v", dir, methods)
	}
	return methods
}

// TestEveryMethodIsClassified asks the real server (the App behind
// mcpserver, over the go-sdk's in-memory transport, at each protocol
// revision) every request method the go-sdk's source or the MCP revisions
// name, and fails for one it answers (anything but "method not found")
// that is neither known to run no module code nor one of the door's
// methods, which TestOneDoorIntoModuleCode exercises: a new way into
// module code cannot be added without passing it through the door and
// this test.
func TestEveryMethodIsClassified(t *testing.T) {
	candidates := append(sdkMethods(t), specMethods...) // before newDoorWorld moves HOME (and the module cache)
	w := newDoorWorld(t)
	sort.Strings(candidates)
	candidates = slices.Compact(candidates)
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		answered := answeredMethods(t, w.server, protocol, candidates)
		for _, m := range answered {
			switch {
			case slices.Contains(doorMethods, m):
				if !slices.ContainsFunc(doorRequests, func(r doorRequest) bool { return r.method == m }) {
					t.Errorf("%s: %s goes through the door but TestOneDoorIntoModuleCode does not try it", protocol, m)
				}
			case slices.Contains(noModuleCode, m):
			default:
				t.Errorf("%s: the server answers %s, which is neither known to run no module code nor one of the door's methods (mcpserver.Method*): pass it through the door (mcpserver enter) and classify it here", protocol, m)
			}
		}
		for _, m := range doorMethods {
			if !slices.Contains(answered, m) {
				t.Errorf("%s: the server does not answer %s, a door method: the classification is stale", protocol, m)
			}
		}
		t.Logf("%s: the server answers %v", protocol, answered)
	}
}

// answeredMethods sends each method, with empty params, to a fresh
// session of s at protocol, and returns those not answered "method not
// found".
func answeredMethods(t *testing.T, s *mcpserver.Server, protocol string, methods []string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, st) }()
	defer func() {
		cancel()
		<-done
	}()
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id := int64(0)
	ask := func(method string, params any) *jsonrpc.Response {
		id++
		raw, _ := json.Marshal(params)
		reqID, _ := jsonrpc.MakeID(float64(id))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: reqID, Method: method, Params: raw}); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read the answer to %s: %v", method, err)
			}
			if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == reqID {
				return resp
			}
		}
	}
	init := ask("initialize", map[string]any{"protocolVersion": protocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "enumerate", "version": "1"}})
	if init.Error != nil {
		t.Fatalf("initialize at %s: %v", protocol, init.Error)
	}
	raw, _ := json.Marshal(map[string]any{})
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: raw}); err != nil {
		t.Fatal(err)
	}
	var answered []string
	for _, m := range methods {
		if strings.HasPrefix(m, "notifications/") {
			continue
		}
		resp := ask(m, map[string]any{})
		var rpcErr *jsonrpc.Error
		if errors.As(resp.Error, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
			continue
		}
		answered = append(answered, m)
	}
	return answered
}

// TestBypassRefused: code that calls the App's entry points without the
// Pass only mcpserver's door makes (a new entry point that skipped it) is
// refused before any module code runs: no byte is written with the tool's
// grant, and the refusal says why.
func TestBypassRefused(t *testing.T) {
	w := newDoorWorld(t)
	ctx := context.Background()
	fc := mcpserver.FeatureCall{Owner: "doors", Observer: nopObserver{}}
	_, err := w.app.ReadResource(ctx, fc, "doors://open/resource")
	wantBypass(t, err, `resources/read as tool "open" did not come through the server's request pipeline; refused`)
	_, err = w.app.GetPrompt(ctx, fc, "open_prompt", nil)
	wantBypass(t, err, `prompts/get as tool "open" did not come through the server's request pipeline; refused`)
	_, err = w.app.Complete(ctx, fc, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "open_prompt"}, Argument: tool.CompleteArgument{Name: "a"}})
	wantBypass(t, err, `completion/complete as tool "open" did not come through the server's request pipeline; refused`)
	_, err = w.app.Call(ctx, mcpserver.Call{Name: "open", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}})
	wantBypass(t, err, `tools/call as tool "open" did not come through the server's request pipeline; refused`)
	_, err = w.app.Call(ctx, mcpserver.Call{Name: "open", Arguments: json.RawMessage(`{}`), Observer: nopObserver{}, Pass: &mcpserver.Pass{}})
	wantBypass(t, err, `tools/call as tool "open" did not come through the server's request pipeline; refused`)
	if got := w.written(t); len(got) > 0 {
		t.Errorf("module code ran without the door's pass: out/ holds %v", got)
	}
	// The operator's own call (warden call) runs, under the tool's
	// policy.
	if res := call(t, w.app, "open", `{}`); res.IsError {
		t.Errorf("a local call: %+v", res.Error)
	}
}

func wantBypass(t *testing.T, err error, message string) {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindInternal || te.Message != message {
		t.Errorf("bypass = %v, want internal: %s", err, message)
	}
}

// TestHiddenFeatureRefusedByTheApp: the app checks exposure at each
// request too (config may hide a tool between the server's resync and a
// request): a hidden tool's features are answered as unknown names, with
// the words the go-sdk uses for them, and do not run.
func TestHiddenFeatureRefusedByTheApp(t *testing.T) {
	w := newDoorWorld(t)
	ctx := context.Background()
	fc := mcpserver.FeatureCall{Owner: "doors", Observer: nopObserver{}, Pass: mcpserver.LocalPass()}
	wantNotFound := func(err error, message string) {
		t.Helper()
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindNotFound || te.Message != message {
			t.Errorf("hidden = %v, want not_found: %s", err, message)
		}
	}
	_, err := w.app.ReadResource(ctx, fc, "doors://hidden/resource")
	wantNotFound(err, `no resource "doors://hidden/resource" is served`)
	_, err = w.app.ReadResource(ctx, fc, "doors://hidden/item/1")
	wantNotFound(err, `no resource "doors://hidden/item/1" is served`)
	_, err = w.app.GetPrompt(ctx, fc, "hidden_prompt", nil)
	wantNotFound(err, `unknown prompt "hidden_prompt"`)
	_, err = w.app.Complete(ctx, fc, tool.CompleteRequest{Ref: tool.CompleteRef{Type: "ref/prompt", Name: "hidden_prompt"}, Argument: tool.CompleteArgument{Name: "a"}})
	wantNotFound(err, `completion/complete: no prompt or resource template "hidden_prompt" (ref/prompt)`)
	if got := w.written(t); len(got) > 0 {
		t.Errorf("a hidden tool's feature ran: out/ holds %v", got)
	}
}

// TestFeatureOfALosingToolNotServed: when a second module describes the
// same tools, their names are refused (neither is pinned), no client can
// call either module's tools, and their features, which would run as
// them, are neither listed nor served.
func TestFeatureOfALosingToolNotServed(t *testing.T) {
	w := newDoorWorld(t)
	ctx := context.Background()
	doors, err := w.app.module("doors")
	if err != nil {
		t.Fatal(err)
	}
	tools := w.app.Config().Tools.Dir
	wasm, err := os.ReadFile(filepath.Join(tools, "doors.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	rivalPath := filepath.Join(tools, "rival.wasm")
	if err := os.WriteFile(rivalPath, wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if loaded, _ := w.app.catalog.LoadFile(ctx, rivalPath); !loaded {
		t.Fatal("rival did not load")
	}
	if _, served := w.app.catalog.Table().Tool("open"); served {
		t.Fatal("open is still served with two modules describing it")
	}
	if w.app.listedAs(w.app.Config(), doors, "open") {
		t.Error("a feature of a refused tool is listed")
	}
	for _, r := range w.app.Features().Resources {
		if r.Tool != "" {
			t.Errorf("listed %s, which runs as the refused tool %s", r.URI, r.Tool)
		}
	}
	fc := mcpserver.FeatureCall{Owner: "doors", Observer: nopObserver{}, Pass: mcpserver.LocalPass()}
	_, err = w.app.ReadResource(ctx, fc, "doors://open/resource")
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != tool.KindNotFound || te.Message != `no resource "doors://open/resource" is served` {
		t.Errorf("a refused tool's resource = %v", err)
	}
	if got := w.written(t); len(got) > 0 {
		t.Errorf("a refused tool's feature ran: out/ holds %v", got)
	}
}

// TestOverlappingTemplatesRunAsTheModuleRoutes: a URI that two of a
// module's templates match, each of another tool, is read by the template
// the module itself routes it to (the first it declared that matches), and
// the door applies that template's tool's policy, not that of the template
// the URI templates' sort order would pick: doors://pair/scoped/1, which
// open's template reads, is read as open by a token without scoped's
// scope (and with it); doors://pair/hidden/1, which hidden's template
// reads, is not found, and its refusal does not name the hidden tool.
func TestOverlappingTemplatesRunAsTheModuleRoutes(t *testing.T) {
	w := newDoorWorld(t)
	ctx := context.Background()
	for _, scopes := range []string{"", "doors:scoped"} {
		cs := w.connect(t, scopes)
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://pair/scoped/1"})
		if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "pair as open" {
			t.Fatalf("scopes %q: doors://pair/scoped/1 = %+v, %v; want it read as open", scopes, rr, err)
		}
		if got := w.written(t); !slices.Equal(got, []string{"open-pair"}) {
			t.Fatalf("scopes %q: out/ holds %v, want open-pair", scopes, got)
		}
		if err := os.Remove(filepath.Join(w.out, "open-pair")); err != nil {
			t.Fatal(err)
		}
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "doors://pair/hidden/1"})
		if !isRPC(err, mcp.CodeResourceNotFound, "Resource not found") {
			t.Errorf("scopes %q: doors://pair/hidden/1 = %v; want not found", scopes, err)
		}
		if err != nil && strings.Contains(err.Error(), "hidden\"") {
			t.Errorf("the refusal names the hidden tool: %v", err)
		}
		if got := w.written(t); len(got) != 0 {
			t.Fatalf("scopes %q: out/ holds %v after the hidden read", scopes, got)
		}
		// Nor can a client subscribe to it.
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "doors://pair/hidden/1"}); !isRPC(err, mcp.CodeResourceNotFound, "Resource not found") {
			t.Errorf("scopes %q: subscribe to doors://pair/hidden/1 = %v; want not found", scopes, err)
		}
	}
}

// TestOwnerLimitsAreTheModules: a feature that runs as no tool waits for
// its module's slots (mcpserver.Options.OwnerLimits): the limits the app answers
// for a module are its instances' (the same a call of its tools waits
// for, without a tool's in-flight bound or rate); the memory resources,
// which run no module, have none.
func TestOwnerLimitsAreTheModules(t *testing.T) {
	w := newDoorWorld(t)
	got := w.app.ownerLimits("doors")
	call := w.app.toolCallLimits("open")
	want := mcpserver.CallLimits{Module: "doors", MaxInstances: call.MaxInstances, InstancesSetting: "tools.limits.doors.max_instances",
		OneCallPerSession: call.OneCallPerSession, IsolationSetting: "tools.limits.doors.isolation"}
	if got != want || got.MaxInstances == 0 || call.Module != "doors" {
		t.Errorf("OwnerLimits(doors) = %+v\nwant %+v (open's: %+v)", got, want, call)
	}
	if got := w.app.ownerLimits(MemoryOwner); got != (mcpserver.CallLimits{}) {
		t.Errorf("OwnerLimits(%s) = %+v, want none", MemoryOwner, got)
	}
}

// TestFeatureGrantsFollowTheModuleBinding: a grant entry bound to another
// module (open: {module: elsewhere, ...}) gives open's features, served by
// doors, nothing, as it gives open's calls nothing: each write is refused
// and nothing is written, through every door.
func TestFeatureGrantsFollowTheModuleBinding(t *testing.T) {
	w := newDoorWorld(t)
	b, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	rebound := strings.Replace(string(b), "open: {module: doors,", "open: {module: elsewhere,", 1)
	if rebound == string(b) {
		t.Fatal("the fixture's config has no grant of open bound to doors")
	}
	if err := os.WriteFile(w.config, []byte(rebound), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := w.connect(t, "")
	for _, r := range doorRequests {
		err := r.do(ctx, cs, "open")
		if err == nil {
			t.Errorf("%s %s as open ran with a grant bound to another module", r.method, r.shape)
		} else if !strings.Contains(err.Error(), "elsewhere") {
			t.Errorf("%s %s as open: the refusal does not name the binding: %v", r.method, r.shape, err)
		}
	}
	if got := w.written(t); len(got) != 0 {
		t.Fatalf("out/ holds %v", got)
	}
}

// TestFeatureHiddenByPattern: a tools.hide pattern (in another case than
// the tool's name) hides a tool's features as it hides the tool, through
// every door, and a config reload that hides it takes effect at the next
// request.
func TestFeatureHiddenByPattern(t *testing.T) {
	w := newDoorWorld(t)
	ctx := context.Background()
	cs := w.connect(t, "doors:scoped")
	b, err := os.ReadFile(w.config)
	if err != nil {
		t.Fatal(err)
	}
	hidden := strings.Replace(string(b), "hide: [hidden]", "hide: [hidden, 'SCO*']", 1)
	if hidden == string(b) {
		t.Fatal("the fixture's config has no hide list")
	}
	if err := os.WriteFile(w.config, []byte(hidden), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	for _, r := range doorRequests {
		if err := r.do(ctx, cs, "scoped"); err == nil {
			t.Errorf("%s %s as scoped, hidden by SCO*, was served", r.method, r.shape)
		}
	}
	if got := w.written(t); len(got) != 0 {
		t.Fatalf("out/ holds %v", got)
	}
	lp, err := w.connect(t, "doors:scoped").ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range lp.Prompts {
		if p.Name == "scoped_prompt" {
			t.Error("prompts/list lists scoped_prompt, hidden by SCO*")
		}
	}
}
