package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The C agreement tests run clangd on real C code that ships in Debian's
// zlib1g-dev: the zran and gzlog examples (a .c with its .h each), zpipe.c,
// and zlib's own headers copied into the project, so that definitions and
// references cross files inside the project as well as leave it (libc).
const (
	zlibExamples = "/usr/share/doc/zlib1g-dev/examples"
	zlibHeaders  = "/usr/include"
)

// cKeywords are left out when picking positions: they name no symbol.
var cKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`auto break case char const continue default do double else enum extern
		float for goto if inline int long register restrict return short signed sizeof static struct
		switch typedef union unsigned void volatile while`) {
		cKeywords[k] = true
	}
}

// clangdPath finds clangd in PATH or skips: it comes from Debian's clangd
// package, not from Go.
func clangdPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("clangd")
	if err != nil {
		t.Skip("clangd is not installed: apt-get install -y clangd")
	}
	return p
}

// clangdLanguages configures C explicitly, so that these tests do not
// depend on the default languages table.
func clangdLanguages(t testing.TB) map[string]Language {
	return map[string]Language{"c": {
		Command:    clangdPath(t),
		Args:       []string{"--log=error"},
		Extensions: []string{".c", ".h"},
		LanguageID: "c",
	}}
}

// cProject copies the zlib sources into a fresh project: src/ holds the
// examples, include/ zlib's headers. With cdb, a compile_commands.json
// names every .c file's flags.
func cProject(t testing.TB, cdb bool, files ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	copyFile := func(src, rel string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Skipf("%s is not on this machine: apt-get install -y zlib1g-dev", src)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cmds []map[string]any
	for _, f := range files {
		copyFile(filepath.Join(zlibExamples, f), "src/"+f)
		if strings.HasSuffix(f, ".c") {
			cmds = append(cmds, map[string]any{
				"directory": root,
				"file":      filepath.Join(root, "src", f),
				"arguments": []string{"cc", "-std=gnu99", "-Iinclude", "-Isrc", "-c", "src/" + f},
			})
		}
	}
	if cdb {
		copyFile(filepath.Join(zlibHeaders, "zlib.h"), "include/zlib.h")
		copyFile(filepath.Join(zlibHeaders, "zconf.h"), "include/zconf.h")
		b, _ := json.MarshalIndent(cmds, "", "  ")
		if err := os.WriteFile(filepath.Join(root, "compile_commands.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// cEnv is warden's capability over a C project.
func cEnv(t testing.TB, root string) (*Manager, *Capability) {
	t.Helper()
	m, err := NewManager(Config{Languages: clangdLanguages(t), ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

// agreement asks warden (through the capability, as the bundled tools do)
// and the server directly the same questions, and tallies the answers.
type agreement struct {
	t        *testing.T
	lang     string // the language granted and named in requests
	langID   string
	root     string
	raw      *rawServer
	files    *rawFiles
	c        *Capability
	tally    *tally
	contents map[string][]string
}

func (a *agreement) lines(rel string) []string {
	if a.contents == nil {
		a.contents = map[string][]string{}
	}
	if l, ok := a.contents[rel]; ok {
		return l
	}
	b, err := os.ReadFile(filepath.Join(a.root, rel))
	if err != nil {
		a.t.Fatal(err)
	}
	l := strings.Split(string(b), "\n")
	a.contents[rel] = l
	return l
}

func (a *agreement) textPos(rel string, p Position) map[string]any { return a.raw.at(rel, p) }

func (a *agreement) serve(req map[string]any, out any) error {
	req["language"] = a.lang
	b, _ := json.Marshal(req)
	res, err := a.c.Serve(context.Background(), callWith(a.lang), b)
	if err != nil {
		return err
	}
	b, _ = json.Marshal(res)
	return json.Unmarshal(b, out)
}

// directSymbols is the server's outline of rel, flattened.
func (a *agreement) directSymbols(rel string) []string {
	var syms []rawDocSymbol
	a.raw.call("textDocument/documentSymbol", map[string]any{"textDocument": map[string]string{"uri": fileURI(filepath.Join(a.root, rel))}}, &syms)
	var out []string
	a.files.flatSymbols(rel, syms, 0, &out)
	return out
}

func (a *agreement) wardenSymbols(rel string) ([]string, error) {
	var r symbolsReply
	if err := a.serve(map[string]any{"op": "documentSymbol", "path": rel}, &r); err != nil {
		return nil, err
	}
	var out []string
	flatWarden(r.Symbols, 0, &out)
	return out, nil
}

// directLocations asks method at p and splits the answer.
func (a *agreement) directLocations(method, rel string, p Position, extra map[string]any) []Location {
	params := a.textPos(rel, p)
	for k, v := range extra {
		params[k] = v
	}
	var raw json.RawMessage
	a.raw.call(method, params, &raw)
	in, outside := a.files.locs(raw)
	a.tally.outside += outside
	return in
}

func (a *agreement) wardenLocations(op, rel string, p Position, extra map[string]any) ([]Location, error) {
	req := map[string]any{"op": op, "path": rel, "line": p.Line, "column": p.Column}
	for k, v := range extra {
		req[k] = v
	}
	var r locationsReply
	err := a.serve(req, &r)
	return r.Locations, err
}

func (a *agreement) directHover(rel string, p Position) *Hover {
	var h *rawHover
	a.raw.call("textDocument/hover", a.textPos(rel, p), &h)
	if h == nil || strings.TrimSpace(h.text()) == "" {
		return nil
	}
	out := &Hover{Text: h.text()}
	if h.Range != nil {
		loc, _ := a.files.loc(fileURI(filepath.Join(a.root, rel)), *h.Range)
		out.Range = &loc
	}
	return out
}

func (a *agreement) wardenHover(rel string, p Position) (*Hover, error) {
	var r hoverReply
	err := a.serve(map[string]any{"op": "hover", "path": rel, "line": p.Line, "column": p.Column}, &r)
	if r.Hover != nil {
		r.Hover.Format = "" // the oracle compares text and range
	}
	return r.Hover, err
}

// directWorkspace is the server's workspace/symbol answer inside the root.
func (a *agreement) directWorkspace(query string) []string {
	var syms []rawSymInfo
	a.raw.call("workspace/symbol", map[string]string{"query": query}, &syms)
	var out []string
	for _, s := range syms {
		loc, ok := a.files.loc(s.Location.URI, s.Location.Range)
		if !ok {
			a.tally.outside++
			continue
		}
		out = append(out, fmt.Sprintf("%s %s %q %s:%d:%d-%d", s.Name, wireKind(s.Kind), s.ContainerName, loc.Path, loc.Line, loc.Column, loc.EndLine))
	}
	return out
}

func (a *agreement) wardenWorkspace(query string) ([]string, error) {
	var r symbolsReply
	if err := a.serve(map[string]any{"op": "workspaceSymbol", "query": query}, &r); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range r.Symbols {
		out = append(out, fmt.Sprintf("%s %s %q %s:%d:%d-%d", s.Name, s.Kind, s.Container, s.Path, s.Line, s.Column, s.EndLine))
	}
	return out, nil
}

// probe is one question and the server's direct answer to it.
type probe struct {
	tool, rel string
	pos       Position
	query     string
	want      any
}

// TestClangdAgreement: warden's five tools against clangd asked directly,
// on zlib's examples with a compile_commands.json. The direct server
// answers first and finishes its background index; warden's clangd then
// starts on the same project (and its index on disk).
func TestClangdAgreement(t *testing.T) {
	sources := []string{"zran.c", "zran.h", "gzlog.c", "gzlog.h", "zpipe.c"}
	root := cProject(t, true, sources...)
	files := []string{"include/zlib.h"}
	for _, f := range sources {
		files = append(files, "src/"+f)
	}

	raw := startRaw(t, root, clangdLanguages(t)["c"])
	a := &agreement{t: t, lang: "c", langID: "c", root: root, raw: raw, files: raw.files, tally: newTally()}
	for _, f := range files {
		raw.open(f)
	}
	// clangd indexes the compile_commands.json's files in the background;
	// its workspace symbols and cross-file references come from that index.
	raw.waitProgress("backgroundIndexProgress")

	var probes []probe
	for _, f := range files {
		probes = append(probes, probe{tool: "symbols(file)", rel: f, want: a.directSymbols(f)})
	}
	var queries []string
	for _, h := range []string{"src/zran.h", "src/gzlog.h"} {
		for _, line := range a.directSymbols(h) {
			// Top-level symbols only: nested lines are indented.
			if name, _, _ := strings.Cut(line, " "); name != "" && len(queries) < 6 {
				queries = append(queries, name)
			}
		}
	}
	queries = append(queries, "deflate", "inflateInit")
	for _, q := range queries {
		want := a.directWorkspace(q)
		if len(want) == 0 {
			t.Fatalf("clangd finds no workspace symbol %q: the index is not ready", q)
		}
		t.Logf("workspace_symbols %q: %d symbols", q, len(want))
		probes = append(probes, probe{tool: "workspace_symbols", query: q, want: want})
	}
	for _, f := range []string{"src/zran.c", "src/gzlog.c", "src/zpipe.c"} {
		for i, p := range identifiers(strings.Join(a.lines(f), "\n"), cKeywords, 23, 8) {
			probes = append(probes,
				probe{tool: "definition", rel: f, pos: p, want: a.directLocations("textDocument/definition", f, p, nil)},
				probe{tool: "hover", rel: f, pos: p, want: a.directHover(f, p)})
			if i%2 == 0 {
				probes = append(probes, probe{tool: "references", rel: f, pos: p,
					want: sortedLocs(a.directLocations("textDocument/references", f, p, map[string]any{"context": map[string]bool{"includeDeclaration": true}}))})
			}
		}
	}
	raw.close()

	_, c := cEnv(t, root)
	a.c = c
	for _, p := range probes {
		switch p.tool {
		case "symbols(file)":
			got, err := a.wardenSymbols(p.rel)
			a.tally.add(p.tool, err == nil && slices.Equal(got, p.want.([]string)), "%s: %v\n got %q\nwant %q", p.rel, err, got, p.want)
		case "workspace_symbols":
			// warden's clangd loads the index in the background too: ask
			// until the answer matches (bounded; the bound is a failure, not
			// a timing assertion).
			var got []string
			var err error
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				got, err = a.wardenWorkspace(p.query)
				if (err == nil && slices.Equal(got, p.want.([]string))) || time.Now().After(deadline) {
					break
				}
			}
			a.tally.add(p.tool, err == nil && slices.Equal(got, p.want.([]string)), "%q: %v\n got %q\nwant %q", p.query, err, got, p.want)
		case "definition":
			got, err := a.wardenLocations("definition", p.rel, p.pos, nil)
			want := nonNil(p.want.([]Location))
			a.tally.add(p.tool, err == nil && reflect.DeepEqual(got, want), "%s:%d:%d: %v\n got %+v\nwant %+v", p.rel, p.pos.Line, p.pos.Column, err, got, want)
		case "references":
			got, err := a.wardenLocations("references", p.rel, p.pos, map[string]any{"includeDeclaration": true})
			want := nonNil(p.want.([]Location))
			a.tally.add(p.tool, err == nil && reflect.DeepEqual(got, want), "%s:%d:%d: %v\n got %+v\nwant %+v", p.rel, p.pos.Line, p.pos.Column, err, got, want)
		case "hover":
			got, err := a.wardenHover(p.rel, p.pos)
			want := p.want.(*Hover)
			a.tally.add(p.tool, err == nil && reflect.DeepEqual(got, want), "%s:%d:%d: %v\n got %+v\nwant %+v", p.rel, p.pos.Line, p.pos.Column, err, got, want)
		}
	}

	// A directory's symbols are its files' symbols, as the symbols tool
	// outlines them: every .c and .h of src/.
	dirOK := true
	for _, p := range probes {
		if p.tool == "symbols(file)" && strings.HasPrefix(p.rel, "src/") {
			got, err := a.wardenSymbols(p.rel)
			dirOK = dirOK && err == nil && slices.Equal(got, p.want.([]string))
		}
	}
	a.tally.add("symbols(dir)", dirOK, "src/: some file's outline differs (see symbols(file))")
	a.tally.report(t, "c")
	if a.tally.asked["definition"] < 20 || a.tally.outside == 0 {
		t.Fatalf("the selector picked too little: %v positions, %d outside the root", a.tally.asked, a.tally.outside)
	}
}

// TestClangdWithoutCompileCommands: with no compile_commands.json clangd
// falls back to default flags; includes next to the file and the system's
// still resolve, so definitions work, and the ones in /usr/include are
// dropped.
func TestClangdWithoutCompileCommands(t *testing.T) {
	root := cProject(t, false, "zran.c", "zran.h")
	if _, err := os.Stat(filepath.Join(root, "compile_commands.json")); err == nil {
		t.Fatal("the project should have no compile_commands.json")
	}
	_, c := cEnv(t, root)
	src, _ := os.ReadFile(filepath.Join(root, "src/zran.c"))
	at := func(needle string) Position {
		t.Helper()
		for i, line := range strings.Split(string(src), "\n") {
			if j := strings.Index(line, needle); j >= 0 {
				return Position{Line: i + 1, Column: j + 1}
			}
		}
		t.Fatalf("%q not in zran.c", needle)
		return Position{}
	}
	def := func(p Position) []Location {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"op": "definition", "path": "src/zran.c", "line": p.Line, "column": p.Column})
		res, err := c.Serve(context.Background(), callWith("c"), b)
		if err != nil {
			t.Fatalf("definition at %+v: %v", p, err)
		}
		return res.(locationsReply).Locations
	}
	// struct deflate_index is defined in zran.h, found through #include "zran.h".
	p := at("void deflate_index_free(struct deflate_index *index)")
	p.Column += len("void deflate_index_free(struct ")
	want := []Location{{Path: "src/zran.h", Line: 10, Column: 8, EndLine: 10, EndColumn: 21}}
	if got := def(p); !reflect.DeepEqual(got, want) {
		t.Fatalf("definition of deflate_index: got %+v, want %+v", got, want)
	}
	// addpoint is a static function of zran.c itself.
	p = at("index = addpoint(")
	p.Column += len("index = ")
	if got := def(p); len(got) != 1 || got[0].Path != "src/zran.c" || got[0].Line != 89 {
		t.Fatalf("definition of addpoint: got %+v, want src/zran.c:89", got)
	}
	// inflateInit2 is zlib.h's macro, from /usr/include: outside the root.
	p = at("ret = inflateInit2(&strm, 47)")
	p.Column += len("ret = ")
	if got := def(p); len(got) != 0 {
		t.Fatalf("definition of inflateInit2 outside the root: got %+v, want none", got)
	}
	// The server did find it: warden dropped it.
	raw := startRaw(t, root, clangdLanguages(t)["c"])
	raw.open("src/zran.c")
	var ans json.RawMessage
	raw.call("textDocument/definition", map[string]any{
		"textDocument": map[string]string{"uri": fileURI(filepath.Join(root, "src/zran.c"))},
		"position":     map[string]int{"line": p.Line - 1, "character": p.Column - 1},
	}, &ans)
	if in, outside := (&rawFiles{root: root}).locs(ans); len(in) != 0 || outside != 1 || !strings.Contains(string(ans), "/zlib.h") {
		t.Fatalf("clangd should define inflateInit2 in /usr/include/zlib.h: %s", ans)
	}
}

// TestClangdColumnsAfterNonASCII: clangd 14 counts UTF-16 code units
// (it does not offer UTF-8 through positionEncodings), warden bytes. On a
// line where "Grüße 😀" comes first (ü and ß are 2 bytes and 1 unit each,
// the emoji 4 bytes and a surrogate pair), a query at the byte column of a
// use finds its definition, and the use's reference comes back at that
// byte column.
func TestClangdColumnsAfterNonASCII(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := "int area(int w, int h) { return w * h; }\n\n" +
		"int total(void) { const char *s = \"Grüße 😀\"; (void)s; return area(2, 3); }\n"
	if err := os.WriteFile(filepath.Join(root, "a.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, c := cEnv(t, root)
	line := strings.Split(src, "\n")[2]
	col := strings.Index(line, "area(2") + 1 // bytes
	ask := func(op string) []Location {
		t.Helper()
		req := map[string]any{"op": op, "path": "a.c", "line": 3, "column": col}
		if op == "references" {
			req["includeDeclaration"] = true
		}
		b, _ := json.Marshal(req)
		res, err := c.Serve(context.Background(), callWith("c"), b)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		return res.(locationsReply).Locations
	}
	decl := Location{Path: "a.c", Line: 1, Column: 5, EndLine: 1, EndColumn: 9}
	use := Location{Path: "a.c", Line: 3, Column: col, EndLine: 3, EndColumn: col + 4}
	if got := ask("definition"); !reflect.DeepEqual(got, []Location{decl}) {
		t.Fatalf("definition: got %+v, want %+v", got, decl)
	}
	if got := ask("references"); !reflect.DeepEqual(got, []Location{decl, use}) {
		t.Fatalf("references: got %+v, want %+v and %+v", got, decl, use)
	}
}
