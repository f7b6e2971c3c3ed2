package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A person in the loop, end to end: the real warden binary, the go-sdk
// client's elicitation, sampling and roots handlers, over stdio (a
// 2025-11-25 session), HTTP with a session (2025-11-25) and stateless HTTP
// (2026-07-28: input-required results, answered by the client's retries).

// personConfig is config.yaml for these tests: hostcalls may write out/,
// and asks before each call; the conformance fixtures may ask the client.
func personConfig(e *env, clientWait string) string {
	return `# warden config for the person-in-the-loop tests
project:
  root: ` + e.dir + `
tools:
  dir: ` + e.tools + `
  cache_dir: ` + built.cacheDir + `
  defaults:
    client_wait: ` + clientWait + `   # a person who never answers
  grants:
    hostcalls:
      fs: {write: [out]}   # no read grant: reads are put to the person
    test_elicitation: {module: conformance, client: [elicit]}
    test_sampling: {module: conformance, client: [sample]}
    test_input_required_result_list_roots: {module: conformance, client: [roots]}
  gates:
    hostcalls: {action: confirm}
log:
  level: info
`
}

// transport is one way of reaching warden.
type transport struct {
	name     string
	protocol string
	connect  func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession
}

func transports() []transport {
	return []transport{
		{name: "stdio", protocol: "2025-11-25", connect: func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession {
			cs, _ := stdioServer(t, e, "2025-11-25", opts)
			return cs
		}},
		{name: "http-session", protocol: "2025-11-25", connect: func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession {
			return startHTTP(t, e).connect(t, "2025-11-25", opts, nil)
		}},
		{name: "http-stateless", protocol: "2026-07-28", connect: func(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession {
			return startHTTP(t, e).connect(t, "2026-07-28", opts, nil)
		}},
	}
}

func personEnv(t *testing.T, clientWait string) *env {
	t.Helper()
	e := newEnv(t, "", "hostcalls", "conformance", "echo")
	if err := os.WriteFile(e.config, []byte(personConfig(e, clientWait)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(e.dir, "docs"), 0o755)
	os.MkdirAll(filepath.Join(e.dir, "out"), 0o755)
	os.WriteFile(filepath.Join(e.dir, "docs", "readme.md"), []byte("docs-marker"), 0o644)
	os.WriteFile(filepath.Join(e.dir, ".env"), []byte("TOKEN=never-offered"), 0o644)
	return e
}

// decider answers elicitations: the gate's confirmation with confirm, a
// permission prompt with permit, and counts what it was asked.
type decider struct {
	confirm string // accept, decline, cancel
	permit  string // once, always, deny
	block   bool   // never answer: wait for the request's context or release
	release chan struct{}
	asked   atomic.Int64
	mu      sync.Mutex
	msgs    []string
}

func (d *decider) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	d.asked.Add(1)
	d.mu.Lock()
	d.msgs = append(d.msgs, req.Params.Message)
	d.mu.Unlock()
	if d.block {
		// The server's notifications/cancelled for its question can be
		// lost when the call ends first (the go-sdk sends it afterwards, on
		// the call's stream), so the test releases the handler itself
		// before closing the session.
		select {
		case <-ctx.Done():
		case <-d.release:
		}
		return nil, errors.New("no answer")
	}
	if strings.Contains(req.Params.Message, "run tool hostcalls") {
		return &mcp.ElicitResult{Action: d.confirm}, nil
	}
	if strings.Contains(req.Params.Message, "asks for fs.read") {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": d.permit}}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
}

func hostcallsArgs(fs map[string]any) map[string]any {
	// An env key the descriptor does not request: never put to the person.
	return map[string]any{"fs": fs, "env": map[string]any{"op": "get", "key": "UNREQUESTED"}}
}

type fsOutcome struct {
	FS struct {
		Result json.RawMessage
		Error  *struct{ Kind, Message string }
	}
}

func hostcallsFS(t *testing.T, res *mcp.CallToolResult) fsOutcome {
	t.Helper()
	if res.IsError {
		t.Fatalf("hostcalls failed: %s", dump(res))
	}
	var out fsOutcome
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("structured content %s: %v", raw, err)
	}
	return out
}

func TestPersonInTheLoop(t *testing.T) {
	for _, tr := range transports() {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := personEnv(t, "2m")
			d := &decider{confirm: "decline", permit: "always"}
			cs := tr.connect(t, e, &mcp.ClientOptions{ElicitationHandler: d.handle,
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: "Paris"}}, nil
				}})
			out := filepath.Join(e.dir, "out", "x.txt")
			write := hostcallsArgs(map[string]any{"op": "write", "path": "out/x.txt", "content": "hello"})

			// The gate: declined, nothing runs, no byte written.
			res := call(t, cs, "hostcalls", write)
			wantFailure(t, res, "denied")
			if res.Meta["warden/gate"] != "declined" {
				t.Fatalf("declined call _meta: %v", res.Meta)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a declined call wrote %s (%v)", out, err)
			}
			if d.asked.Load() != 1 || !strings.Contains(d.msgs[0], `"content":"hello"`) || !strings.Contains(d.msgs[0], "fs.write=out") {
				t.Fatalf("the confirmation showed %q", d.msgs)
			}
			// Accepted: it runs.
			d.confirm = "accept"
			if got := hostcallsFS(t, call(t, cs, "hostcalls", write)); got.FS.Error != nil {
				t.Fatalf("accepted write: %+v", got.FS.Error)
			}
			if b, err := os.ReadFile(out); err != nil || string(b) != "hello" {
				t.Fatalf("after the accepted call %s = %q, %v", out, b, err)
			}

			// A permission prompt answered "always": config.yaml gains the
			// grant with its comments, and the next call passes unasked.
			asked := d.asked.Load()
			read := hostcallsArgs(map[string]any{"op": "read", "path": "docs/readme.md"})
			got := hostcallsFS(t, call(t, cs, "hostcalls", read))
			if got.FS.Error != nil || !strings.Contains(string(got.FS.Result), "docs-marker") {
				t.Fatalf("read after allow always: %+v %s", got.FS.Error, got.FS.Result)
			}
			if n := d.asked.Load() - asked; n != 2 { // the gate, then the prompt
				t.Fatalf("asked %d times for the read, want 2", n)
			}
			cfg, _ := os.ReadFile(e.config)
			if !strings.Contains(string(cfg), "# a person who never answers") || !strings.Contains(string(cfg), "docs/readme.md") {
				t.Fatalf("config.yaml after allow always:\n%s", cfg)
			}
			asked = d.asked.Load()
			if got := hostcallsFS(t, call(t, cs, "hostcalls", read)); got.FS.Error != nil {
				t.Fatalf("read after the grant was written: %+v", got.FS.Error)
			}
			if n := d.asked.Load() - asked; n != 1 { // the gate only
				t.Fatalf("asked %d times, want only the gate", n)
			}
			for _, m := range d.msgs[asked:] {
				if strings.Contains(m, "asks for fs.read") {
					t.Fatalf("asked again for a granted path: %q", m)
				}
			}
			// The deny-list is never offered.
			asked = d.asked.Load()
			got = hostcallsFS(t, call(t, cs, "hostcalls", hostcallsArgs(map[string]any{"op": "read", "path": ".env"})))
			if got.FS.Error == nil || got.FS.Error.Kind != "denied" {
				t.Fatalf(".env: %+v", got)
			}
			for _, m := range d.msgs[asked:] {
				if strings.Contains(m, "asks for") {
					t.Fatalf("the person was offered .env: %q", m)
				}
			}

			// A tool that asks: elicitation and sampling reach the handlers.
			if txt := text(t, call(t, cs, "test_elicitation", map[string]any{"message": "who?"})); !strings.Contains(txt, "ada@example.com") {
				t.Fatalf("test_elicitation: %q", txt)
			}
			if txt := text(t, call(t, cs, "test_sampling", map[string]any{"prompt": "capital?"})); txt != "LLM response: Paris" {
				t.Fatalf("test_sampling: %q", txt)
			}
		})
	}
}

