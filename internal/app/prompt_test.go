package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// person is a tool.Client whose person answers every elicitation with the
// next scripted answer, and records what was asked.
type person struct {
	mu      sync.Mutex
	elicit  bool
	answers []string // "accept:<decision>", "accept", "decline"
	// raw, when set, are the answers as the client's bytes, used first.
	raw      []string
	asked    []tool.ClientRequest
	mrtrOnce bool // answer the first ask with ErrInputRequired
	// onAsk, when set, runs as each question is asked, before the answer:
	// what changes while the person thinks.
	onAsk func()
}

func (p *person) Supports(f string) bool { return f == tool.ClientElicit && p.elicit }
func (p *person) Require(f string) bool  { return p.Supports(f) }

func (p *person) Ask(_ context.Context, reqs []tool.ClientRequest) ([]json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, reqs...)
	if p.onAsk != nil {
		p.onAsk()
	}
	if p.mrtrOnce {
		p.mrtrOnce = false
		return nil, tool.ErrInputRequired
	}
	out := make([]json.RawMessage, len(reqs))
	for i := range reqs {
		if len(p.raw) > 0 {
			out[i], p.raw = json.RawMessage(p.raw[0]), p.raw[1:]
			continue
		}
		if len(p.answers) == 0 {
			return nil, context.DeadlineExceeded
		}
		a := p.answers[0]
		p.answers = p.answers[1:]
		action, decision, _ := strings.Cut(a, ":")
		out[i], _ = json.Marshal(map[string]any{"action": action, "content": map[string]any{"decision": decision}})
	}
	return out, nil
}

func (p *person) questions() []tool.ClientRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]tool.ClientRequest(nil), p.asked...)
}

func (w *escapeWorld) callWith(t *testing.T, c tool.Client, fsReq any) (*tool.Result, outcome) {
	t.Helper()
	res, fs, err := tryCallWith(w, c, fsReq)
	if err != nil {
		t.Fatal(err)
	}
	return res, fs
}

// tryCallWith is callWith returning its failure: it never touches a
// testing.T, so a goroutine may call it (inBackground).
func tryCallWith(w *escapeWorld, c tool.Client, fsReq any) (*tool.Result, outcome, error) {
	args, _ := json.Marshal(map[string]any{"fs": fsReq, "env": map[string]any{"op": "get", "key": "VISIBLE"}})
	res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: c})
	if err != nil {
		return nil, outcome{}, err
	}
	var out struct{ FS outcome }
	if !res.IsError {
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			return res, outcome{}, fmt.Errorf("structured content %s: %v", res.StructuredContent, err)
		}
	}
	return res, out.FS, nil
}

var readDocs = map[string]any{"op": "read", "path": "docs/readme.md"}

func TestPermissionPromptAlwaysWritesTheGrant(t *testing.T) {
	w := newEscapeWorld(t)
	// A comment the edit must keep.
	src, _ := os.ReadFile(w.cfgPath)
	os.WriteFile(w.cfgPath, append([]byte("# keep this comment\n"), src...), 0o644)
	if err := w.app.live.Reload(); err != nil {
		t.Fatal(err)
	}
	p := &person{elicit: true, answers: []string{"accept:always"}}
	_, fs := w.callWith(t, p, readDocs)
	if fs.Error != nil || !strings.Contains(string(fs.Result), "docs-marker") {
		t.Fatalf("after allow always, the read = %+v", fs)
	}
	if q := p.questions(); len(q) != 1 || q[0].Key != "warden/permission-1" || !strings.Contains(string(q[0].Params), "docs/readme.md") {
		t.Fatalf("asked %+v", q)
	}
	got, _ := os.ReadFile(w.cfgPath)
	if !strings.Contains(string(got), "# keep this comment") || !strings.Contains(string(got), "docs/readme.md") {
		t.Fatalf("config.yaml after allow always:\n%s", got)
	}
	if g, _ := w.app.Config().Grants("hostcalls", "hostcalls"); len(g.FS.Read) != 1 || g.FS.Read[0] != "docs/readme.md" {
		t.Fatalf("grant in force: %+v", g.FS)
	}
	// The next call passes without asking.
	_, fs = w.callWith(t, p, readDocs)
	if fs.Error != nil || len(p.questions()) != 1 {
		t.Fatalf("second call: %+v, questions %d", fs, len(p.questions()))
	}
}

