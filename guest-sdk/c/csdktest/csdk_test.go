package csdktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/app"
	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// wasiBuiltins is the compiler-rt archive clang links into every wasm32
// module (Debian: libclang-rt-14-dev-wasm32); wasi-libc's headers are the
// other half of the toolchain.
var toolchainFiles = []string{"/usr/include/wasm32-wasi/stdio.h", "/usr/lib/wasm32-wasi/libc.a"}

// CFlags are the README's build line.
var cFlags = []string{"--target=wasm32-wasi", "--sysroot=/usr", "-std=c11", "-Wall", "-Wextra", "-Werror",
	"-mexec-model=reactor", "-Wl,--strip-debug", "-O2"}

// needToolchain skips the test when clang or wasi-libc is missing, except
// under CI, which installs them (.ci/run): there a missing toolchain fails.
func needToolchain(t testing.TB) string {
	t.Helper()
	var missing []string
	clang, err := exec.LookPath("clang")
	if err != nil {
		missing = append(missing, "clang")
	}
	if _, err := exec.LookPath("wasm-ld"); err != nil {
		missing = append(missing, "wasm-ld (lld)")
	}
	for _, f := range toolchainFiles {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f+" (wasi-libc)")
		}
	}
	if builtins, _ := filepath.Glob("/usr/lib/llvm-*/lib/clang/*/lib/wasi/libclang_rt.builtins-wasm32.a"); len(builtins) == 0 {
		missing = append(missing, "libclang_rt.builtins-wasm32.a (libclang-rt-14-dev-wasm32)")
	}
	if len(missing) > 0 {
		msg := "C toolchain for wasm32-wasi missing: " + strings.Join(missing, ", ") +
			" (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return clang
}

// buildExample compiles guest-sdk/c/examples/<name>.c with warden.c into
// dir/<name>.wasm; a name with a slash ("testdata/hostcall") is a source
// path relative to this package instead, built into dir/<base>.wasm.
func buildExample(t testing.TB, dir, name string) string {
	t.Helper()
	clang := needToolchain(t)
	src := filepath.Join("..", "examples", name+".c")
	if strings.Contains(name, "/") {
		src = filepath.FromSlash(name + ".c")
	}
	out := filepath.Join(dir, filepath.Base(name)+".wasm")
	args := append(slices.Clone(cFlags), "-o", out, src, filepath.Join("..", "warden.c"))
	if msg, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		t.Fatalf("clang %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return out
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

// world is a project directory with the examples built into its tools
// directory and an app serving them under config.
type world struct {
	t   testing.TB
	dir string
	app *app.App
}

// newWorld builds the named examples into <dir>/tools and starts warden on a
// config.yaml made of grants (YAML lines under tools.grants, indented four
// spaces) and extra top-level YAML.
func newWorld(t testing.TB, examples []string, grants, extra string) *world {
	t.Helper()
	dir := t.TempDir()
	toolsDir := filepath.Join(dir, "tools")
	if err := os.Mkdir(toolsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range examples {
		buildExample(t, toolsDir, name)
	}
	return serveWorld(t, dir, grants, extra)
}

// serveWorld starts warden on dir, whose tools directory is filled; grants
// and extra are as for newWorld.
func serveWorld(t testing.TB, dir, grants, extra string) *world {
	t.Helper()
	body := fmt.Sprintf("project: {root: %s}\ntools:\n  dir: tools\n  cache_dir: \"off\"\n  grants:\n%s%s", dir, grants, extra)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config:\n%s\n%v", body, err)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	if errs := a.Catalog().LoadTools(context.Background()); len(errs) != 0 {
		t.Fatalf("load: %v", errs)
	}
	return &world{t: t, dir: dir, app: a}
}

// call runs one call of name with args (in session, if not empty).
func (w *world) call(name, args, session string) (*tool.Result, *observer) {
	w.t.Helper()
	obs := &observer{}
	res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: name, Arguments: json.RawMessage(args), Session: session, Observer: obs})
	if err != nil {
		w.t.Fatalf("call %s %s: %v", name, args, err)
	}
	return res, obs
}

// ok calls and fails the test unless the call succeeded; it returns the
// text of the result's only block and its structuredContent, compacted.
func (w *world) ok(name, args string) (text, structured string, obs *observer) {
	w.t.Helper()
	res, obs := w.call(name, args, "")
	if res.IsError {
		w.t.Fatalf("call %s %s: %s: %s", name, args, res.Error.Kind, res.Error.Message)
	}
	if len(res.Content) != 1 || res.Content[0].Type != tool.ContentText {
		w.t.Fatalf("call %s %s: content %+v, want one text block", name, args, res.Content)
	}
	return res.Content[0].Text, compact(w.t, res.StructuredContent), obs
}

