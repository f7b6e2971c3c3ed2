package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/tool"
)

type overflow struct {
	Shown      int    `json:"shown"`
	Total      int    `json:"total"`
	Hint       string `json:"hint"`
	NextOffset *int   `json:"next_offset"`
}

type entry struct {
	Path      string `json:"path"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Container string `json:"container"`
	Detail    string `json:"detail"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
	Members   int    `json:"members"`
	Text      string `json:"text"`
}

type symbolsOut struct {
	Path     string    `json:"path"`
	Files    int       `json:"files"`
	Symbols  []entry   `json:"symbols"`
	Overflow *overflow `json:"overflow"`
}

type referencesOut struct {
	References []entry `json:"references"`
	Files      []struct {
		Path  string `json:"path"`
		Count int    `json:"count"`
	} `json:"files"`
	Overflow *overflow `json:"overflow"`
}

type definitionOut struct {
	Definitions []struct {
		entry
		EndColumn int `json:"endColumn"`
		Symbol    *struct {
			Name, Kind, Detail string
			StartLine          int `json:"startLine"`
			EndLine            int `json:"endLine"`
		} `json:"symbol"`
		Source string `json:"source"`
	} `json:"definitions"`
	Overflow *overflow `json:"overflow"`
}

type hoverOut struct {
	Found    bool      `json:"found"`
	Text     string    `json:"text"`
	Format   string    `json:"format"`
	Overflow *overflow `json:"overflow"`
}

type workspaceOut struct {
	Symbols  []entry   `json:"symbols"`
	Overflow *overflow `json:"overflow"`
}

// brief renders entries as "name@line:column" (or "path:line:column").
func brief(es []entry) string {
	parts := make([]string, len(es))
	for i, e := range es {
		if e.Name != "" {
			parts[i] = fmt.Sprintf("%s %s@%d:%d", e.Kind, e.Name, e.Line, e.Column)
		} else {
			parts[i] = fmt.Sprintf("%s:%d:%d", e.Path, e.Line, e.Column)
		}
	}
	return strings.Join(parts, ", ")
}

func TestSymbolsFile(t *testing.T) {
	e := sharedEnv(t)
	var out symbolsOut
	res := e.ok(t, "symbols", map[string]any{"path": "shapes/shapes.go"}, "", &out)
	want := "interface Shape@5:6, struct Square@10:6, method (Square).Area@15:17, function Total@20:6, variable Grüße@29:5, variable Ünit@29:14"
	if got := brief(out.Symbols); got != want || out.Files != 1 || out.Overflow != nil || res.NextCursor != "" {
		t.Fatalf("symbols:\n got %s (files %d, overflow %+v)\nwant %s", got, out.Files, out.Overflow, want)
	}
	if out.Symbols[0].Members != 1 || out.Symbols[0].Detail != "" {
		t.Fatalf("exploring Shape = %+v, want 1 member and no detail", out.Symbols[0])
	}
	wantText := "interface Shape 5:6 (1 member)\nstruct Square 10:6 (1 member)\nmethod (Square).Area 15:17\nfunction Total 20:6\nvariable Grüße 29:5\nvariable Ünit 29:14"
	if res.Content[0].Text != wantText {
		t.Fatalf("symbols text:\n%s\nwant\n%s", res.Content[0].Text, wantText)
	}

	// Focused: members, signatures and ranges.
	e.ok(t, "symbols", map[string]any{"path": "shapes/shapes.go", "detail_level": "full"}, "", &out)
	want = "interface Shape@5:6, method Area@6:2, struct Square@10:6, field Side@11:2, method (Square).Area@15:17, function Total@20:6, variable Grüße@29:5, variable Ünit@29:14"
	if got := brief(out.Symbols); got != want {
		t.Fatalf("symbols full:\n got %s\nwant %s", got, want)
	}
	if s := out.Symbols[5]; s.Detail != "func(shapes ...Shape) float64" || s.EndLine != 26 {
		t.Fatalf("Total in full mode = %+v", s)
	}
	if s := out.Symbols[3]; s.Container != "Square" || s.Detail != "float64" {
		t.Fatalf("Side in full mode = %+v", s)
	}
}

