package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"
)

// BenchmarkWarmLanguages measures warm queries through the capability (gate
// checks and JSON included) on each default language's real server, on a
// small project of that language: gopls as the baseline of the same run,
// then pyright, typescript-language-server and clangd (each skipped when
// not installed). docs/lsp-tools.md quotes the medians.
func BenchmarkWarmLanguages(b *testing.B) {
	for _, lc := range []struct {
		lang, file, src, query string
		def, ref               Position // a use, and a declaration
	}{
		{"go", "shapes/shapes.go", "package shapes\n\ntype Square struct{ Side float64 }\n\nfunc (s Square) Area() float64 { return s.Side * s.Side }\n\nfunc Total(sq []Square) float64 {\n\tt := 0.0\n\tfor _, s := range sq {\n\t\tt += s.Area()\n\t}\n\treturn t\n}\n",
			"Square", Position{Line: 10, Column: 10}, Position{Line: 3, Column: 6}},
		{"python", "shapes/shapes.py", "class Square:\n    def __init__(self, side: float) -> None:\n        self.side = side\n\n    def area(self) -> float:\n        return self.side * self.side\n\n\ndef total(sq: list[Square]) -> float:\n    return sum(s.area() for s in sq)\n",
			"Square", Position{Line: 10, Column: 18}, Position{Line: 1, Column: 7}},
		{"typescript", "shapes/shapes.ts", "export class Square {\n  constructor(public side: number) {}\n  area(): number {\n    return this.side * this.side;\n  }\n}\n\nexport function total(sq: Square[]): number {\n  return sq.reduce((t, s) => t + s.area(), 0);\n}\n",
			"Square", Position{Line: 9, Column: 36}, Position{Line: 1, Column: 14}},
		{"c", "shapes/shapes.c", "struct square { double side; };\n\nstatic double area(struct square s) { return s.side * s.side; }\n\ndouble total(struct square *sq, int n) {\n  double t = 0;\n  for (int i = 0; i < n; i++) t += area(sq[i]);\n  return t;\n}\n",
			"area", Position{Line: 7, Column: 36}, Position{Line: 3, Column: 15}},
	} {
		b.Run(lc.lang, func(b *testing.B) {
			l := DefaultLanguages()[lc.lang]
			if _, err := exec.LookPath(l.Command); err != nil {
				b.Skipf("%s is not installed: %s", l.Command, l.Install)
			}
			root := b.TempDir()
			writeFile(b, root, lc.file, lc.src)
			if lc.lang == "go" {
				writeFile(b, root, "go.mod", "module example.com/shapes\n\ngo 1.21\n")
			}
			langs := DefaultLanguages()
			if lc.lang == "go" {
				langs = goplsLanguages(b)
			}
			m, err := NewManager(Config{Languages: langs, ShutdownGrace: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close(context.Background())
			c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
			if err != nil {
				b.Fatal(err)
			}
			at := func(op string, p Position, extra string) string {
				return fmt.Sprintf(`{"op":%q,"path":%q,"line":%d,"column":%d%s}`, op, lc.file, p.Line, p.Column, extra)
			}
			query, _ := json.Marshal(lc.query)
			call := callWith(lc.lang)
			ctx := context.Background()
			for _, bc := range []struct{ name, req string }{
				{"documentSymbol", fmt.Sprintf(`{"op":"documentSymbol","path":%q}`, lc.file)},
				{"definition", at("definition", lc.def, "")},
				{"references", at("references", lc.ref, `,"includeDeclaration":true`)},
				{"hover", at("hover", lc.def, "")},
				{"workspaceSymbol", fmt.Sprintf(`{"op":"workspaceSymbol","language":%q,"query":%s}`, lc.lang, query)},
			} {
				b.Run(bc.name, func(b *testing.B) {
					// The first query starts and warms the server.
					if _, err := c.Serve(ctx, call, []byte(bc.req)); err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if _, err := c.Serve(ctx, call, []byte(bc.req)); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
