// Package assemblyscript_test builds the AssemblyScript SDK's examples with
// the pinned toolchain (npm ci) and runs each tool through warden in
// process, with real grants, asserting exact results.
package assemblyscript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// buildAll copies the package (without node_modules) to a temp dir, installs
// its locked dependencies and builds every example and test fixture into
// the returned directory. Without node and npm it fails under CI (which
// installs them) and skips elsewhere.
func buildAll(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"node", "npm"} {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s not found on PATH: CI must install Node.js 20+ to test the AssemblyScript SDK", bin)
			}
			t.Skipf("%s not found on PATH: install Node.js 20+ to test the AssemblyScript SDK", bin)
		}
	}
	src, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(t.TempDir(), "sdk")
	for _, p := range []string{"package.json", "package-lock.json", "asconfig.json", "assembly", "examples", "testdata"} {
		if isFile(filepath.Join(src, p)) {
			copyFile(t, filepath.Join(src, p), filepath.Join(pkg, p))
		} else if err := os.CopyFS(filepath.Join(pkg, p), os.DirFS(filepath.Join(src, p))); err != nil {
			t.Fatalf("copy %s: %v", p, err)
		}
	}
	run(t, pkg, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund")
	tools := filepath.Join(t.TempDir(), "tools")
	run(t, pkg, "node", "examples/build.mjs", "--testdata", tools)
	return tools
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
}

// observer records a call's progress reports and log lines.
type observer struct {
	mu       sync.Mutex
	progress []tool.Progress
	logs     []string
}

func (o *observer) Progress(p tool.Progress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.progress = append(o.progress, p)
}

func (o *observer) Log(level slog.Level, message string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.logs = append(o.logs, level.String()+" "+message)
}

type harness struct {
	t   *testing.T
	app *app.App
}

const configYAML = `tools:
  dir: %q
  cache_dir: "off"
  defaults:
    isolation: session
  grants:
    word_count: {}
    remember_file:
      module: notes
      fs:
        read: [docs]
      memory: read-write
    recall:
      module: notes
      memory: read
    countdown: {module: progress}
    greet: {module: logging}
    text_stats: {module: stats}
    checked_ratio: {module: stats}
    churn: {module: probe}
    pages: {module: probe}
`

func start(t *testing.T, tools string) (*harness, string) {
	t.Helper()
	project := t.TempDir()
	for name, body := range map[string]string{
		"docs/readme.md": "Grüße aus 𝄞 warden\nsecond line\n",
		"secret/key.txt": "not granted\n",
	} {
		copyBytes(t, filepath.Join(project, name), body)
	}
	path := filepath.Join(project, "config.yaml")
	copyBytes(t, path, fmt.Sprintf(configYAML, tools))
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) > 0 {
		t.Fatalf("load tools: %v", errs)
	}
	return &harness{t: t, app: a}, project
}

func copyBytes(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) call(name, args string, obs *observer) *tool.Result {
	h.t.Helper()
	if obs == nil {
		obs = &observer{}
	}
	res, err := h.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(),
		Name: name, Arguments: json.RawMessage(args), Session: "s1", Observer: obs,
	})
	if err != nil {
		h.t.Fatalf("call %s %s: %v", name, args, err)
	}
	return res
}

// wire renders a result the way the ABI response carries it, for exact comparison.
func wire(t *testing.T, r *tool.Result) string {
	t.Helper()
	var structured any
	if len(r.StructuredContent) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, r.StructuredContent); err != nil {
			t.Fatal(err)
		}
		structured = json.RawMessage(buf.Bytes())
	}
	b, err := json.Marshal(struct {
		Content           []tool.Content `json:"content"`
		StructuredContent any            `json:"structuredContent,omitempty"`
		Error             *tool.Error    `json:"error,omitempty"`
	}{r.Content, structured, r.Error})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func wantKind(t *testing.T, r *tool.Result, kind tool.Kind) {
	t.Helper()
	if r.Error == nil || r.Error.Kind != kind {
		t.Fatalf("result %s: want error kind %s", wire(t, r), kind)
	}
}

