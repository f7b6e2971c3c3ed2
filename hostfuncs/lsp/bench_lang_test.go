package lsp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchLang is a two-file project per language: main calls area, which
// lib defines.
type benchLang struct {
	name   string
	server func(testing.TB) Language
	files  map[string]string
	main   string // where the use is
	lib    string // where area is declared
	cdb    bool
}

var benchLangs = []benchLang{
	{
		name: "python", server: hostileLangs[0].server,
		files: map[string]string{
			"pkg/__init__.py": "",
			"pkg/lib.py":      "def area(width, height):\n    \"\"\"Area of a rectangle.\"\"\"\n    return width * height\n",
			"pkg/main.py":     "from pkg.lib import area\n\n\ndef total():\n    return area(2, 3) + area(4, 5)\n",
		},
		main: "pkg/main.py", lib: "pkg/lib.py",
	},
	{
		name: "typescript", server: hostileLangs[1].server,
		files: map[string]string{
			"tsconfig.json": `{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}}` + "\n",
			"src/lib.ts":    "/** Area of a rectangle. */\nexport function area(width: number, height: number): number {\n  return width * height;\n}\n",
			"src/main.ts":   "import { area } from \"./lib\";\n\nexport function total(): number {\n  return area(2, 3) + area(4, 5);\n}\n",
		},
		main: "src/main.ts", lib: "src/lib.ts",
	},
	{
		name: "c", server: func(tb testing.TB) Language { return clangdLanguages(tb)["c"] },
		files: map[string]string{
			"src/lib.h":  "/* Area of a rectangle. */\nint area(int width, int height);\n",
			"src/lib.c":  "#include \"lib.h\"\n\nint area(int width, int height) { return width * height; }\n",
			"src/main.c": "#include \"lib.h\"\n\nint total(void) {\n    return area(2, 3) + area(4, 5);\n}\n",
		},
		main: "src/main.c", lib: "src/lib.h", cdb: true,
	},
}

// needleAt is the 1-based position of the first needle in content.
func needleAt(tb testing.TB, content, needle string) Position {
	tb.Helper()
	for i, line := range strings.Split(content, "\n") {
		if j := strings.Index(line, needle); j >= 0 {
			return Position{Line: i + 1, Column: j + 1}
		}
	}
	tb.Fatalf("%q not found", needle)
	return Position{}
}

// BenchmarkWarmQuery measures each of the five tools' queries through the
// capability (gate checks and JSON included) on a running, indexed server,
// per language: gopls on the Go fixture, pyright, typescript-language-server
// and clangd on a two-file project each. Figures: docs/lsp-tools.md.
func BenchmarkWarmQuery(b *testing.B) {
	type query struct{ tool, req string }
	run := func(b *testing.B, c *Capability, lang string, queries []query) {
		call := callWith(lang)
		ctx := context.Background()
		for _, q := range queries {
			// Warm: ask until the answer has something in it (servers that
			// index lazily answer empty at first), bounded.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				res, err := c.Serve(ctx, call, []byte(q.req))
				if err != nil {
					b.Fatalf("%s %s: %v", lang, q.req, err)
				}
				out, _ := json.Marshal(res)
				if !strings.Contains(string(out), `"total":0`) && !strings.Contains(string(out), `"hover":null`) {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%s %s: still empty: %s", lang, q.req, out)
				}
			}
			b.Run(q.tool, func(b *testing.B) {
				for b.Loop() {
					if _, err := c.Serve(ctx, call, []byte(q.req)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}

	b.Run("go", func(b *testing.B) {
		e := sharedGopls(b)
		run(b, e.c, "go", []query{
			{"symbols", `{"op":"documentSymbol","path":"shapes/shapes.go"}`},
			{"definition", `{"op":"definition","path":"main.go","line":12,"column":21}`},
			{"references", `{"op":"references","path":"shapes/shapes.go","line":10,"column":6,"includeDeclaration":true}`},
			{"hover", `{"op":"hover","path":"main.go","line":12,"column":21}`},
			{"workspace_symbols", `{"op":"workspaceSymbol","query":"Square"}`},
		})
	})
	for _, bl := range benchLangs {
		b.Run(bl.name, func(b *testing.B) {
			l := bl.server(b)
			root, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			var cdb []map[string]any
			for rel, content := range bl.files {
				p := filepath.Join(root, rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					b.Fatal(err)
				}
				if strings.HasSuffix(rel, ".c") {
					cdb = append(cdb, map[string]any{"directory": root, "file": p, "arguments": []string{"cc", "-c", rel}})
				}
			}
			if bl.cdb {
				j, _ := json.Marshal(cdb)
				os.WriteFile(filepath.Join(root, "compile_commands.json"), j, 0o644)
			}
			m, err := NewManager(Config{Languages: map[string]Language{bl.name: l}, ShutdownGrace: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
			if err != nil {
				b.Fatal(err)
			}
			use := needleAt(b, bl.files[bl.main], "area(2")
			decl := needleAt(b, bl.files[bl.lib], "area(")
			at := func(op, path string, p Position, extra string) string {
				r, _ := json.Marshal(map[string]any{"op": op, "path": path, "line": p.Line, "column": p.Column})
				if extra != "" {
					return strings.TrimSuffix(string(r), "}") + "," + extra + "}"
				}
				return string(r)
			}
			run(b, c, bl.name, []query{
				{"symbols", `{"op":"documentSymbol","path":"` + bl.main + `"}`},
				{"definition", at("definition", bl.main, use, "")},
				{"references", at("references", bl.lib, decl, `"includeDeclaration":true`)},
				{"hover", at("hover", bl.main, use, "")},
				{"workspace_symbols", `{"op":"workspaceSymbol","query":"area"}`},
			})
		})
	}
}