// fails calls and fails the test unless the call failed with kind; it
// returns the message.
func (w *world) fails(name, args string, kind tool.Kind) string {
	w.t.Helper()
	res, _ := w.call(name, args, "")
	if !res.IsError || res.Error == nil {
		w.t.Fatalf("call %s %s succeeded (%+v), want %s", name, args, res.Content, kind)
	}
	if res.Error.Kind != kind {
		w.t.Fatalf("call %s %s: %s (%s), want %s", name, args, res.Error.Kind, res.Error.Message, kind)
	}
	return res.Error.Message
}

// toolsOwn returns a failure message a tool reported without the line
// warden puts before it ("reported by tool T (module M), not by warden: "),
// failing the test when the line is missing: a tool's words never pass for
// warden's.
func toolsOwn(t testing.TB, name, message string) string {
	t.Helper()
	prefix := "reported by tool " + name + " (module "
	rest, ok := strings.CutPrefix(message, prefix)
	if !ok {
		t.Fatalf("call %s: message %q does not say it is the tool's", name, message)
	}
	_, own, ok := strings.Cut(rest, "), not by warden: ")
	if !ok {
		t.Fatalf("call %s: message %q does not say it is the tool's", name, message)
	}
	return own
}

func compact(t testing.TB, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("compact %s: %v", raw, err)
	}
	return b.String()
}

func TestExportsAndImports(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	allowedImports := map[string]bool{"log": true, "progress": true, "fs": true, "memory": true, "lsp": true,
		"net": true, "env": true, "elicit": true, "sample": true, "roots": true, "ask": true}
	for _, name := range []string{"word_count", "notes", "countdown", "shout", "text_stats", "json_echo", "echo", "longrun", "testdata/hostcall"} {
		wasm, err := os.ReadFile(buildExample(t, dir, name))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r := wazero.NewRuntime(ctx)
		m, err := r.CompileModule(ctx, wasm)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var exports []string
		for e := range m.ExportedFunctions() {
			exports = append(exports, e)
		}
		for e := range m.ExportedMemories() {
			exports = append(exports, "memory:"+e)
		}
		slices.Sort(exports)
		want := []string{"_initialize", "memory:memory", "warden_abi_version", "warden_alloc", "warden_call", "warden_describe"}
		if !slices.Equal(exports, want) {
			t.Errorf("%s exports %v, want exactly %v", name, exports, want)
		}
		for _, f := range m.ImportedFunctions() {
			mod, fn, _ := f.Import()
			if !(mod == "warden" && allowedImports[fn]) && mod != "wasi_snapshot_preview1" {
				t.Errorf("%s imports %s.%s, which the ABI does not offer", name, mod, fn)
			}
		}
		r.Close(ctx)
	}
}

func TestWordCount(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"word_count"}, "    word_count: {}\n", "")
	for _, tc := range []struct {
		text  string
		words int
	}{
		{"hello from warden", 3},
		{"  to\tbe\nor\r\nnot  ", 4},
		{"", 0},
		{" \t\n", 0},
		{"héllo wörld ☃", 3},
		{"one", 1},
	} {
		args, _ := json.Marshal(map[string]string{"text": tc.text})
		text, structured, _ := w.ok("word_count", string(args))
		if want := fmt.Sprintf("%d words", tc.words); text != want {
			t.Errorf("word_count %q: text %q, want %q", tc.text, text, want)
		}
		if want := fmt.Sprintf(`{"words":%d}`, tc.words); structured != want {
			t.Errorf("word_count %q: structuredContent %s, want %s", tc.text, structured, want)
		}
	}
	w.fails("word_count", `{}`, tool.KindInvalidArguments)
	w.fails("word_count", `{"text":5}`, tool.KindInvalidArguments)

	list := w.app.List()
	if len(list) != 1 {
		t.Fatalf("tools %+v, want word_count alone", list)
	}
	d := list[0]
	if d.Name != "word_count" || d.Description != "Counts the words in a text." ||
		d.Annotations == nil || d.Annotations.ReadOnlyHint == nil || !*d.Annotations.ReadOnlyHint ||
		compact(t, d.InputSchema) != `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}` ||
		compact(t, d.OutputSchema) != `{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}` {
		t.Errorf("descriptor %+v", d)
	}
}