func TestPermissionPromptOnceAndDeny(t *testing.T) {
	w := newEscapeWorld(t)
	before, _ := os.ReadFile(w.cfgPath)
	p := &person{elicit: true, answers: []string{"accept:once", "accept:deny", "decline"}}
	if _, fs := w.callWith(t, p, readDocs); fs.Error != nil {
		t.Fatalf("allow once: %+v", fs)
	}
	for i, want := range []string{"denied it when asked", "denied it when asked"} {
		_, fs := w.callWith(t, p, readDocs)
		if fs.Error == nil || fs.Error.Kind != tool.KindDenied || !strings.Contains(fs.Error.Message, want) {
			t.Fatalf("answer %d: %+v", i+2, fs)
		}
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != string(before) {
		t.Fatalf("config changed without allow always:\n%s", after)
	}
	if n := len(p.questions()); n != 3 {
		t.Fatalf("asked %d times, want once per call", n)
	}
}

// TestPermissionPromptMalformedAnswerIsNo answers a permission prompt with
// what a hostile client may send back: an action that is not exactly the
// string "accept", a decision that is not exactly once or always, wrong
// types, duplicate members, nothing. Each is a no: the read is denied and
// config.yaml is not touched.
func TestPermissionPromptMalformedAnswerIsNo(t *testing.T) {
	w := newEscapeWorld(t)
	before, _ := os.ReadFile(w.cfgPath)
	for _, raw := range []string{
		`{"action":"ACCEPT","content":{"decision":"always"}}`,
		`{"action":"accept\u0000","content":{"decision":"always"}}`,
		`{"action":"acc\u0435pt","content":{"decision":"always"}}`,
		`{"action":" accept","content":{"decision":"once"}}`,
		`{"action":["accept"],"content":{"decision":"always"}}`,
		`{"action":{"accept":true},"content":{"decision":"always"}}`,
		`{"action":1,"content":{"decision":"always"}}`,
		`{"action":"accept","action":"decline","content":{"decision":"always"}}`,
		`{"action":"accept","content":{"decision":"Always"}}`,
		`{"action":"accept","content":{"decision":["always"]}}`,
		`{"action":"accept","content":{"decision":"always\u0000"}}`,
		`{"action":"accept","content":"always"}`,
		`{"action":"accept"}`,
		`{"decision":"always"}`,
		`"accept"`,
		`null`,
		`{}`,
	} {
		p := &person{elicit: true, raw: []string{raw}}
		if _, fs := w.callWith(t, p, readDocs); fs.Error == nil || fs.Error.Kind != tool.KindDenied {
			t.Errorf("answer %s: the read = %+v, want denied", raw, fs)
		}
		if len(p.questions()) != 1 {
			t.Errorf("answer %s: asked %d times", raw, len(p.questions()))
		}
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != string(before) {
		t.Fatalf("config changed by a malformed answer:\n%s", after)
	}
	if g, _ := w.app.Config().Grants("hostcalls", "hostcalls"); len(g.FS.Read) != 0 {
		t.Fatalf("grant in force after malformed answers: %+v", g.FS)
	}
}

func TestPermissionPromptNeverOffersTheDenyList(t *testing.T) {
	w := newEscapeWorld(t)
	p := &person{elicit: true, answers: []string{"accept:always", "accept:always", "accept:always"}}
	for _, path := range []string{".env", "keys/server.pem", "src/up", "../home/notes.txt"} {
		_, fs := w.callWith(t, p, map[string]any{"op": "read", "path": path})
		if fs.Error == nil {
			t.Fatalf("read %s passed: %s", path, fs.Result)
		}
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("the person was offered a deny-listed or out-of-root path: %+v", q)
	}
}

func TestPermissionPromptOnlyForWhatTheDescriptorRequested(t *testing.T) {
	w := newEscapeWorld(t)
	p := &person{elicit: true, answers: []string{"accept:always"}}
	// hostcalls requests env HOME, not SECRET: no prompt for SECRET.
	args, _ := json.Marshal(map[string]any{"fs": readDocs, "env": map[string]any{"op": "get", "key": "SECRET"}})
	p.answers = []string{"accept:once"}
	res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: p})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var out struct{ FS, Env outcome }
	json.Unmarshal(res.StructuredContent, &out)
	if out.Env.Error == nil || out.Env.Error.Kind != tool.KindDenied {
		t.Fatalf("env SECRET: %+v", out.Env)
	}
	for _, q := range p.questions() {
		if strings.Contains(string(q.Params), "SECRET") {
			t.Fatalf("offered a key the descriptor never requested: %s", q.Params)
		}
	}
}