func TestPersonWithoutElicitation(t *testing.T) {
	for _, tr := range transports() {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := personEnv(t, "2m")
			cs := tr.connect(t, e, nil)
			res := call(t, cs, "hostcalls", hostcallsArgs(map[string]any{"op": "write", "path": "out/x.txt", "content": "x"}))
			wantFailure(t, res, "denied")
			if msg := text(t, res); !strings.Contains(msg, "tools.gates.hostcalls.action: allow in "+e.config) {
				t.Fatalf("the refusal does not name the config line: %q", msg)
			}
			if _, err := os.Stat(filepath.Join(e.dir, "out", "x.txt")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("a refused call wrote its file")
			}
			// A tool that asks a client without the capability.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who?"}})
			if tr.protocol >= "2026-07-28" {
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) || rpc.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(rpc.Data), "elicitation") {
					t.Fatalf("want -32021 naming elicitation, got %v %s", err, dump(res))
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				wantFailure(t, res, "unsupported")
			}
			wantEcho(t, cs, "still serving")
		})
	}
}

func TestPersonWhoNeverAnswers(t *testing.T) {
	for _, tr := range transports()[:2] { // stateless: the client never retries; nothing waits
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := personEnv(t, "1s")
			d := &decider{block: true, release: make(chan struct{})}
			cs := tr.connect(t, e, &mcp.ClientOptions{ElicitationHandler: d.handle})
			e2 := personEnv(t, "10m")
			cs2 := tr.connect(t, e2, &mcp.ClientOptions{ElicitationHandler: d.handle})
			t.Cleanup(func() { close(d.release) }) // runs before the sessions close
			// Bounded by client_wait: the gate's wait times out, nothing runs.
			res := call(t, cs, "hostcalls", hostcallsArgs(map[string]any{"op": "write", "path": "out/x.txt", "content": "x"}))
			wantFailure(t, res, "timeout")
			if !strings.Contains(text(t, res), "tools.defaults.client_wait") {
				t.Fatalf("timeout does not name the limit: %s", dump(res))
			}
			// A tool's own ask: bounded the same way (the tool passes the
			// host's timeout on as its own failure), and the next call works.
			res = call(t, cs, "test_elicitation", map[string]any{"message": "who?"})
			wantFailure(t, res, "failed")
			if !strings.Contains(text(t, res), "did not answer elicitation/create within 1s (tools.defaults.client_wait)") {
				t.Fatalf("tool's ask: %s", dump(res))
			}
			// Cancelled by the client while the person thinks.
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			before := d.asked.Load()
			go func() {
				_, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "who?"}})
				done <- err
			}()
			eventually(t, "the person is asked", func() bool { return d.asked.Load() > before })
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled call: %v", err)
			}
			wantEcho(t, cs2, "still serving")
		})
	}
}