// TestArgumentErrors covers the SDK's own checks, behind the host's schema
// validation: an error recorded by the tool reaches the caller with its kind
// and message.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"countdown", "text_stats"}, "", "")
	if msg := toolsOwn(t, "countdown", w.fails("countdown", `{"steps":1000}`, tool.KindInvalidArguments)); msg != "steps: want 1..100, got 1000" {
		t.Errorf("countdown message %q", msg)
	}
	if msg := toolsOwn(t, "item_at", w.fails("item_at", `{"list":[1,2],"index":2}`, tool.KindNotFound)); msg != "index 2 is outside the list of 2" {
		t.Errorf("item_at message %q", msg)
	}
	text, structured, _ := w.ok("item_at", `{"list":[1,{"a":[true,null]},"x"],"index":1}`)
	if text != "object" || structured != `{"item":{"a":[true,null]}}` {
		t.Errorf("item_at: %q %s", text, structured)
	}
}

func TestNotesFSAndMemory(t *testing.T) {
	t.Parallel()
	grants := "    notes: {fs: {read: [docs]}, memory: read-write, memory_topics: [notes]}\n"
	w := newWorld(t, []string{"notes"}, grants, "")
	for path, content := range map[string]string{"docs/a.txt": "one\ntwo\n", "secret/b.txt": "no\n", "docs/.env": "K=V\n"} {
		full := filepath.Join(w.dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, structured, _ := w.ok("notes", `{"path":"docs/a.txt","note":"first note"}`)
	if text != "docs/a.txt: 8 bytes, 2 lines" || structured != `{"path":"docs/a.txt","bytes":8,"previousNote":null}` {
		t.Errorf("first call: %q %s", text, structured)
	}
	// Sessionless calls get fresh instances: the note came through the store.
	_, structured, _ = w.ok("notes", `{"path":"docs/a.txt","note":"second"}`)
	if structured != `{"path":"docs/a.txt","bytes":8,"previousNote":"first note"}` {
		t.Errorf("second call: %s", structured)
	}
	stored, err := os.ReadFile(filepath.Join(w.dir, ".warden", "memories", "notes", "last.md"))
	if err != nil || string(stored) != "second" {
		t.Errorf("memory store holds %q (%v), want %q", stored, err, "second")
	}
	for _, path := range []string{"secret/b.txt", "docs/.env", "../outside.txt"} {
		msg := w.fails("notes", fmt.Sprintf(`{"path":%q}`, path), tool.KindDenied)
		if msg == "" {
			t.Errorf("%s: denied without a message", path)
		}
	}
	w.fails("notes", `{"path":"docs/missing.txt"}`, tool.KindNotFound)
}

func TestNotesWithoutGrants(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"notes"}, "    notes: {}\n", "")
	if err := os.WriteFile(filepath.Join(w.dir, "a.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.fails("notes", `{"path":"a.txt"}`, tool.KindDenied)
}

func TestProgress(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"countdown"}, "", "")
	text, _, obs := w.ok("countdown", `{"steps":3}`)
	if text != "counted 3 steps" {
		t.Errorf("text %q", text)
	}
	want := []tool.Progress{{Progress: 1, Total: 3, Message: "step 1"}, {Progress: 2, Total: 3, Message: "step 2"},
		{Progress: 3, Total: 3, Message: "step 3"}}
	if !reflect.DeepEqual(obs.progress, want) {
		t.Errorf("progress %+v, want %+v", obs.progress, want)
	}
}

func TestLogAndSessionState(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"shout"}, "", "")
	text, _, obs := w.ok("shout", `{"text":"hello"}`)
	if text != "HELLO" {
		t.Errorf("text %q", text)
	}
	want := []string{"DEBUG shouting 5 bytes", "INFO call number 1 of this instance"}
	if !slices.Equal(obs.logs, want) {
		t.Errorf("logs %q, want %q", obs.logs, want)
	}
	_, _, obs = w.ok("shout", `{"text":""}`)
	want = []string{"DEBUG shouting 0 bytes", "INFO call number 1 of this instance", "WARN nothing to shout"}
	if !slices.Equal(obs.logs, want) {
		t.Errorf("logs %q, want %q", obs.logs, want)
	}
	// One session keeps its instance, and with it the C statics.
	for i := 1; i <= 3; i++ {
		res, obs := w.call("shout", `{"text":"x"}`, "s-1")
		if res.IsError {
			t.Fatalf("session call %d: %+v", i, res.Error)
		}
		if line := fmt.Sprintf("INFO call number %d of this instance", i); !slices.Contains(obs.logs, line) {
			t.Errorf("session call %d: logs %q, want %q", i, obs.logs, line)
		}
	}
}