func TestSymbolsDirectory(t *testing.T) {
	e := sharedEnv(t)
	var out symbolsOut
	e.ok(t, "symbols", map[string]any{"path": "shapes"}, "", &out)
	if out.Files != 1 || len(out.Symbols) != 6 || out.Symbols[0].Path != "shapes/shapes.go" {
		t.Fatalf("symbols of shapes/: %+v", out)
	}
	// The project, recursively: secret/ is deny-listed and left out of the
	// walk; 2 + 1 + (232 + 1) + 6 symbols exceed the exploring cap of 200.
	res := e.ok(t, "symbols", map[string]any{"path": ".", "recursive": true}, "", &out)
	total := 1 + 1 + (manyFuncs + 2) + 1 + 6 // broken, main, many.go, more.go, shapes
	if out.Files != 5 || len(out.Symbols) != 200 || out.Overflow == nil || out.Overflow.Shown != 200 ||
		out.Overflow.Total != total || out.Overflow.NextOffset != nil || res.NextCursor != "" {
		t.Fatalf("recursive symbols: files %d, %d symbols, overflow %+v, cursor %q", out.Files, len(out.Symbols), out.Overflow, res.NextCursor)
	}
	if !strings.Contains(out.Overflow.Hint, `detail_level "full"`) {
		t.Fatalf("exploring hint %q does not say how to see more", out.Overflow.Hint)
	}
	if !strings.Contains(res.Content[0].Text, "\n# overflow: {\"shown\":200,") {
		t.Fatalf("the text does not carry the overflow: ...%s", res.Content[0].Text[len(res.Content[0].Text)-200:])
	}
	for _, s := range out.Symbols {
		if strings.HasPrefix(s.Path, "secret/") {
			t.Fatalf("a denied file's symbol is listed: %+v", s)
		}
	}
	// Without recursive, only main.go.
	e.ok(t, "symbols", map[string]any{"path": "."}, "", &out)
	if out.Files != 1 || brief(out.Symbols) != "function main@10:6" {
		t.Fatalf("symbols of .: %+v", out)
	}
}

func TestDefinition(t *testing.T) {
	e := sharedEnv(t)
	var out definitionOut
	// By name: main.go line 12 calls shapes.Total.
	e.ok(t, "definition", map[string]any{"path": "main.go", "line": 12, "name": "Total"}, "", &out)
	if len(out.Definitions) != 1 {
		t.Fatalf("definition of Total: %+v", out)
	}
	d := out.Definitions[0]
	if d.Path != "shapes/shapes.go" || d.Line != 20 || d.Column != 6 || d.EndColumn != 11 ||
		d.Text != "func Total(shapes ...Shape) float64 {" || d.Symbol != nil || d.Source != "" {
		t.Fatalf("definition of Total = %+v", d)
	}
	// By column, in focused mode: the declaration's source too. Columns
	// count bytes: Ünit starts after "Grüße" (7 bytes for 5 letters).
	l, c := findPos(t, e.project, "main.go", "Ünit", 1)
	e.ok(t, "definition", map[string]any{"path": "main.go", "line": l, "column": c, "detail_level": "full"}, "", &out)
	d = out.Definitions[0]
	if d.Path != "shapes/shapes.go" || d.Line != 29 || d.Column != 14 || d.Symbol == nil || d.Symbol.Kind != "variable" {
		t.Fatalf("definition of Ünit = %+v", d)
	}
	e.ok(t, "definition", map[string]any{"path": "main.go", "line": 12, "name": "Total", "detail_level": "full"}, "", &out)
	if d := out.Definitions[0]; d.Symbol == nil || d.Symbol.StartLine != 20 || d.Symbol.EndLine != 26 ||
		!strings.HasPrefix(d.Source, "func Total(shapes ...Shape) float64 {\n\tsum := 0.0\n") || !strings.HasSuffix(d.Source, "\treturn sum\n}") {
		t.Fatalf("full definition of Total = %+v", d)
	}
	// Standard library: not a project file, not shown.
	res := e.ok(t, "definition", map[string]any{"path": "main.go", "line": 12, "name": "Println"}, "", &out)
	if len(out.Definitions) != 0 || !strings.Contains(res.Content[0].Text, "no definition found in the project") {
		t.Fatalf("definition of Println: %+v / %s", out, res.Content[0].Text)
	}
	// A name that is not on the line is the caller's mistake.
	e.fails(t, "definition", map[string]any{"path": "main.go", "line": 12, "name": "Nope"}, "", tool.KindInvalidArguments, `"Nope" does not occur as a word on line 12`)
	// Neither column nor name: refused by the input schema.
	e.fails(t, "definition", map[string]any{"path": "main.go", "line": 12}, "", tool.KindInvalidArguments, "")
}

