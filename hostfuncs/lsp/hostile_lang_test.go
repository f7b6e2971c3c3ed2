package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/fs"
	"github.com/warden-run/warden/tool"
)

// hostileLang is one language's project for the hostile cases: main uses
// a function from a directory symlinked out of the root (ext/), one from
// a file security.deny hides (credentials.*) and one from a file the
// built-in deny-list hides (.env.*, Python aside: it cannot import one).
type hostileLang struct {
	name     string
	server   func(t testing.TB) Language
	files    map[string]string // project files
	outside  map[string]string // files of the directory ext/ points to
	main     string            // the file the queries are asked in
	useExt   string            // a use of the function defined through ext/
	useCred  string            // a use of the function in credentials
	useToken string            // a use of the constant in credentials
	wsCred   string            // workspace query finding the credentials function
	wsEnv    string            // workspace query finding the .env function
	credFile string            // the denied credentials file
	envFile  string            // the file the built-in deny-list hides
}

func nodeServer(t testing.TB, command, install string) Language {
	t.Helper()
	p, err := exec.LookPath(command)
	if err != nil {
		t.Skipf("%s is not installed: %s", command, install)
	}
	return Language{Command: p, Args: []string{"--stdio"}}
}

var hostileLangs = []hostileLang{
	{
		name: "python",
		server: func(t testing.TB) Language {
			l := nodeServer(t, "pyright-langserver", "npm install -g pyright")
			l.Extensions, l.LanguageID = []string{".py"}, "python"
			return l
		},
		files: map[string]string{
			"app/__init__.py": "",
			"app/main.py": "from ext.helpers import outside_helper\nfrom app.credentials import API_TOKEN, token_value\n\n\n" +
				"def run():\n    return outside_helper(1) + token_value() + API_TOKEN\n",
			"app/credentials.py": "API_TOKEN = 7\n\n\ndef token_value():\n    \"\"\"The secret token.\"\"\"\n    return API_TOKEN\n",
			"app/.env.py":        "def dotenv_secret():\n    \"\"\"From the dotenv file.\"\"\"\n    return 42\n",
		},
		outside:  map[string]string{"__init__.py": "", "helpers.py": "def outside_helper(x):\n    \"\"\"Outside the project.\"\"\"\n    return x\n"},
		main:     "app/main.py",
		useExt:   "outside_helper(1)",
		useCred:  "token_value()",
		useToken: "+ API_TOKEN",
		wsCred:   "token_value",
		wsEnv:    "dotenv_secret",
		credFile: "app/credentials.py",
		envFile:  "app/.env.py",
	},
	{
		name: "typescript",
		server: func(t testing.TB) Language {
			l := nodeServer(t, "typescript-language-server", "npm install -g typescript-language-server typescript@5")
			l.Extensions, l.LanguageID = []string{".ts"}, "typescript"
			// The typescript package installed beside the server (npm's
			// global or local node_modules) serves projects without one.
			if real, err := filepath.EvalSymlinks(l.Command); err == nil {
				tsserver := filepath.Join(filepath.Dir(real), "..", "..", "typescript", "lib", "tsserver.js")
				if _, err := os.Stat(tsserver); err != nil {
					// typescript 7 is the native compiler: no tsserver.js.
					t.Skipf("typescript-language-server needs typescript 5 beside it (%s): npm install -g typescript@5", tsserver)
				}
				l.InitializationOptions, _ = json.Marshal(map[string]any{"tsserver": map[string]string{"path": filepath.Clean(tsserver)}})
			}
			return l
		},
		files: map[string]string{
			"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}` + "\n",
			"src/main.ts": "import { outsideHelper } from \"../ext/helpers\";\nimport { API_TOKEN, tokenValue } from \"./credentials\";\n" +
				"import { dotenvSecret } from \"./.env\";\n\nexport function run(): number {\n" +
				"  return outsideHelper(1) + tokenValue() + API_TOKEN + dotenvSecret();\n}\n",
			"src/credentials.ts": "export const API_TOKEN = 7;\n\n/** The secret token. */\nexport function tokenValue(): number {\n  return API_TOKEN;\n}\n",
			"src/.env.ts":        "/** From the dotenv file. */\nexport function dotenvSecret(): number {\n  return 42;\n}\n",
		},
		outside:  map[string]string{"helpers.ts": "/** Outside the project. */\nexport function outsideHelper(x: number): number {\n  return x;\n}\n"},
		main:     "src/main.ts",
		useExt:   "outsideHelper(1)",
		useCred:  "tokenValue()",
		useToken: "+ API_TOKEN",
		wsCred:   "tokenValue",
		wsEnv:    "dotenvSecret",
		credFile: "src/credentials.ts",
		envFile:  "src/.env.ts",
	},
	{
		name: "c",
		server: func(t testing.TB) Language {
			l := clangdLanguages(t)["c"]
			return l
		},
		files: map[string]string{
			"src/main.c": "#include \"../ext/helpers.h\"\n#include \"credentials.h\"\n#include \".env.h\"\n\nint run(void) {\n" +
				"    return outside_helper(1) + token_value() + API_TOKEN + dotenv_secret();\n}\n",
			"src/credentials.h": "#define API_TOKEN 7\n\n/* The secret token. */\nstatic inline int token_value(void) { return API_TOKEN; }\n",
			"src/.env.h":        "/* From the dotenv file. */\nstatic inline int dotenv_secret(void) { return 42; }\n",
		},
		outside:  map[string]string{"helpers.h": "/* Outside the project. */\nstatic inline int outside_helper(int x) { return x; }\n"},
		main:     "src/main.c",
		useExt:   "outside_helper(1)",
		useCred:  "token_value()",
		useToken: "+ API_TOKEN",
		wsCred:   "token_value",
		wsEnv:    "dotenv_secret",
		credFile: "src/credentials.h",
		envFile:  "src/.env.h",
	},
}