func TestPersonTamperedRequestState(t *testing.T) {
	e := personEnv(t, "2m")
	srv := startHTTP(t, e)
	cs := srv.connect(t, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: (&decider{confirm: "accept"}).handle,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	write := hostcallsArgs(map[string]any{"op": "write", "path": "out/x.txt", "content": "x"})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write})
	if err != nil || !res.NeedsInput() || res.RequestState == "" {
		t.Fatalf("want an input-required result with a state: %v %s", err, dump(res))
	}
	ir, ok := res.InputRequests["warden/confirm"].(*mcp.ElicitParams)
	if !ok || !strings.Contains(ir.Message, "run tool hostcalls") {
		t.Fatalf("input requests: %s", dump(res.InputRequests))
	}
	accept := mcp.InputResponseMap{"warden/confirm": &mcp.ElicitResult{Action: "accept"}}
	for name, state := range map[string]string{
		"tampered":  res.RequestState[:len(res.RequestState)-2] + "AA",
		"truncated": res.RequestState[:len(res.RequestState)/2],
		"garbage":   "not-a-state",
	} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write, InputResponses: accept, RequestState: state})
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("%s state: want -32602, got %v", name, err)
		}
	}
	// Without a state, warden's own question cannot be answered.
	res2, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write, InputResponses: accept})
	if err != nil || !res2.NeedsInput() {
		t.Fatalf("a confirmation without a state was accepted: %v %s", err, dump(res2))
	}
	// For other arguments, refused.
	other := hostcallsArgs(map[string]any{"op": "write", "path": "out/y.txt", "content": "y"})
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: other, InputResponses: accept, RequestState: res.RequestState}); err == nil {
		t.Fatal("a state for other arguments was accepted")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "out", "x.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("something ran on a refused state")
	}
	// The genuine state, once: it runs; replayed: refused.
	res3, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write, InputResponses: accept, RequestState: res2.RequestState})
	if err != nil || res3.IsError || res3.NeedsInput() {
		t.Fatalf("genuine state: %v %s", err, dump(res3))
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write, InputResponses: accept, RequestState: res2.RequestState}); err == nil {
		t.Fatal("a replayed state was accepted")
	}
}