func TestPermissionPromptsOffOrNoClient(t *testing.T) {
	w := newEscapeWorld(t)
	if _, fs := w.callWith(t, nil, readDocs); fs.Error == nil || fs.Error.Kind != tool.KindDenied {
		t.Fatalf("no client: %+v", fs)
	}
	p := &person{elicit: false, answers: []string{"accept:always"}}
	if _, fs := w.callWith(t, p, readDocs); fs.Error == nil || len(p.questions()) != 0 {
		t.Fatalf("client without elicitation: %+v, asked %d", fs, len(p.questions()))
	}
}

func TestPromptOffersOnlyWhatWasRequested(t *testing.T) {
	r := tool.Capabilities{
		FS:           tool.FSAccess{Read: []string{"docs", "notes:x"}, Write: []string{"out/"}},
		Net:          []string{"api.example.com", "*.cdn.example.com"},
		Env:          []string{"TOKEN"},
		Memory:       tool.MemoryRead,
		MemoryTopics: []string{"arch"},
		LSP:          []string{"rust"},
	}
	for _, c := range []struct {
		need tool.Need
		want bool
	}{
		{tool.Need{Key: "fs.read", Value: "docs/a.md"}, true},
		{tool.Need{Key: "fs.read", Value: "docs"}, true},
		{tool.Need{Key: "fs.read", Value: "docsx/a.md"}, false},
		{tool.Need{Key: "fs.read", Value: "notes:x/y"}, true},
		{tool.Need{Key: "fs.read", Value: "src/a.go"}, false},
		{tool.Need{Key: "fs.write", Value: "out/a"}, true},
		{tool.Need{Key: "fs.write", Value: "docs/a.md"}, false},
		{tool.Need{Key: "net", Value: "https://api.example.com"}, true},
		{tool.Need{Key: "net", Value: "https://img.cdn.example.com"}, true},
		{tool.Need{Key: "net", Value: "https://img.cdn.example.com:8443"}, false},
		{tool.Need{Key: "net", Value: "http://api.example.com"}, false},
		{tool.Need{Key: "net", Value: "https://evil.example.com"}, false},
		{tool.Need{Key: "net", Value: "http://[::1]:8080"}, false},
		{tool.Need{Key: "env", Value: "token"}, true},
		{tool.Need{Key: "env", Value: "SECRET"}, false},
		// A memory level alone grants the whole store; the descriptor asked for arch.
		{tool.Need{Key: "memory", Value: "read"}, false},
		{tool.Need{Key: "memory", Value: "read-write"}, false},
		{tool.Need{Key: "memory.topics", Value: "arch/db"}, true},
		{tool.Need{Key: "memory.topics", Value: "secrets"}, false},
		{tool.Need{Key: "lsp", Value: "go"}, false},
		{tool.Need{Key: "lsp", Value: "rust"}, true},
	} {
		if got := requested(r, c.need); got != c.want {
			t.Errorf("requested(%s=%s) = %v, want %v", c.need.Key, c.need.Value, got, c.want)
		}
	}
}