func TestReferences(t *testing.T) {
	e := sharedEnv(t)
	var out referencesOut
	l, c := findPos(t, e.project, "shapes/shapes.go", "Square", 2) // type Square struct
	e.ok(t, "references", map[string]any{"path": "shapes/shapes.go", "line": l, "column": c}, "", &out)
	// secret/secret.go uses Square twice: deny-listed, so not listed.
	want := "main.go:11:15, shapes/shapes.go:15:9, shapes/shapes.go:29:31"
	if got := brief(out.References); got != want || out.Overflow != nil {
		t.Fatalf("references of Square:\n got %s (overflow %+v)\nwant %s", got, out.Overflow, want)
	}
	if out.References[0].Text != "sq := shapes.Square{Side: 2}" {
		t.Fatalf("reference text = %q", out.References[0].Text)
	}
	e.ok(t, "references", map[string]any{"path": "shapes/shapes.go", "line": l, "name": "Square", "include_declaration": true}, "", &out)
	want = "main.go:11:15, shapes/shapes.go:10:6, shapes/shapes.go:15:9, shapes/shapes.go:29:31"
	if got := brief(out.References); got != want {
		t.Fatalf("references of Square with declaration:\n got %s\nwant %s", got, want)
	}

	// Hot has 130 uses: exploring shows 100, counts per file, no cursor.
	hot, _ := findPos(t, e.project, "many/many.go", "func Hot", 1)
	res := e.ok(t, "references", map[string]any{"path": "many/many.go", "line": hot, "name": "Hot"}, "", &out)
	if len(out.References) != 100 || out.Overflow == nil || out.Overflow.Shown != 100 || out.Overflow.Total != hotUses+moreUses ||
		out.Overflow.NextOffset != nil || res.NextCursor != "" {
		t.Fatalf("exploring references of Hot: %d shown, overflow %+v, cursor %q", len(out.References), out.Overflow, res.NextCursor)
	}
	if fmt.Sprint(out.Files) != fmt.Sprintf("[{many/many.go %d} {many/more.go %d}]", hotUses, moreUses) {
		t.Fatalf("per-file counts = %v", out.Files)
	}
}

func TestHover(t *testing.T) {
	e := sharedEnv(t)
	var out hoverOut
	e.ok(t, "hover", map[string]any{"path": "main.go", "line": 12, "name": "Total"}, "", &out)
	if !out.Found || out.Text != "func shapes.Total(shapes ...shapes.Shape) float64\nTotal sums the areas of shapes." || out.Overflow != nil {
		t.Fatalf("hover Total = %+v", out)
	}
	// Bias is defined in the deny-listed secret/: its docs are withheld.
	l, c := findPos(t, e.project, "main.go", "Bias", 1)
	res := e.ok(t, "hover", map[string]any{"path": "main.go", "line": l, "column": c}, "", &out)
	if out.Found || out.Text != "" || !strings.Contains(res.Content[0].Text, "no hover information") {
		t.Fatalf("hover Bias leaks a denied file: %+v", out)
	}
	// Paged by lines: the standard library's fmt.Println has 4.
	e.ok(t, "hover", map[string]any{"path": "main.go", "line": 12, "name": "Println", "limit": 2}, "", &out)
	if !out.Found || strings.Count(out.Text, "\n") != 1 || out.Overflow == nil || out.Overflow.Total != 4 || !strings.Contains(out.Overflow.Hint, "4 lines") {
		t.Fatalf("hover Println limit 2 = %+v", out)
	}
}