// promptConfig is config.yaml for the permission-prompt attacks: no gate,
// hostcalls granted nothing but what grants adds (YAML lines under
// tools.grants), extra (YAML lines under tools) appended.
func promptConfig(e *env, grants, extra string) string {
	return `# warden config for the permission-prompt attacks
project:
  root: ` + e.dir + `
tools:
  dir: ` + e.tools + `
  cache_dir: ` + built.cacheDir + `
  defaults:
    client_wait: 2m
  grants:
    test_elicitation: {module: conformance, client: [elicit]}
` + grants + extra + `log:
  level: info
`
}

// promptEnv is personEnv with promptConfig.
func promptEnv(t *testing.T, grants, extra string) *env {
	t.Helper()
	e := personEnv(t, "2m")
	if err := os.WriteFile(e.config, []byte(promptConfig(e, grants, extra)), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// recorder answers every elicitation with answer and records what the
// client received: the message and the _meta of each question.
type recorder struct {
	mu     sync.Mutex
	asked  []*mcp.ElicitParams
	answer func(*mcp.ElicitParams) *mcp.ElicitResult
}

func (r *recorder) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	r.mu.Lock()
	r.asked = append(r.asked, req.Params)
	r.mu.Unlock()
	return r.answer(req.Params), nil
}

func (r *recorder) questions() []*mcp.ElicitParams {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.asked)
}

func decide(decision string) func(*mcp.ElicitParams) *mcp.ElicitResult {
	return func(*mcp.ElicitParams) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}
	}
}

func readArgs(path string) map[string]any {
	return hostcallsArgs(map[string]any{"op": "read", "path": path})
}

// TestPromptNotPutForAnotherModulesGrant: the grant entry of hostcalls is
// bound to module "reviewed", which is absent; the unpinned module
// hostcalls serves the name. Its denial is not put to the person (an
// "always" would land in reviewed's entry), the refusal names the line that
// would allow it, nothing is written, and the session still serves.
func TestPromptNotPutForAnotherModulesGrant(t *testing.T) {
	e := promptEnv(t, "    hostcalls: {module: reviewed, env: [HOME]}\n", "")
	before, _ := os.ReadFile(e.config)
	r := &recorder{answer: decide("always")}
	cs, _ := stdioServer(t, e, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: r.handle})
	got := hostcallsFS(t, call(t, cs, "hostcalls", readArgs("docs/readme.md")))
	want := "not put to the person: tools.grants.hostcalls belongs to module reviewed, and tool hostcalls is served by module hostcalls"
	if got.FS.Error == nil || got.FS.Error.Kind != "denied" || !strings.Contains(got.FS.Error.Message, want) ||
		!strings.Contains(got.FS.Error.Message, "warden grant hostcalls --module hostcalls") {
		t.Fatalf("read: %+v", got.FS)
	}
	if q := r.questions(); len(q) != 0 {
		t.Fatalf("the person was asked to widen another module's grant: %s", dump(q))
	}
	if after, _ := os.ReadFile(e.config); !bytes.Equal(after, before) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
	wantEcho(t, cs, "still serving")
}