func TestStructuredOutputSchema(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"text_stats"}, "", "")
	text, structured, _ := w.ok("text_stats", `{"text":"a\nbb\n\n\"q\"\u00e9\n"}`)
	if text != "4 lines, 12 bytes" {
		t.Errorf("text %q", text)
	}
	if want := `{"lineLengths":[1,2,0,5],"bytes":12,"lines":4,"longestLine":"\"q\"é","blank":false}`; structured != want {
		t.Errorf("structuredContent %s, want %s", structured, want)
	}
	_, structured, _ = w.ok("text_stats", `{"text":""}`)
	if want := `{"lineLengths":[],"bytes":0,"lines":0,"longestLine":"","blank":true}`; structured != want {
		t.Errorf("empty text: structuredContent %s, want %s", structured, want)
	}
	var found bool
	for _, d := range w.app.List() {
		if d.Name == "text_stats" {
			found = true
			if d.Title != "Text statistics" || d.Version != "1.0.0" || !slices.Equal(d.Tags, []string{"text", "example"}) ||
				len(d.OutputSchema) == 0 {
				t.Errorf("descriptor %+v", d)
			}
		}
	}
	if !found {
		t.Error("text_stats is not listed")
	}
}

// TestSessionCalls runs 2000 calls of 32 KiB each in one session, on one
// instance limited to 1 MiB of memory: they all succeed only if the SDK
// frees the request, the parsed arguments and every response.
func TestSessionCalls(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"word_count"}, "    word_count: {}\n", "  limits: {word_count: {memory: 1MiB}}\n")
	text := strings.Repeat("word ", 32<<10/5)
	args, _ := json.Marshal(map[string]string{"text": text})
	want := fmt.Sprintf(`{"words":%d}`, 32<<10/5)
	for i := range 2000 {
		res, _ := w.call("word_count", string(args), "session-1")
		if res.IsError {
			t.Fatalf("call %d: %s: %s", i, res.Error.Kind, res.Error.Message)
		}
		if got := compact(t, res.StructuredContent); got != want {
			t.Fatalf("call %d: structuredContent %s, want %s", i, got, want)
		}
	}
}

