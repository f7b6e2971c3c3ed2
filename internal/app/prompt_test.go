package app

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// person is a tool.Client whose person answers every elicitation with the
// next scripted answer, and records what was asked.
type person struct {
	mu       sync.Mutex
	elicit   bool
	answers  []string // "accept:<decision>", "accept", "decline"
	asked    []tool.ClientRequest
	mrtrOnce bool // answer the first ask with ErrInputRequired
}

func (p *person) Supports(f string) bool { return f == tool.ClientElicit && p.elicit }
func (p *person) Require(f string) bool  { return p.Supports(f) }

func (p *person) Ask(_ context.Context, reqs []tool.ClientRequest) ([]json.RawMessage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, reqs...)
	if p.mrtrOnce {
		p.mrtrOnce = false
		return nil, tool.ErrInputRequired
	}
	out := make([]json.RawMessage, len(reqs))
	for i := range reqs {
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
	args, _ := json.Marshal(map[string]any{"fs": fsReq, "env": map[string]any{"op": "get", "key": "VISIBLE"}})
	res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "hostcalls", Arguments: args, Observer: nopObserver{}, Client: c})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ FS outcome }
	if !res.IsError {
		if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
			t.Fatalf("structured content %s: %v", res.StructuredContent, err)
		}
	}
	return res, out.FS
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
		{tool.Need{Key: "memory", Value: "read"}, true},
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