// TestPromptOffersAlwaysOnlyWhatConfigTakes: a path with ":" names a root in
// a grant, so config refuses "docs/a:b.md" as a grant. The prompt names the
// module and offers only once or deny, saying why (the go-sdk client would
// refuse to send an answer the schema does not list; the unit test
// TestPermissionPromptOffersAlwaysOnlyForAGrantConfigTakes sends "always"
// anyway); nothing is written; "once" works for the call.
func TestPromptOffersAlwaysOnlyWhatConfigTakes(t *testing.T) {
	e := promptEnv(t, "", "")
	if err := os.WriteFile(filepath.Join(e.dir, "docs", "a:b.md"), []byte("colon-marker"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(e.config)
	r := &recorder{answer: decide("deny")}
	cs, _ := stdioServer(t, e, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: r.handle})
	got := hostcallsFS(t, call(t, cs, "hostcalls", readArgs("docs/a:b.md")))
	if got.FS.Error == nil || got.FS.Error.Kind != "denied" || !strings.Contains(got.FS.Error.Message, "the person denied it when asked") {
		t.Fatalf("denied: %s", dump(got.FS))
	}
	q := r.questions()
	if len(q) != 1 {
		t.Fatalf("asked %d questions: %s", len(q), dump(q))
	}
	schema, _ := json.Marshal(q[0].RequestedSchema)
	if !strings.HasPrefix(q[0].Message, "warden: tool hostcalls (module hostcalls, sha256 ") ||
		!strings.Contains(q[0].Message, `"Allow always" is not offered: config would refuse tools.grants.hostcalls.fs.read: ["docs/a:b.md"]`) ||
		!strings.Contains(q[0].Message, `names root "docs/a", which project.roots does not define`) ||
		!strings.Contains(string(schema), `"enum":["once","deny"]`) {
		t.Fatalf("the prompt: %q, schema %s", q[0].Message, schema)
	}
	if after, _ := os.ReadFile(e.config); !bytes.Equal(after, before) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
	r.answer = decide("once")
	if got := hostcallsFS(t, call(t, cs, "hostcalls", readArgs("docs/a:b.md"))); got.FS.Error != nil || !strings.Contains(string(got.FS.Result), "colon-marker") {
		t.Fatalf("allow once: %+v", got.FS)
	}
	if after, _ := os.ReadFile(e.config); !bytes.Equal(after, before) {
		t.Fatalf("config.yaml changed after allow once:\n%s", after)
	}
	wantEcho(t, cs, "still serving")
}

// TestPromptRetryAfterRevokeAsksAgain: over 2026-07-28, a call asks for
// fs.read (answered "always": the grant is written) and then for env HOME;
// the state of that second round records the "always". The owner revokes
// the grant. The client's retry with that state replays the call: the
// recorded "always" was given under another config, so it is not used —
// the person is asked again, and nothing is written.
func TestPromptRetryAfterRevokeAsksAgain(t *testing.T) {
	e := promptEnv(t, "", "")
	original, _ := os.ReadFile(e.config)
	srv := startHTTP(t, e)
	cs := srv.connect(t, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: (&recorder{answer: decide("deny")}).handle,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := hostcallsArgs(map[string]any{"op": "read", "path": "docs/readme.md"})
	args["env"] = map[string]any{"op": "get", "key": "HOME"}
	retry := func(responses mcp.InputResponseMap, state string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: args, InputResponses: responses, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	r1 := retry(nil, "")
	p1, ok := r1.InputRequests["warden/permission-1"].(*mcp.ElicitParams)
	if !r1.NeedsInput() || !ok || !strings.Contains(p1.Message, "asks for fs.read docs/readme.md") || p1.Meta["warden/question"] != "permission" {
		t.Fatalf("first round: %s", dump(r1))
	}
	r2 := retry(mcp.InputResponseMap{"warden/permission-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always"}}}, r1.RequestState)
	if _, ok := r2.InputRequests["warden/permission-2"].(*mcp.ElicitParams); !r2.NeedsInput() || !ok {
		t.Fatalf("second round: %s", dump(r2))
	}
	if cfg, _ := os.ReadFile(e.config); !strings.Contains(string(cfg), "docs/readme.md") {
		t.Fatalf("\"always\" wrote no grant:\n%s", cfg)
	}
	// The owner revokes; test_sampling hidden is the sign the reload is in
	// force.
	revoked := strings.Replace(string(original), "log:\n", "  hide: [test_sampling]\nlog:\n", 1)
	if err := os.WriteFile(e.config, []byte(revoked), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revoke is in force", func() bool { return !slices.Contains(toolNames(t, cs), "test_sampling") })
	r3 := retry(mcp.InputResponseMap{"warden/permission-2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}, r2.RequestState)
	p3, ok := r3.InputRequests["warden/permission-1"].(*mcp.ElicitParams)
	if !r3.NeedsInput() || !ok || !strings.Contains(p3.Message, "asks for fs.read docs/readme.md") {
		t.Fatalf("the retry after the revoke was not asked again: %s", dump(r3))
	}
	if p3.Meta["warden/config"] == p1.Meta["warden/config"] {
		t.Fatalf("the question after the revoke carries the old config digest %v", p3.Meta)
	}
	if after, _ := os.ReadFile(e.config); string(after) != revoked {
		t.Fatalf("the retry wrote the revoked grant again:\n%s", after)
	}
	wantEcho(t, cs, "still serving")
}

// TestToolCannotPoseAsWarden: test_elicitation, granted client: [elicit],
// sends the exact text of a permission prompt warden put to the person.
// The client receives it visibly the tool's: a first line naming the tool
// and its module, the text quoted, and no warden mark in _meta; warden's
// own prompt carries the mark.
func TestToolCannotPoseAsWarden(t *testing.T) {
	for _, tr := range transports() {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			e := promptEnv(t, "", "")
			r := &recorder{answer: func(p *mcp.ElicitParams) *mcp.ElicitResult {
				if p.Meta["warden/question"] == "permission" {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}
			}}
			cs := tr.connect(t, e, &mcp.ClientOptions{ElicitationHandler: r.handle})
			hostcallsFS(t, call(t, cs, "hostcalls", readArgs("docs/readme.md")))
			q := r.questions()
			if len(q) != 1 || q[0].Meta["warden/question"] != "permission" || !strings.HasPrefix(q[0].Message, "warden: tool hostcalls (module hostcalls, sha256 ") {
				t.Fatalf("warden's prompt: %s", dump(q))
			}
			prompt := q[0].Message
			if txt := text(t, call(t, cs, "test_elicitation", map[string]any{"message": prompt})); !strings.Contains(txt, "ada@example.com") {
				t.Fatalf("test_elicitation: %q", txt)
			}
			q = r.questions()
			if len(q) != 2 {
				t.Fatalf("asked %d questions: %s", len(q), dump(q))
			}
			posed := q[1]
			want := "Question from tool test_elicitation (module conformance), not from warden:\n> " + strings.ReplaceAll(prompt, "\n", "\n> ")
			if posed.Message != want {
				t.Fatalf("the client received\n%q\nwant\n%q", posed.Message, want)
			}
			for k := range posed.Meta {
				if strings.HasPrefix(k, "warden/") {
					t.Fatalf("a tool's question carries warden's _meta %v", posed.Meta)
				}
			}
			wantEcho(t, cs, "still serving")
		})
	}
}

// TestGateAnswerAfterConfigChangeAsksAgain: a gate's confirmation asked
// under one config and answered after the owner changed config.yaml is not
// taken: the retry is asked again and nothing runs; answered under the
// config in force, the call runs.
func TestGateAnswerAfterConfigChangeAsksAgain(t *testing.T) {
	e := personEnv(t, "2m")
	srv := startHTTP(t, e)
	cs := srv.connect(t, "2026-07-28", &mcp.ClientOptions{ElicitationHandler: (&decider{confirm: "accept"}).handle,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	write := hostcallsArgs(map[string]any{"op": "write", "path": "out/x.txt", "content": "x"})
	out := filepath.Join(e.dir, "out", "x.txt")
	yes := mcp.InputResponseMap{"warden/confirm": &mcp.ElicitResult{Action: "accept"}}
	r1, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write})
	p1, ok := r1.InputRequests["warden/confirm"].(*mcp.ElicitParams)
	if err != nil || !r1.NeedsInput() || !ok || p1.Meta["warden/question"] != "confirm" {
		t.Fatalf("want the gate's confirmation: %v %s", err, dump(r1))
	}
	cfg, _ := os.ReadFile(e.config)
	changed := strings.Replace(string(cfg), "log:\n", "  hide: [test_sampling]\nlog:\n", 1)
	if err := os.WriteFile(e.config, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the change is in force", func() bool { return !slices.Contains(toolNames(t, cs), "test_sampling") })
	r2, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write, InputResponses: yes, RequestState: r1.RequestState})
	p2, ok := r2.InputRequests["warden/confirm"].(*mcp.ElicitParams)
	if err != nil || !r2.NeedsInput() || !ok || p2.Meta["warden/config"] == p1.Meta["warden/config"] {
		t.Fatalf("an answer given under the old config was taken: %v %s", err, dump(r2))
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the call ran on an answer given under another config (%v)", err)
	}
	r3, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostcalls", Arguments: write, InputResponses: yes, RequestState: r2.RequestState})
	if err != nil || r3.NeedsInput() || r3.IsError {
		t.Fatalf("answered under the config in force: %v %s", err, dump(r3))
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "x" {
		t.Fatalf("%s = %q, %v", out, b, err)
	}
	wantEcho(t, cs, "still serving")
}

// TestPromptSaysWhenTheGrantWasNotSaved: the person answers "always", but
// while they were asked the owner bound hostcalls's grant entry to another
// module, so the grant cannot be written into it. The call still has this
// one read (the person allowed it), and its result says the grant was NOT
// saved and why: a text item and _meta warden/notices, not only a line on
// the server's stderr. config.yaml is the owner's, byte for byte.
func TestPromptSaysWhenTheGrantWasNotSaved(t *testing.T) {
	e := promptEnv(t, "", "")
	rebound := promptConfig(e, "    hostcalls: {module: reviewed}\n", "")
	r := &recorder{answer: func(p *mcp.ElicitParams) *mcp.ElicitResult {
		if err := os.WriteFile(e.config, []byte(rebound), 0o644); err != nil {
			t.Error(err)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always"}}
	}}
	cs, _ := stdioServer(t, e, "2025-11-25", &mcp.ClientOptions{ElicitationHandler: r.handle})
	res := call(t, cs, "hostcalls", readArgs("docs/readme.md"))
	if got := hostcallsFS(t, res); got.FS.Error != nil || !strings.Contains(string(got.FS.Result), "docs-marker") {
		t.Fatalf("the read the person allowed: %+v", got.FS)
	}
	want := `warden: the grant tools.grants.hostcalls.fs.read: ["docs/readme.md"] (with tools.grants.hostcalls.module: hostcalls) was NOT saved to ` +
		e.config + ": config " + e.config + ": tools.grants.hostcalls belongs to module reviewed, not to module hostcalls serving the tool; it applied to this call only"
	notices, _ := res.Meta["warden/notices"].([]any)
	if len(notices) != 1 || notices[0] != want {
		t.Fatalf("_meta warden/notices = %v, want [%q]", res.Meta["warden/notices"], want)
	}
	if last, ok := res.Content[len(res.Content)-1].(*mcp.TextContent); !ok || last.Text != want {
		t.Fatalf("the result's content does not say it: %s", dump(res.Content))
	}
	if after, _ := os.ReadFile(e.config); string(after) != rebound {
		t.Fatalf("config.yaml is not the owner's:\n%s", after)
	}
	wantEcho(t, cs, "still serving")
}
