package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestToolsBeyondGo calls the five bundled tools on Python and TypeScript
// files, through the app as a client would: a directory outline covers the
// files of every granted language, positions are answered by each file's
// server, and workspace_symbols searches every granted language, naming
// under skipped one whose server is missing instead of failing.
func TestToolsBeyondGo(t *testing.T) {
	for _, cmd := range []string{"pyright-langserver", "typescript-language-server"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("%s is not installed (npm i -g pyright typescript-language-server typescript@5)", cmd)
		}
	}
	var grants strings.Builder
	for _, name := range lspTools {
		fmt.Fprintf(&grants, "    %s:\n      module: %s\n      lsp: [go, python, typescript, zig]\n      fs:\n        read: [\".\"]\n", name, lspModule)
	}
	// pyright and tsserver load a project in seconds, and in tens of
	// seconds on a loaded machine: the call and request bounds are raised
	// (tools.limits.lsp.timeout after the grants, lsp.timeout after the
	// languages) so that the test waits for them rather than flakes.
	grants.WriteString("  limits:\n    lsp:\n      timeout: 3m\n")
	// zig: a configured language whose server is not installed.
	e := newEnvWith(t, grants.String(), "    zig:\n      command: /nonexistent/zls\n      extensions: [\".zig\"]\n  timeout: 2m\n")
	files := map[string]string{
		"poly/app.py": "class Greeter:\n    def greet(self, name: str) -> str:\n        return 'hello ' + name\n\n\n" +
			"def main() -> None:\n    g = Greeter()\n    print(g.greet('world'))\n    print(g.greet('again'))\n",
		"poly/util.ts": "export function greetAll(names: string[]): string[] {\n  return names.map((n) => `hello ${n}`);\n}\n\n" +
			"export const everyone = greetAll([\"a\", \"b\"]);\n",
		"poly/notes.txt": "not code\n",
		"poly/build.zig": "const std = @import(\"std\");\n",
	}
	for name, content := range files {
		p := filepath.Join(e.project, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// symbols: the directory's Python and TypeScript files; not the text
	// file; the zig file, whose server is missing, is skipped by name.
	var outline struct {
		Files   int     `json:"files"`
		Symbols []entry `json:"symbols"`
		Skipped []struct{ Path, Error string }
	}
	e.ok(t, "symbols", map[string]any{"path": "poly"}, "", &outline)
	var got []string
	for _, s := range outline.Symbols {
		got = append(got, fmt.Sprintf("%s %s %s %d:%d", s.Path, s.Kind, s.Name, s.Line, s.Column))
	}
	// Each file's symbols in its server's order (tsserver sorts by name).
	want := []string{"poly/app.py class Greeter 1:7", "poly/app.py function main 6:5",
		"poly/util.ts constant everyone 5:14", "poly/util.ts function greetAll 1:17"}
	if outline.Files != 3 || !slices.Equal(got, want) || len(outline.Skipped) != 1 || outline.Skipped[0].Path != "poly/build.zig" ||
		!strings.Contains(outline.Skipped[0].Error, "the zig language server is not installed (/nonexistent/zls is not in PATH)") {
		t.Fatalf("symbols poly: %d files %q skipped %+v; want 3 files %q and build.zig skipped", outline.Files, got, outline.Skipped, want)
	}

	// definition and references in Python, by name.
	var defs struct {
		Definitions []struct {
			Path         string
			Line, Column int
		} `json:"definitions"`
	}
	e.ok(t, "definition", map[string]any{"path": "poly/app.py", "line": 8, "name": "greet"}, "", &defs)
	if len(defs.Definitions) != 1 || defs.Definitions[0].Path != "poly/app.py" || defs.Definitions[0].Line != 2 || defs.Definitions[0].Column != 9 {
		t.Fatalf("definition of greet: %+v", defs)
	}
	var refs struct {
		References []struct {
			Path string
			Line int
		} `json:"references"`
	}
	e.ok(t, "references", map[string]any{"path": "poly/app.py", "line": 2, "name": "greet"}, "", &refs)
	if len(refs.References) != 2 || refs.References[0].Line != 8 || refs.References[1].Line != 9 {
		t.Fatalf("references of greet: %+v", refs)
	}

	// hover in TypeScript: the signature.
	var hover struct {
		Found bool
		Text  string
	}
	e.ok(t, "hover", map[string]any{"path": "poly/util.ts", "line": 5, "name": "greetAll"}, "", &hover)
	if !hover.Found || !strings.Contains(hover.Text, "function greetAll(names: string[]): string[]") {
		t.Fatalf("hover greetAll: %+v", hover)
	}

	// workspace_symbols: every granted language; zig skipped, named.
	var ws struct {
		Symbols []struct{ Name, Path, Language string } `json:"symbols"`
		Skipped []struct{ Language, Error string }      `json:"skipped"`
	}
	e.ok(t, "workspace_symbols", map[string]any{"query": "greet"}, "", &ws)
	langs := map[string]bool{}
	for _, s := range ws.Symbols {
		langs[s.Language] = true
	}
	if !langs["python"] || !langs["typescript"] || len(ws.Skipped) != 1 || ws.Skipped[0].Language != "zig" ||
		!strings.Contains(ws.Skipped[0].Error, "the zig language server is not installed") {
		t.Fatalf("workspace_symbols greet: %+v", ws)
	}
	// One language asked: only its matches.
	ws.Symbols, ws.Skipped = nil, nil
	e.ok(t, "workspace_symbols", map[string]any{"query": "greet", "language": "typescript"}, "", &ws)
	if len(ws.Symbols) == 0 || len(ws.Skipped) != 0 {
		t.Fatalf("workspace_symbols greet in typescript: %+v", ws)
	}
	for _, s := range ws.Symbols {
		if s.Language != "typescript" || !strings.HasSuffix(s.Path, ".ts") {
			t.Fatalf("workspace_symbols greet in typescript: %+v", ws)
		}
	}
}