func TestExamples(t *testing.T) {
	h, project := start(t, buildAll(t))

	t.Run("word_count", func(t *testing.T) {
		for _, c := range []struct{ args, want string }{
			{`{"text":"hello from warden"}`, `{"content":[{"type":"text","text":"3 words"}],"structuredContent":{"words":3}}`},
			{`{"text":"  Grüße,\twörld 𝄞😀 \n ünïcødé  "}`, `{"content":[{"type":"text","text":"4 words"}],"structuredContent":{"words":4}}`},
			{`{"text":""}`, `{"content":[{"type":"text","text":"0 words"}],"structuredContent":{"words":0}}`},
		} {
			if got := wire(t, h.call("word_count", c.args, nil)); got != c.want {
				t.Errorf("word_count %s = %s, want %s", c.args, got, c.want)
			}
		}
		wantKind(t, h.call("word_count", `{}`, nil), tool.KindInvalidArguments)
		wantKind(t, h.call("word_count", `{"text":7}`, nil), tool.KindInvalidArguments)
	})

	t.Run("structured", func(t *testing.T) {
		// 𝄞 is a surrogate pair in UTF-16 and four bytes in UTF-8; the text
		// must cross the ABI both ways unchanged.
		got := wire(t, h.call("text_stats", `{"text":"aé𝄞\nß"}`, nil))
		want := `{"content":[{"type":"text","text":"5 code points"}],"structuredContent":{"utf16":6,"codePoints":5,"utf8Bytes":10,"lines":2,"upper":"AÉ𝄞\nSS"}}`
		if got != want {
			t.Errorf("text_stats = %s, want %s", got, want)
		}
		// A lone surrogate cannot be UTF-8: the SDK sends U+FFFD.
		got = wire(t, h.call("text_stats", `{"text":"x\ud800"}`, nil))
		want = `{"content":[{"type":"text","text":"2 code points"}],"structuredContent":{"utf16":2,"codePoints":2,"utf8Bytes":4,"lines":1,"upper":"X\ufffd"}}`
		if got != want {
			t.Errorf("text_stats lone surrogate = %s, want %s", got, want)
		}
	})

	t.Run("abort", func(t *testing.T) {
		if got := wire(t, h.call("checked_ratio", `{"a":3,"b":2}`, nil)); got != `{"content":[{"type":"text","text":"1.5"}]}` {
			t.Errorf("checked_ratio = %s", got)
		}
		r := h.call("checked_ratio", `{"a":1,"b":0}`, nil)
		wantKind(t, r, tool.KindTrapped)
		if r.Captured == nil || !strings.Contains(r.Captured.Stderr, "abort: b must not be zero at examples/stats.ts:") {
			t.Errorf("abort's stderr = %+v, want the assert message", r.Captured)
		}
		if got := wire(t, h.call("checked_ratio", `{"a":1,"b":4}`, nil)); got != `{"content":[{"type":"text","text":"0.25"}]}` {
			t.Errorf("checked_ratio after the abort = %s", got)
		}
	})

	t.Run("fs_memory", func(t *testing.T) {
		got := wire(t, h.call("remember_file", `{"path":"docs/readme.md","topic":"readme"}`, nil))
		want := `{"content":[{"type":"text","text":"remembered \"Grüße aus 𝄞 warden\""}],"structuredContent":{"topic":"readme","note":"Grüße aus 𝄞 warden"}}`
		if got != want {
			t.Errorf("remember_file = %s, want %s", got, want)
		}
		if got := wire(t, h.call("recall", `{"topic":"readme"}`, nil)); got != `{"content":[{"type":"text","text":"Grüße aus 𝄞 warden"}]}` {
			t.Errorf("recall = %s", got)
		}
		b, err := os.ReadFile(filepath.Join(project, ".warden", "memories", "readme.md"))
		if err != nil || string(b) != "Grüße aus 𝄞 warden" {
			t.Errorf("memory file = %q, %v", b, err)
		}
		wantKind(t, h.call("remember_file", `{"path":"secret/key.txt","topic":"k"}`, nil), tool.KindDenied)
		wantKind(t, h.call("recall", `{"topic":"never-set"}`, nil), tool.KindNotFound)
	})

	t.Run("progress", func(t *testing.T) {
		obs := &observer{}
		if got := wire(t, h.call("countdown", `{"n":3}`, obs)); got != `{"content":[{"type":"text","text":"liftoff after 3 steps"}]}` {
			t.Errorf("countdown = %s", got)
		}
		want := []tool.Progress{{Progress: 1, Total: 3, Message: "2 left"}, {Progress: 2, Total: 3, Message: "1 left"}, {Progress: 3, Total: 3, Message: "0 left"}}
		if fmt.Sprint(obs.progress) != fmt.Sprint(want) {
			t.Errorf("progress = %v, want %v", obs.progress, want)
		}
		// Descriptor.taskSupport declares execution.taskSupport.
		support := "not listed"
		for _, d := range h.app.List() {
			if d.Name == "countdown" {
				support = d.TaskSupport()
			}
		}
		if support != tool.TaskOptional {
			t.Errorf("countdown's task support = %q, want optional", support)
		}
	})

	t.Run("log", func(t *testing.T) {
		obs := &observer{}
		if got := wire(t, h.call("greet", `{"name":"Zoë 😀"}`, obs)); got != `{"content":[{"type":"text","text":"Hello, Zoë 😀!"}]}` {
			t.Errorf("greet = %s", got)
		}
		if len(obs.logs) != 2 || !strings.HasPrefix(obs.logs[0], "DEBUG call ") || obs.logs[1] != "INFO greeting Zoë 😀" {
			t.Errorf("logs = %q", obs.logs)
		}
	})

	t.Run("session", func(t *testing.T) {
		// One instance serves the whole session: the minimal runtime's
		// collection at the end of each call must keep its memory flat.
		churn := func(n int) {
			for i := 0; i < n; i++ {
				r := h.call("churn", `{}`, nil)
				if r.Error != nil || len(r.Content) != 1 || r.Content[0].Text != "2 denied 2290" {
					t.Fatalf("churn call %d = %s", i, wire(t, r))
				}
			}
		}
		pages := func() string {
			r := h.call("pages", `{}`, nil)
			if r.Error != nil || len(r.Content) != 1 {
				t.Fatalf("pages = %s", wire(t, r))
			}
			return r.Content[0].Text
		}
		churn(100)
		after100 := pages()
		churn(1900)
		if after2000 := pages(); after2000 != after100 {
			t.Errorf("memory after 2000 calls = %s pages, after 100 = %s: the session leaks", after2000, after100)
		}
	})
}