// hostileEnv is warden's capability over a hostile project, with the real
// fs capability as its read gate.
type hostileEnv struct {
	lang   hostileLang
	server Language // the real server, without the proxy
	root   string
	m      *Manager
	c      *Capability
	gate   *fs.FS
	proxy  string // the proxy's control directory
}

func newHostileEnv(t *testing.T, hl hostileLang, cfg Config) *hostileEnv {
	t.Helper()
	server := hl.server(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside := filepath.Join(base, "project"), filepath.Join(base, "outside")
	// other/ is a project file the grant-limited call may not read.
	files := map[string]string{"other/extra" + filepath.Ext(hl.main): hl.outside[firstKey(hl.outside)]}
	for k, v := range hl.files {
		files[k] = v
	}
	for dir, files := range map[string]map[string]string{root: files, outside: hl.outside} {
		for rel, content := range files {
			p := filepath.Join(dir, rel)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "ext")); err != nil {
		t.Fatal(err)
	}
	if hl.name == "c" {
		cdb := []map[string]any{{"directory": root, "file": filepath.Join(root, hl.main), "arguments": []string{"cc", "-c", hl.main}}}
		b, _ := json.Marshal(cdb)
		os.WriteFile(filepath.Join(root, "compile_commands.json"), b, 0o644)
	}
	e := &hostileEnv{lang: hl, server: server, root: root, proxy: filepath.Join(base, "proxy")}
	os.MkdirAll(e.proxy, 0o755)
	cfg.Languages = map[string]Language{hl.name: proxyLanguage(server, e.proxy)}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = time.Second
	}
	if e.m, err = NewManager(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.m.Close(context.Background()) })
	if e.gate, err = fs.New(fs.Config{ProjectRoot: root, Deny: []string{"credentials.*"}, Home: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if e.c, err = NewCapability(e.m, e.gate.ProjectRoot, e.gate); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *hostileEnv) target() Target { return Target{Language: e.lang.name, Root: e.root} }

// call is a tool granted the language and reads of read.
func (e *hostileEnv) call(read ...string) *hostfuncs.Call {
	c := callWith(e.lang.name)
	c.Grants.FS.Read = read
	return c
}

func (e *hostileEnv) serve(t *testing.T, req map[string]any, out any) error {
	t.Helper()
	b, _ := json.Marshal(req)
	res, err := e.c.Serve(context.Background(), e.call("."), b)
	if err != nil {
		return err
	}
	b, _ = json.Marshal(res)
	return json.Unmarshal(b, out)
}

// waitLoaded asks for the main file's symbols until the server has loaded
// the project. A language's first query waits for that only until the
// request's deadline and then answers unavailable, "ask again later" (as
// pyright can on a busy machine): the test asks again, as a client would,
// so that every assertion after it meets a loaded project.
func (e *hostileEnv) waitLoaded(t *testing.T) {
	t.Helper()
	var err error
	for range 5 {
		var out map[string]any
		if err = e.serve(t, map[string]any{"op": "documentSymbol", "path": e.lang.main}, &out); err == nil {
			return
		}
		var te *tool.Error
		if !errors.As(err, &te) || te.Kind != tool.KindUnavailable {
			break
		}
	}
	t.Fatalf("%s never loaded the project: %v", e.lang.name, err)
}

// at is the position of needle in the main file (its first occurrence).
func (e *hostileEnv) at(t *testing.T, needle string) Position {
	t.Helper()
	for i, line := range strings.Split(e.lang.files[e.lang.main], "\n") {
		if j := strings.Index(line, needle); j >= 0 {
			if strings.HasPrefix(needle, "+ ") {
				j += 2
			}
			return Position{Line: i + 1, Column: j + 1}
		}
	}
	t.Fatalf("%q not in %s", needle, e.lang.main)
	return Position{}
}

func (e *hostileEnv) locations(t *testing.T, op string, p Position) []Location {
	t.Helper()
	req := map[string]any{"op": op, "path": e.lang.main, "line": p.Line, "column": p.Column}
	if op == "references" {
		req["includeDeclaration"] = true
	}
	var r locationsReply
	if err := e.serve(t, req, &r); err != nil {
		t.Fatalf("%s at %+v: %v", op, p, err)
	}
	return r.Locations
}

// leaks reports the locations in paths warden must never show.
func (e *hostileEnv) leaks(locs []Location) []Location {
	var out []Location
	for _, l := range locs {
		if strings.HasPrefix(l.Path, "ext/") || l.Path == e.lang.credFile || l.Path == e.lang.envFile {
			out = append(out, l)
		}
	}
	return out
}

// eventuallyFound asks until the server answers something (a server that
// indexes lazily answers nothing at first), bounded; nil if it never does.
func eventuallyFound[T any](ask func() []T) []T {
	deadline := time.Now().Add(time.Minute)
	for {
		if got := ask(); len(got) > 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func firstKey(m map[string]string) string {
	for k := range m {
		if k != "__init__.py" {
			return k
		}
	}
	return ""
}

// direct starts the real server on the project, asked without warden, with
// the main file open.
func (e *hostileEnv) direct(t *testing.T) (*rawServer, *rawFiles) {
	t.Helper()
	raw := startRaw(t, e.root, e.server)
	raw.open(e.lang.main)
	return raw, &rawFiles{root: e.root}
}

func (e *hostileEnv) rawPos(p Position) map[string]any {
	return map[string]any{
		"textDocument": map[string]string{"uri": fileURI(filepath.Join(e.root, e.lang.main))},
		"position":     map[string]int{"line": p.Line - 1, "character": p.Column - 1},
	}
}

// throughExt counts the server's locations reached through ext/: spelled
// inside the root under ext/, or at their real path outside it.
func throughExt(in []Location, outside int) int {
	n := outside
	for _, l := range in {
		if strings.HasPrefix(l.Path, "ext/") {
			n++
		}
	}
	return n
}

// TestHostileLanguages runs the hostile cases against each language's real
// server: a symlink out of the root, deny-listed files, paths outside the
// grant.
func TestHostileLanguages(t *testing.T) {
	for _, hl := range hostileLangs {
		t.Run(hl.name, func(t *testing.T) {
			e := newHostileEnv(t, hl, Config{})
			ctx := context.Background()
			e.waitLoaded(t)

			t.Run("symlink out of the root", func(t *testing.T) {
				p := e.at(t, hl.useExt)
				// A server may answer from a partial program at first
				// (typescript-language-server, for a second or two, defines
				// an imported name at its import): ask until the answer
				// goes past the main file, on warden's server and on the
				// direct one.
				settled := func(ls []Location, outside int) bool {
					return outside > 0 || len(ls) > 0 && !slices.ContainsFunc(ls, func(l Location) bool { return l.Path == hl.main })
				}
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
					ls, err := e.m.Definition(ctx, e.target(), hl.main, p)
					if err != nil {
						t.Fatal(err)
					}
					// Outside the root, the manager leaves it out: none.
					if len(ls) == 0 || settled(ls, 0) || time.Now().After(deadline) {
						break
					}
				}
				got := e.locations(t, "definition", p)
				raw, files := e.direct(t)
				var ans json.RawMessage
				var in []Location
				var outside int
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
					raw.call("textDocument/definition", e.rawPos(p), &ans)
					if in, outside = files.locs(ans); settled(in, outside) || time.Now().After(deadline) {
						break
					}
				}
				server := throughExt(in, outside)
				if server == 0 {
					t.Fatalf("the server should define %s through ext/: %s", hl.useExt, ans)
				}
				if len(got) != 0 {
					t.Fatalf("definition through the symlink out: got %+v, want none", got)
				}
				// clangd finds references in other files through its
				// background index: ask until the ones through ext/ show up,
				// and until warden's server has as many inside the root.
				var rin []Location
				var rout, rext int
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
					raw.call("textDocument/references", mergeMaps(e.rawPos(p), map[string]any{"context": map[string]bool{"includeDeclaration": true}}), &ans)
					rin, rout = files.locs(ans)
					if rext = throughExt(rin, rout); rext > 0 || time.Now().After(deadline) {
						break
					}
				}
				if rext == 0 {
					t.Fatalf("the server should find a reference through ext/: %s", ans)
				}
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
					ls, err := e.m.References(ctx, e.target(), hl.main, p, true)
					if err != nil {
						t.Fatal(err)
					}
					if len(ls) >= len(rin) || time.Now().After(deadline) {
						break
					}
				}
				refs := e.locations(t, "references", p)
				if leaks := e.leaks(refs); len(leaks) > 0 {
					t.Fatalf("references leak %+v", leaks)
				}
				if len(refs) != len(rin)+rout-rext {
					t.Fatalf("references: the server gave %d (%d through ext/), warden %d: only the ext/ ones may go:\n server %s\n warden %+v", len(rin)+rout, rext, len(refs), ans, refs)
				}
				t.Logf("%s symlink out: definition: server %d through ext/, warden 0; references: server %d (%d through ext/), warden %d", hl.name, server, len(rin)+rout, rext, len(refs))
			})

			t.Run("deny-listed files", func(t *testing.T) {
				for _, tc := range []struct{ path, rule, source string }{
					{hl.credFile, "credentials.*", "security.deny"},
					{hl.envFile, ".env.*", "built-in"},
				} {
					_, err := e.serveErr(map[string]any{"op": "documentSymbol", "path": tc.path}, ".")
					wantExact(t, err, tool.KindDenied, fmt.Sprintf("read %q: matches deny rule %q (%s); deny rules always win over grants and also apply to the real path behind symlinks", tc.path, tc.rule, tc.source))
				}
				p := e.at(t, hl.useCred)
				if got := e.locations(t, "definition", p); len(got) != 0 {
					t.Fatalf("definition in a denied file: got %+v", got)
				}
				if defs, err := e.m.Definition(ctx, e.target(), hl.main, p); err != nil || len(defs) != 1 || defs[0].Path != hl.credFile {
					t.Fatalf("the server should define %s in %s: %+v, %v", hl.useCred, hl.credFile, defs, err)
				}
				var h hoverReply
				if err := e.serve(t, map[string]any{"op": "hover", "path": hl.main, "line": p.Line, "column": p.Column}, &h); err != nil || h.Hover != nil {
					t.Fatalf("hover of a denied definition: %+v, %v", h.Hover, err)
				}
				if dh, err := e.m.Hover(ctx, e.target(), hl.main, p); err != nil || dh == nil || !strings.Contains(dh.Text, "The secret token") {
					t.Fatalf("the server should describe %s: %+v, %v", hl.useCred, dh, err)
				}
				// A definition in the file the built-in list hides (TypeScript
				// and C import one): nothing, and no hover either.
				if strings.Contains(hl.files[hl.main], hl.wsEnv+"()") {
					ep := e.at(t, hl.wsEnv+"()")
					if got := e.locations(t, "definition", ep); len(got) != 0 {
						t.Fatalf("definition in %s: got %+v", hl.envFile, got)
					}
					if defs, err := e.m.Definition(ctx, e.target(), hl.main, ep); err != nil || len(defs) != 1 || defs[0].Path != hl.envFile {
						t.Fatalf("the server should define %s in %s: %+v, %v", hl.wsEnv, hl.envFile, defs, err)
					}
					var h hoverReply
					if err := e.serve(t, map[string]any{"op": "hover", "path": hl.main, "line": ep.Line, "column": ep.Column}, &h); err != nil || h.Hover != nil {
						t.Fatalf("hover of a definition in %s: %+v, %v", hl.envFile, h.Hover, err)
					}
				}
				tp := e.at(t, hl.useToken)
				direct := eventuallyFound(func() []Location {
					ls, err := e.m.References(ctx, e.target(), hl.main, tp, true)
					if err != nil {
						t.Fatal(err)
					}
					return e.leaks(ls)
				})
				if len(direct) == 0 {
					t.Fatalf("the server should see references in %s", hl.credFile)
				}
				refs := e.locations(t, "references", tp)
				if leaks := e.leaks(refs); len(leaks) > 0 || len(refs) == 0 {
					t.Fatalf("references of the denied constant: %+v (leaks %+v)", refs, leaks)
				}
				for _, q := range []string{hl.wsCred, hl.wsEnv} {
					var r symbolsReply
					if err := e.serve(t, map[string]any{"op": "workspaceSymbol", "query": q}, &r); err != nil {
						t.Fatal(err)
					}
					for _, s := range r.Symbols {
						if s.Path == hl.credFile || s.Path == hl.envFile || strings.HasPrefix(s.Path, "ext/") {
							t.Fatalf("workspace symbol %q leaks %+v", q, s)
						}
					}
				}
				found := eventuallyFound(func() []Symbol {
					syms, err := e.m.WorkspaceSymbols(ctx, e.target(), hl.wsCred)
					if err != nil {
						t.Fatal(err)
					}
					return slicesFilter(syms, func(s Symbol) bool { return s.Path == hl.credFile })
				})
				if len(found) == 0 {
					t.Fatalf("the server should find workspace symbol %s in %s", hl.wsCred, hl.credFile)
				}
				var r symbolsReply
				if err := e.serve(t, map[string]any{"op": "workspaceSymbol", "query": hl.wsCred}, &r); err != nil {
					t.Fatal(err)
				}
				for _, s := range r.Symbols {
					if s.Path == hl.credFile {
						t.Fatalf("workspace symbol %q leaks %+v once indexed", hl.wsCred, s)
					}
				}
				t.Logf("%s deny: server finds %s in %s (%d), warden returns %d symbols, none from denied files", hl.name, hl.wsCred, hl.credFile, len(found), len(r.Symbols))
			})

			t.Run("outside the grant", func(t *testing.T) {
				ext := filepath.Ext(hl.main)
				mainDir := filepath.Dir(hl.main)
				for _, tc := range []struct {
					read     string
					path     string
					kind     tool.Kind
					contains string
				}{
					{mainDir, "other/extra" + ext, tool.KindDenied, fmt.Sprintf(`read "other/extra%s": not granted; grant it with tools.grants.probe.fs.read: ["other"]`, ext)},
					{".", "ext/" + firstKey(hl.outside), tool.KindDenied, fmt.Sprintf(`read "ext/%s": resolves outside root "project"; symlinks may not leave their root`, firstKey(hl.outside))},
					{".", "../outside/" + firstKey(hl.outside), tool.KindInvalidArguments, fmt.Sprintf(`path "../outside/%s": must be relative to the project root and stay inside it`, firstKey(hl.outside))},
					{".", "/etc/passwd" + ext, tool.KindInvalidArguments, fmt.Sprintf(`path "/etc/passwd%s": must be relative to the project root and stay inside it`, ext)},
				} {
					_, err := e.serveErr(map[string]any{"op": "documentSymbol", "path": tc.path}, tc.read)
					wantExact(t, err, tc.kind, tc.contains)
				}
			})
		})
	}
}