// FuzzJSONReader drives the reader and the writer through json_echo: a
// document the reader accepts must come back as the same JSON value (numbers
// by their text), and exactly the documents encoding/json rejects must be
// refused, as an invalid_arguments result, never a trap. The seeds run as a
// normal test.
func FuzzJSONReader(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,2.5,-0,1e400,true,false,null],"b":{"c":"d\u00e9\ud83d\ude00\n\"\\"}}`,
		`"\ud800 lone"`, `"\udc00\ud800"`, `"\u0000\u001f"`, `[]`, `{}`, ` 0 `, `-12.5E+3`, `{"k":1,"k":2}`,
		`"\/"`, strings.Repeat("[", 256) + strings.Repeat("]", 256),
		// malformed
		``, ` `, `{`, `[1,]`, `{"a"}`, `{"a":}`, `{,}`, `[1 2]`, `"\x"`, `"\u12"`, `"\u12g4"`, `01`, `1.`, `.5`, `-`,
		`1e`, `+1`, `tru`, `nul`, `[1]x`, `"abc`, `"a` + "\x01" + `"`, `{"a":1,}`, `[`, `{"a" 1}`, `"\`, `[1,2`,
		strings.Repeat("[", 257) + strings.Repeat("]", 257), "\"\xff\"", `NaN`, `Infinity`, `'a'`,
	} {
		f.Add(seed)
	}
	w := newWorld(f, []string{"json_echo"}, "", "")
	f.Fuzz(func(t *testing.T, doc string) {
		// The guest sees the string encoding/json delivers: invalid UTF-8
		// becomes U+FFFD on the way.
		args, err := json.Marshal(map[string]string{"json": doc})
		if err != nil {
			t.Fatal(err)
		}
		var seen struct{ JSON string }
		if err := json.Unmarshal(args, &seen); err != nil {
			t.Fatal(err)
		}
		res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "json_echo", Arguments: args, Observer: &observer{}})
		if err != nil {
			t.Fatal(err)
		}
		valid := json.Valid([]byte(seen.JSON)) && depth(seen.JSON) <= 256
		if !valid {
			if !res.IsError || res.Error.Kind != tool.KindInvalidArguments || !strings.HasPrefix(toolsOwn(t, "json_echo", res.Error.Message), "json: offset ") {
				t.Fatalf("%q: got %+v %+v, want an invalid_arguments error naming the offset", seen.JSON, res.Error, res.Content)
			}
			return
		}
		if res.IsError {
			t.Fatalf("%q: %s: %s", seen.JSON, res.Error.Kind, res.Error.Message)
		}
		out := res.Content[0].Text
		if !json.Valid([]byte(out)) {
			t.Fatalf("%q re-written as invalid JSON %q", seen.JSON, out)
		}
		if a, b := decode(t, seen.JSON), decode(t, out); !reflect.DeepEqual(a, b) {
			t.Fatalf("%q re-written as %q: %v != %v", seen.JSON, out, a, b)
		}
	})
}

func decode(t *testing.T, s string) any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// depth is the deepest nesting of arrays and objects in a valid document.
func depth(s string) int {
	d := json.NewDecoder(strings.NewReader(s))
	cur, deepest := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			cur++
			deepest = max(deepest, cur)
		case json.Delim(']'), json.Delim('}'):
			cur--
		}
	}
}

// TestEveryCapability calls each warden.* import through its wrapper: the
// granted ones answer, the others are denied by the host, which proves each
// wrapper reaches the import of its name.
func TestEveryCapability(t *testing.T) {
	t.Parallel()
	grants := "    hostcall: {fs: {read: [.]}, memory: read, env: [TOKEN]}\n    envget: {module: hostcall, env: [TOKEN]}\n"
	w := newWorld(t, []string{"testdata/hostcall"}, grants, "env: {values: {TOKEN: {value: s3cret}, OTHER: {value: x}}}\n")
	if err := os.WriteFile(filepath.Join(w.dir, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ capability, request, want string }{
		{"fs", `{"op":"glob","pattern":"*.txt"}`, `{"result":{"matches":["a.txt"]}}`},
		{"memory", `{"op":"list"}`, `{"result":{"topics":[]}}`},
		{"env", `{"op":"get","key":"TOKEN"}`, `{"result":{"key":"TOKEN","value":"s3cret"}}`},
		{"env", `{"op":"list"}`, `{"result":{"keys":["TOKEN"]}}`},
	} {
		args := fmt.Sprintf(`{"capability":%q,"request":%s}`, tc.capability, tc.request)
		if _, structured, _ := w.ok("hostcall", args); structured != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.capability, tc.request, structured, tc.want)
		}
	}
	for _, tc := range []struct{ capability, request, mention string }{
		{"net", `{"op":"request","url":"https://example.com/"}`, "example.com"},
		{"lsp", `{"op":"documentSymbol","path":"a.go"}`, "lsp"},
		{"env", `{"op":"get","key":"OTHER"}`, "OTHER"},
		{"elicit", `{"key":"k","params":{"message":"name?","requestedSchema":{"type":"object","properties":{}}}}`, "elicit"},
		{"sample", `{"key":"k","params":{"messages":[],"maxTokens":10}}`, "sample"},
		{"roots", `{"key":"k","params":{}}`, "roots"},
		{"ask", `{"requests":[{"key":"a","method":"roots/list","params":{}}]}`, "roots"},
	} {
		args := fmt.Sprintf(`{"capability":%q,"request":%s}`, tc.capability, tc.request)
		if msg := w.fails("hostcall", args, tool.KindDenied); !strings.Contains(msg, tc.mention) {
			t.Errorf("%s %s: denied with %q, which does not mention %q", tc.capability, tc.request, msg, tc.mention)
		}
	}
	if text, _, _ := w.ok("envget", `{"key":"TOKEN"}`); text != "s3cret" {
		t.Errorf("envget TOKEN: %q", text)
	}
	w.fails("envget", `{"key":"OTHER"}`, tool.KindDenied)
}

// TestErrorKinds: a tool's error keeps its kind when a guest may report it;
// a host-only kind, an unknown one, or -1 without an error become failed with
// the reason in the message. Details survive errors; nextCursor a success.
func TestErrorKinds(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"testdata/hostcall"}, "", "")
	for _, tc := range []struct {
		kind    string
		want    tool.Kind
		message string
	}{
		{"invalid_arguments", tool.KindInvalidArguments, "m"},
		{"not_found", tool.KindNotFound, "m"},
		{"denied", tool.KindDenied, "m"},
		{"failed", tool.KindFailed, "m"},
		{"cancelled", tool.KindCancelled, "m"},
		{"unsupported", tool.KindUnsupported, "m"},
		{"timeout", tool.KindFailed, "timeout: m"},
		{"bad_output", tool.KindFailed, "bad_output: m"},
		{"no_such_kind", tool.KindFailed, "m"},
		{"silent", tool.KindFailed, "tool returned -1 without recording an error"},
	} {
		res, _ := w.call("fail", fmt.Sprintf(`{"kind":%q,"message":"m"}`, tc.kind), "")
		if !res.IsError || res.Error.Kind != tc.want || toolsOwn(t, "fail", res.Error.Message) != tc.message {
			t.Errorf("kind %s: got %+v, want %s %q", tc.kind, res.Error, tc.want, tc.message)
			continue
		}
		if got, want := compact(t, res.Details), fmt.Sprintf(`{"asked":%q}`, tc.kind); !strings.Contains(got, want[1:len(want)-1]) {
			t.Errorf("kind %s: details %s, want them to hold %s", tc.kind, got, want)
		}
	}
	res, _ := w.call("fail", `{"kind":""}`, "")
	if res.IsError || res.NextCursor == "" || len(res.Content) != 1 || res.Content[0].Text != "fine" {
		t.Errorf("success: %+v", res)
	}
}

// TestEchoMatchesTheGoEcho: bench serves examples/echo.c beside the bundled
// Go echo (tools-wasm/echo) to split a call's cost between warden and the
// guest, which is only fair if the two are the same tool: the same
// descriptor, and the same result for every argument.
func TestEchoMatchesTheGoEcho(t *testing.T) {
	t.Parallel()
	c := newWorld(t, []string{"echo"}, "    echo: {}\n", "")
	goDir := t.TempDir()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../../tools-wasm/echo"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(goDir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(goDir, "tools", "echo.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	g := serveWorld(t, goDir, "    echo: {}\n", "")

	descriptor := func(w *world) string {
		for _, d := range w.app.List() {
			if d.Name == "echo" {
				b, err := json.Marshal(d)
				if err != nil {
					t.Fatal(err)
				}
				return compact(t, b)
			}
		}
		t.Fatal("echo is not listed")
		return ""
	}
	if cd, gd := descriptor(c), descriptor(g); cd != gd {
		t.Errorf("descriptors differ:\nC  %s\nGo %s", cd, gd)
	}
	for _, text := range []string{"", "hello, warden", `"quoted" \\ back\\slash`, "<b>&amp;</b>", "tab\tnewline\n\u0000nul",
		"é ü 日本 🎉", "\u2028\u2029", strings.Repeat("x", 70000)} {
		args, err := json.Marshal(map[string]string{"text": text})
		if err != nil {
			t.Fatal(err)
		}
		ct, cs, _ := c.ok("echo", string(args))
		gt, gs, _ := g.ok("echo", string(args))
		if ct != text || gt != text {
			t.Errorf("text %.40q: C returned %.40q, Go %.40q", text, ct, gt)
		}
		var cv, gv any
		if err := json.Unmarshal([]byte(cs), &cv); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(gs), &gv); err != nil {
			t.Fatal(err)
		}
		if want := map[string]any{"text": text}; !reflect.DeepEqual(cv, want) || !reflect.DeepEqual(gv, want) {
			t.Errorf("text %.40q: structuredContent C %.80s, Go %.80s", text, cs, gs)
		}
	}
	c.fails("echo", `{"text":7}`, tool.KindInvalidArguments)
	g.fails("echo", `{"text":7}`, tool.KindInvalidArguments)
}

// TestEchoFuel: a call of the C echo costs the same fuel (wasm
// instructions, exact) every time, and stays under 20,000: the reader
// copies a run of plain ASCII with one memcpy, where it made one call per
// character (25,186 units before, 19,730 after). A change that puts such a
// per-byte cost back on the common path fails here, deterministically.
func TestEchoFuel(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"echo"}, "    echo: {}\n", "")
	var fuel []int64
	for range 3 {
		res, _ := w.call("echo", `{"text":"hello, warden"}`, "")
		if res.IsError {
			t.Fatalf("echo: %s", res.Error.Message)
		}
		fuel = append(fuel, res.Meta["warden/fuel"].(int64))
	}
	if fuel[0] != fuel[1] || fuel[1] != fuel[2] || fuel[0] > 20_000 {
		t.Fatalf("echo calls cost %v units of fuel, want the same each time and at most 20,000", fuel)
	}
}