func TestWorkspaceSymbols(t *testing.T) {
	e := sharedEnv(t)
	var out workspaceOut
	e.ok(t, "workspace_symbols", map[string]any{"query": "Square"}, "", &out)
	want := "struct Square@10:6, method Square.Area@15:17, field Square.Side@11:2"
	if got := brief(out.Symbols); got != want || out.Symbols[0].Path != "shapes/shapes.go" {
		t.Fatalf("workspace_symbols Square:\n got %s\nwant %s", got, want)
	}
	e.ok(t, "workspace_symbols", map[string]any{"query": "Square", "kind": "method"}, "", &out)
	if got := brief(out.Symbols); got != "method Square.Area@15:17" {
		t.Fatalf("workspace_symbols Square kind method: %s", got)
	}
	// Bias exists only in the deny-listed secret/.
	res := e.ok(t, "workspace_symbols", map[string]any{"query": "Bias"}, "", &out)
	if len(out.Symbols) != 0 || res.Content[0].Text != `no symbols match "Bias"` {
		t.Fatalf("workspace_symbols Bias leaks a denied file: %+v", out)
	}
	// F1 matches many: the exploring cap is 50.
	e.ok(t, "workspace_symbols", map[string]any{"query": "F1"}, "", &out)
	if len(out.Symbols) != 50 || out.Overflow == nil || out.Overflow.Shown != 50 || out.Overflow.Total <= 50 {
		t.Fatalf("workspace_symbols F1: %d, overflow %+v", len(out.Symbols), out.Overflow)
	}
	e.fails(t, "workspace_symbols", map[string]any{"query": "  "}, "", tool.KindInvalidArguments, "must not be empty")
}

// pageAll pages through a focused listing with cursors, from the first
// call to the last page, checking each page's overflow on the way, and
// returns every item in order.
func pageAll[T any](t *testing.T, e *env, name string, args map[string]any, limit int, items func(out []byte) ([]T, *overflow)) []T {
	t.Helper()
	first := maps.Clone(args)
	first["detail_level"], first["limit"] = "full", limit
	var all []T
	cursor := ""
	for page := 0; ; page++ {
		res := e.call(t, name, first, cursor)
		if res.IsError {
			t.Fatalf("%s page %d: %v", name, page, res.Error)
		}
		got, o := items(res.StructuredContent)
		if o == nil {
			t.Fatalf("%s page %d: no overflow on a paged listing", name, page)
		}
		if o.Shown != len(got) || o.Shown > limit {
			t.Fatalf("%s page %d: overflow %+v for %d items", name, page, o, len(got))
		}
		all = append(all, got...)
		if res.NextCursor == "" {
			if o.NextOffset != nil || len(all) != o.Total || o.Hint != "this is the last page" {
				t.Fatalf("%s page %d: last page has overflow %+v after %d items", name, page, o, len(all))
			}
			return all
		}
		if o.NextOffset == nil || *o.NextOffset != len(all) {
			t.Fatalf("%s page %d: next_offset %v after %d items", name, page, o.NextOffset, len(all))
		}
		cursor = res.NextCursor
	}
}