func TestWidenNeverWritesIntoSharedSlices(t *testing.T) {
	shared := make([]string, 1, 4)
	shared[0] = "docs"
	g := tool.Capabilities{FS: tool.FSAccess{Read: shared}}
	widen(&g, tool.Need{Key: "fs.read", Value: "src"})
	if got := shared[:2][1]; got != "" {
		t.Fatalf("widen wrote %q into the config's backing array", got)
	}
	if len(g.FS.Read) != 2 || g.FS.Read[1] != "src" {
		t.Fatalf("widened = %v", g.FS.Read)
	}
}

// question decodes the params of a question put to the person.
type question struct {
	Message         string
	RequestedSchema struct {
		Properties struct {
			Decision struct{ Enum []string }
		}
	}
	Meta map[string]string `json:"_meta"`
}

func decodeQuestion(t *testing.T, r tool.ClientRequest) question {
	t.Helper()
	var q question
	if err := json.Unmarshal(r.Params, &q); err != nil {
		t.Fatalf("question %s: %v", r.Params, err)
	}
	return q
}

func TestPermissionPromptNamesTheServingModule(t *testing.T) {
	w := newEscapeWorld(t)
	p := &person{elicit: true, answers: []string{"accept:always"}}
	if _, fs := w.callWith(t, p, readDocs); fs.Error != nil {
		t.Fatalf("after allow always: %+v", fs)
	}
	asked := p.questions()
	if len(asked) != 1 {
		t.Fatalf("asked %d questions", len(asked))
	}
	q := decodeQuestion(t, asked[0])
	sum := w.app.moduleSHA256("hostcalls")
	if sum == "" || !strings.HasPrefix(q.Message, "warden: tool hostcalls (module hostcalls, sha256 "+sum[:12]+") asks for fs.read docs/readme.md") ||
		!strings.Contains(q.Message, `tools.grants.hostcalls.fs.read: ["docs/readme.md"] (with tools.grants.hostcalls.module: hostcalls)`) {
		t.Fatalf("the prompt says %q", q.Message)
	}
	// warden's mark, and the config it was asked under.
	if q.Meta[tool.MetaQuestion] != questionPermission || !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(q.Meta[tool.MetaConfig]) {
		t.Fatalf("the prompt's _meta: %v", q.Meta)
	}
	if !slices.Equal(q.RequestedSchema.Properties.Decision.Enum, []string{"once", "always", "deny"}) {
		t.Fatalf("offered %v", q.RequestedSchema.Properties.Decision.Enum)
	}
	// "always" wrote a grant bound to the module that served the call.
	cfg := w.app.Config()
	if bound, explicit, ok := cfg.GrantModule("hostcalls"); !ok || !explicit || bound != "hostcalls" {
		t.Fatalf("the grant written is bound to %q (explicit %v, exists %v)", bound, explicit, ok)
	}
	// The config changed: so did the digest a question carries.
	if d := w.app.caps.prompts.digests.of(cfg); d == q.Meta[tool.MetaConfig] {
		t.Fatalf("the config digest %s did not change with the config", d)
	}
}

func TestPermissionPromptNotPutWhenTheGrantBelongsToAnotherModule(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, "    hostcalls: {module: elsewhere, env: [VISIBLE]}")
	before, _ := os.ReadFile(w.cfgPath)
	p := &person{elicit: true, answers: []string{"accept:always"}}
	_, fs := w.callWith(t, p, readDocs)
	if fs.Error == nil || fs.Error.Kind != tool.KindDenied ||
		!strings.Contains(fs.Error.Message, "not put to the person: tools.grants.hostcalls belongs to module elsewhere, and tool hostcalls is served by module hostcalls") ||
		!strings.Contains(fs.Error.Message, "warden grant hostcalls --module hostcalls") {
		t.Fatalf("read with the grant entry bound elsewhere: %+v", fs)
	}
	if q := p.questions(); len(q) != 0 {
		t.Fatalf("the person was asked to widen another module's grant: %+v", q)
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != string(before) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
}