// wantExact checks err's kind and its whole message.
func wantExact(t *testing.T, err error, kind tool.Kind, msg string) {
	t.Helper()
	var te *tool.Error
	if !errors.As(err, &te) || te.Kind != kind || te.Message != msg {
		t.Fatalf("got error %#v, want kind %q and message %q", err, kind, msg)
	}
}

func (e *hostileEnv) serveErr(req map[string]any, read string) (any, error) {
	b, _ := json.Marshal(req)
	return e.c.Serve(context.Background(), e.call(read), b)
}

func mergeMaps(a, b map[string]any) map[string]any {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func slicesFilter[T any](s []T, keep func(T) bool) []T {
	var out []T
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// TestHostileServerCrashes kills each real server (through the proxy in
// front of it) exactly when warden's definition request reaches it: the
// manager retries once on a new server, which is killed too, and the call
// gets a clear error; two failures open the breaker, which refuses the
// next call without starting anything; after the cooldown (a test clock)
// the next call starts a server that answers.
func TestHostileServerCrashes(t *testing.T) {
	for _, hl := range hostileLangs {
		t.Run(hl.name, func(t *testing.T) {
			var clock struct {
				sync.Mutex
				now time.Time
			}
			clock.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := func() time.Time { clock.Lock(); defer clock.Unlock(); return clock.now }
			e := newHostileEnv(t, hl, Config{MaxFailures: 2, now: now})
			p := e.at(t, hl.useCred)
			def := func() ([]Location, error) {
				b, _ := json.Marshal(map[string]any{"op": "definition", "path": hl.main, "line": p.Line, "column": p.Column})
				res, err := e.c.Serve(context.Background(), e.call("."), b)
				if err != nil {
					return nil, err
				}
				return res.(locationsReply).Locations, nil
			}
			if _, err := def(); err != nil {
				t.Fatalf("first query: %v", err)
			}
			first := serverPID(e.m, e.target())

			if err := armCrash(e.proxy, "textDocument/definition", 2); err != nil {
				t.Fatal(err)
			}
			proxy := e.m.cfg.Languages[hl.name].Command
			died := fmt.Sprintf("language server %s for %s exited: exit status 9: proxy: killed %s on textDocument/definition",
				proxy, hl.name, filepath.Base(e.server.Command))
			_, err := def()
			wantExact(t, err, tool.KindFailed, died)
			if alive(first) {
				t.Fatalf("the first server %d is still running", first)
			}
			if starts, failures := slotStats(e.m, e.target()); starts != 2 || failures != 2 {
				t.Fatalf("starts %d, failures %d; want 2 and 2 (one retry)", starts, failures)
			}

			_, err = def()
			wantExact(t, err, tool.KindFailed, fmt.Sprintf("language server %s for %s failed 2 times within 1m0s (last: %s); not restarting it for another 1m0s", proxy, hl.name, died))
			if starts, _ := slotStats(e.m, e.target()); starts != 2 {
				t.Fatalf("the open breaker started a server: %d starts", starts)
			}

			clock.Lock()
			clock.now = clock.now.Add(defaultBreakerCooldown + time.Second)
			clock.Unlock()
			if _, err := def(); err != nil {
				t.Fatalf("after the cooldown: %v", err)
			}
			if starts, _ := slotStats(e.m, e.target()); starts != 3 || !alive(serverPID(e.m, e.target())) {
				t.Fatalf("after the cooldown: %d starts, want 3 and a live server", starts)
			}
		})
	}
}

// TestHostileServerHangs makes each real server never see one hover
// request (the proxy swallows it): the call ends at the request deadline
// with a failed error naming the server and the method, and the next call
// is answered by the same server.
func TestHostileServerHangs(t *testing.T) {
	for _, hl := range hostileLangs {
		t.Run(hl.name, func(t *testing.T) {
			// The deadline must let a cold server answer the first query on
			// two busy cores; the hung call waits for all of it.
			e := newHostileEnv(t, hl, Config{RequestTimeout: 10 * time.Second})
			// A symbol of the main file itself: hover is asked only when
			// the definition is readable.
			p := e.at(t, "run(")
			hover := func() (*Hover, error) {
				b, _ := json.Marshal(map[string]any{"op": "hover", "path": hl.main, "line": p.Line, "column": p.Column})
				res, err := e.c.Serve(context.Background(), e.call("."), b)
				if err != nil {
					return nil, err
				}
				return res.(hoverReply).Hover, nil
			}
			// A cold server loading its project may take longer than the
			// deadline on busy cores; it keeps loading, so ask again.
			for attempt := 1; ; attempt++ {
				h, err := hover()
				if err == nil && h != nil {
					break
				}
				if attempt == 5 {
					t.Fatalf("first query: %+v, %v", h, err)
				}
			}
			pid := serverPID(e.m, e.target())
			if err := armHang(e.proxy, "textDocument/hover"); err != nil {
				t.Fatal(err)
			}
			_, err := hover()
			wantExact(t, err, tool.KindFailed, fmt.Sprintf("language server %s for %s did not answer textDocument/hover in time", e.m.cfg.Languages[hl.name].Command, hl.name))
			if b, err := os.ReadFile(filepath.Join(e.proxy, "hung")); err != nil || string(b) != "textDocument/hover" {
				t.Fatalf("the proxy did not swallow the hover: %q, %v", b, err)
			}
			h, err := hover()
			if err != nil || h == nil || !strings.Contains(h.Text, "run") {
				t.Fatalf("hover after the hang: %+v, %v", h, err)
			}
			if serverPID(e.m, e.target()) != pid {
				t.Fatal("a hung request restarted the server")
			}
		})
	}
}

// TestWorkspaceSymbolsLeavesTimeForOtherLanguages: the workspace_symbols
// tool asks every granted language in turn, so a server that does not
// answer (hung, or still loading) may take only half of what is left of
// the call: the call's own context is still live when it gives up.
func TestWorkspaceSymbolsLeavesTimeForOtherLanguages(t *testing.T) {
	hl := hostileLangs[0] // python
	e := newHostileEnv(t, hl, Config{RequestTimeout: time.Minute})
	e.waitLoaded(t)
	if err := armHang(e.proxy, "workspace/symbol"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := e.m.WorkspaceSymbols(ctx, e.target(), "run")
	if err == nil {
		t.Fatal("a hung workspace/symbol answered")
	}
	if ctx.Err() != nil {
		t.Fatalf("the hung language used the whole call (%v): the languages after it get no time", err)
	}
}