func TestPagingThroughCursors(t *testing.T) {
	e := sharedEnv(t)
	hot, _ := findPos(t, e.project, "many/many.go", "func Hot", 1)
	refArgs := map[string]any{"path": "many/many.go", "line": hot, "name": "Hot"}
	refs := pageAll(t, e, "references", refArgs, 50, func(raw []byte) ([]entry, *overflow) {
		var out referencesOut
		json.Unmarshal(raw, &out)
		return out.References, out.Overflow
	})
	if len(refs) != hotUses+moreUses {
		t.Fatalf("paged %d references, want %d", len(refs), hotUses+moreUses)
	}
	// Every use exactly once, in order, ranges included in focused mode.
	seen := map[string]bool{}
	for i, r := range refs {
		key := fmt.Sprintf("%s:%d:%d", r.Path, r.Line, r.Column)
		if seen[key] || r.Text == "" {
			t.Fatalf("reference %d: %+v (duplicate or without text)", i, r)
		}
		seen[key] = true
	}
	if refs[0].Path != "many/many.go" || refs[hotUses].Path != "many/more.go" {
		t.Fatalf("references out of order: %+v ... %+v", refs[0], refs[hotUses])
	}

	syms := pageAll(t, e, "symbols", map[string]any{"path": "many"}, 60, func(raw []byte) ([]entry, *overflow) {
		var out symbolsOut
		json.Unmarshal(raw, &out)
		return out.Symbols, out.Overflow
	})
	if len(syms) != manyFuncs+3 || syms[0].Name != "Hot" || syms[len(syms)-1].Name != "More" {
		t.Fatalf("paged %d symbols of many/ (%v ... %v)", len(syms), syms[0], syms[len(syms)-1])
	}

	ws := pageAll(t, e, "workspace_symbols", map[string]any{"query": "F2"}, 7, func(raw []byte) ([]entry, *overflow) {
		var out workspaceOut
		json.Unmarshal(raw, &out)
		return out.Symbols, out.Overflow
	})
	if len(ws) < 11 { // F2, F20..F29, F200..F229
		t.Fatalf("paged only %d workspace symbols for F2", len(ws))
	}
}

func TestCursorsAreSealed(t *testing.T) {
	e := sharedEnv(t)
	hot, _ := findPos(t, e.project, "many/many.go", "func Hot", 1)
	args := map[string]any{"path": "many/many.go", "line": hot, "name": "Hot", "detail_level": "full", "limit": 10}
	res := e.call(t, "references", args, "")
	if res.IsError || res.NextCursor == "" {
		t.Fatalf("first page: %v, cursor %q", res.Error, res.NextCursor)
	}
	cursor := res.NextCursor
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	// The state after the 32-byte MAC is the tool's JSON: rewrite its
	// offset and keep the MAC, as a client trying to skip ahead would.
	state := string(raw[32:])
	altered := strings.Replace(state, `"o":10`, `"o":90`, 1)
	if altered == state {
		t.Fatalf("cursor state %s has no offset 10", state)
	}
	forged := map[string]string{
		"altered state": base64.RawURLEncoding.EncodeToString(append(raw[:32:32], altered...)),
		"flipped mac":   base64.RawURLEncoding.EncodeToString(append([]byte{raw[0] ^ 1}, raw[1:]...)),
		"made up":       base64.RawURLEncoding.EncodeToString([]byte(`{"q":{},"o":0,"l":10}`)),
		"not base64":    "!!!",
	}
	for name, c := range forged {
		t.Run(name, func(t *testing.T) {
			e.fails(t, "references", args, c, tool.KindInvalidArguments, "cursor is not one this server issued for this tool")
		})
	}
	// A cursor is bound to the tool that issued it.
	e.fails(t, "symbols", map[string]any{"path": "many"}, cursor, tool.KindInvalidArguments, "cursor is not one this server issued for this tool")
	// And to the query: another position with a genuine cursor is refused
	// by the tool.
	use, _ := findPos(t, e.project, "many/many.go", "n += Hot()", 1)
	other := maps.Clone(args)
	other["line"] = use
	e.fails(t, "references", other, cursor, tool.KindInvalidArguments, "it continues a different query")
	// The genuine cursor still works, and continues at 10.
	var out referencesOut
	e.ok(t, "references", args, cursor, &out)
	if out.Overflow == nil || out.Overflow.NextOffset == nil || *out.Overflow.NextOffset != 20 || len(out.References) != 10 {
		t.Fatalf("continuation: %+v", out.Overflow)
	}
}