func TestPermissionPromptOffersAlwaysOnlyForAGrantConfigTakes(t *testing.T) {
	w := newEscapeWorld(t)
	// "docs/a:b.md" in a grant names the root "docs/a", which project.roots
	// does not define: config refuses it.
	if err := os.WriteFile(filepath.Join(w.project, "docs", "a:b.md"), []byte("colon-marker"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(w.cfgPath)
	colon := map[string]any{"op": "read", "path": "docs/a:b.md"}
	// Answered "always" although it was not offered: not taken.
	p := &person{elicit: true, answers: []string{"accept:always"}}
	_, fs := w.callWith(t, p, colon)
	if fs.Error == nil || !strings.Contains(fs.Error.Message, "the person denied it when asked") {
		t.Fatalf("an answer not offered was taken: %+v", fs)
	}
	asked := p.questions()
	if len(asked) != 1 {
		t.Fatalf("asked %d questions", len(asked))
	}
	q := decodeQuestion(t, asked[0])
	if !slices.Equal(q.RequestedSchema.Properties.Decision.Enum, []string{"once", "deny"}) ||
		!strings.Contains(q.Message, `"Allow always" is not offered: config would refuse tools.grants.hostcalls.fs.read: ["docs/a:b.md"]`) ||
		!strings.Contains(q.Message, `names root "docs/a", which project.roots does not define`) {
		t.Fatalf("offered %v with %q", q.RequestedSchema.Properties.Decision.Enum, q.Message)
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != string(before) {
		t.Fatalf("config.yaml changed:\n%s", after)
	}
	// Once: this call only.
	p = &person{elicit: true, answers: []string{"accept:once"}}
	if _, fs := w.callWith(t, p, colon); fs.Error != nil || !strings.Contains(string(fs.Result), "colon-marker") {
		t.Fatalf("allow once: %+v", fs)
	}
}

func TestPermissionPromptSaysWhenTheGrantWasNotSaved(t *testing.T) {
	w := newEscapeWorld(t)
	// While the person thinks, the owner binds the entry to another module:
	// "always" may no longer write into it.
	rebound := w.config("    hostcalls: {module: elsewhere}")
	p := &person{elicit: true, answers: []string{"accept:always"}, onAsk: func() {
		if err := os.WriteFile(w.cfgPath, []byte(rebound), 0o644); err != nil {
			t.Error(err)
		}
	}}
	res, fs := w.callWith(t, p, readDocs)
	if fs.Error != nil {
		t.Fatalf("the answer still allows this call: %+v", fs)
	}
	want := `warden: the grant tools.grants.hostcalls.fs.read: ["docs/readme.md"] (with tools.grants.hostcalls.module: hostcalls) was NOT saved to ` + w.cfgPath +
		": config " + w.cfgPath + ": tools.grants.hostcalls belongs to module elsewhere, not to module hostcalls serving the tool; it applied to this call only"
	notices, _ := res.Meta[tool.MetaNotices].([]string)
	if len(notices) != 1 || notices[0] != want {
		t.Fatalf("_meta notices %q, want %q", notices, want)
	}
	if last := res.Content[len(res.Content)-1]; last.Text != want {
		t.Fatalf("the result's last content is %q", last.Text)
	}
	if after, _ := os.ReadFile(w.cfgPath); string(after) != rebound {
		t.Fatalf("config.yaml changed after the owner's edit:\n%s", after)
	}
}

func TestGateConfirmationCarriesTheMark(t *testing.T) {
	w := newEscapeWorld(t)
	w.setGrants(t, "  gates:\n    hostcalls: {action: confirm}")
	p := &person{elicit: true, answers: []string{"decline"}}
	w.callWith(t, p, readDocs)
	asked := p.questions()
	if len(asked) != 1 || asked[0].Key != "warden/confirm" {
		t.Fatalf("asked %+v", asked)
	}
	q := decodeQuestion(t, asked[0])
	sum := w.app.moduleSHA256("hostcalls")
	if !strings.HasPrefix(q.Message, "warden: run tool hostcalls (module hostcalls, sha256 "+sum[:12]+")?") ||
		q.Meta[tool.MetaQuestion] != questionConfirm || q.Meta[tool.MetaConfig] != w.app.caps.prompts.digests.of(w.app.Config()) {
		t.Fatalf("confirmation %q, _meta %v", q.Message, q.Meta)
	}
}