func TestDeniedFile(t *testing.T) {
	e := sharedEnv(t)
	// As a target, for every tool: the fs capability's denial, which reads
	// the same whether the file exists or not.
	for _, c := range []struct {
		tool string
		args map[string]any
		rule string
	}{
		{"symbols", map[string]any{"path": "secret/secret.go"}, `deny rule "secret" (security.deny)`},
		{"symbols", map[string]any{"path": "secret/missing.go"}, `deny rule "secret" (security.deny)`},
		{"symbols", map[string]any{"path": "secret"}, `deny rule "secret" (security.deny)`},
		{"symbols", map[string]any{"path": "shapes/.env"}, `deny rule ".env" (built-in)`},
		{"definition", map[string]any{"path": "secret/secret.go", "line": 7, "column": 7}, `deny rule "secret"`},
		{"definition", map[string]any{"path": "secret/secret.go", "line": 7, "name": "Bias"}, `deny rule "secret"`},
		{"references", map[string]any{"path": "secret/secret.go", "line": 7, "column": 7}, `deny rule "secret"`},
		{"hover", map[string]any{"path": "secret/secret.go", "line": 7, "column": 7}, `deny rule "secret"`},
	} {
		e.fails(t, c.tool, c.args, "", tool.KindDenied, c.rule)
	}
	// In results: definition of Bias (defined in secret/) finds nothing.
	l, c := findPos(t, e.project, "main.go", "Bias", 1)
	var out definitionOut
	e.ok(t, "definition", map[string]any{"path": "main.go", "line": l, "column": c}, "", &out)
	if len(out.Definitions) != 0 {
		t.Fatalf("definition of Bias leaks a denied file: %+v", out.Definitions)
	}
	// The other cases (references, workspace_symbols, hover, the
	// recursive outline) are checked with their tools above.
}

func TestLSPGrantRequired(t *testing.T) {
	goplsPath(t)
	// hover and references have fs read but no lsp grant; the others keep theirs.
	e := newEnv(t, grantsYAML("hover", "references"))
	e.fails(t, "hover", map[string]any{"path": "main.go", "line": 12, "name": "Total"}, "", tool.KindDenied, "tool hover is not granted lsp access")
	e.fails(t, "references", map[string]any{"path": "main.go", "line": 12, "column": 21}, "", tool.KindDenied, "tool references is not granted lsp access")
	// The denial is per tool: a granted tool of the same warden works.
	var out definitionOut
	e.ok(t, "definition", map[string]any{"path": "main.go", "line": 12, "name": "Total"}, "", &out)
	if len(out.Definitions) != 1 {
		t.Fatalf("definition with its grant: %+v", out)
	}
	// And the denied tool is still denied on the next call (no state).
	e.fails(t, "hover", map[string]any{"path": "main.go", "line": 12, "name": "Total"}, "", tool.KindDenied, "not granted lsp access")
}

func TestDescriptors(t *testing.T) {
	e := sharedEnv(t)
	got := map[string]tool.Descriptor{}
	for _, d := range e.app.List() {
		got[d.Name] = d
	}
	for _, name := range lspTools {
		d, ok := got[name]
		if !ok {
			t.Fatalf("tool %s not loaded", name)
		}
		if !d.Paginates || d.Annotations == nil || !*d.Annotations.ReadOnlyHint || !*d.Annotations.IdempotentHint ||
			!reflect.DeepEqual(d.Capabilities.LSP, limits.DefaultLSPLanguages) || !reflect.DeepEqual(d.Capabilities.FS.Read, []string{"."}) ||
			len(d.OutputSchema) == 0 || len(d.Description) < 200 || strings.Contains(d.Title, "Go)") || strings.Contains(d.Description, "Go code") {
			t.Errorf("descriptor of %s: %+v", name, d)
		}
	}
}
