package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The agreement tests put warden's answers (the capability, as a tool gets
// them) next to the same server's answers to a client of the test's own,
// asked directly over a second process on the same files: at positions a
// deterministic selector picks, they must be the same. The direct client
// (rawServer, rawclient_test.go) shares no code with warden's: its JSON-RPC
// framing, its position conversion (it speaks UTF-16, LSP's default) and
// its result decoding are its own, so that a bug in either side shows as a
// disagreement.

// loadingTimeout is the request timeout of tests on real servers that load
// a project first (pyright, tsserver): tens of seconds on a loaded machine.
const loadingTimeout = 3 * time.Minute

// agreementSpec is one language's agreement run.
type agreementSpec struct {
	lang     string   // a key of DefaultLanguages
	root     string   // the project, already populated
	files    []string // project-relative files to query, in order
	every    int      // pick every n-th identifier occurrence
	maxPos   int      // at most this many positions per file
	queries  []string // workspace symbol queries
	keywords []string // identifiers the selector skips
}

// agreementCounts are what agreed, out of what was compared.
type agreementCounts struct {
	symbols, definitions, references, hovers, workspace [2]int // agreed, compared
	// answered counts the compared answers that were not empty
	// (definition, references, hover), so that agreeing on nothing shows.
	answered [3]int
}

func (c agreementCounts) String() string {
	f := func(v [2]int) string { return fmt.Sprintf("%d/%d", v[0], v[1]) }
	return fmt.Sprintf("documentSymbol %s files, definition %s (%d non-empty), references %s (%d non-empty), hover %s (%d non-empty), workspaceSymbol %s queries",
		f(c.symbols), f(c.definitions), c.answered[0], f(c.references), c.answered[1], f(c.hovers), c.answered[2], f(c.workspace))
}

// total returns agreed and compared over every operation.
func (c agreementCounts) total() (agreed, compared int) {
	for _, v := range [][2]int{c.symbols, c.definitions, c.references, c.hovers, c.workspace} {
		agreed, compared = agreed+v[0], compared+v[1]
	}
	return agreed, compared
}

// requireServer returns the path of the default language's command, or
// skips the test saying how to install it.
func requireServer(t *testing.T, lang string) string {
	t.Helper()
	l := DefaultLanguages()[lang]
	p, err := exec.LookPath(l.Command)
	if err != nil {
		t.Skipf("%s is not installed (%s): %s", l.Command, lang, l.Install)
	}
	return p
}

// minCompared is the fewest answers an agreement run compares: fewer, and
// the selector picked too few positions to be evidence.
const minCompared = 60

// runAgreement runs spec and fails the test on any disagreement, logging
// the counts, or when fewer than minCompared answers were compared.
func runAgreement(t *testing.T, spec agreementSpec) agreementCounts {
	t.Helper()
	m, err := NewManager(Config{ShutdownGrace: time.Second, RequestTimeout: loadingTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	c, err := NewCapability(m, func() string { return spec.root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(req)
		out, err := serve(t, c, []string{spec.lang}, string(b))
		if err != nil {
			t.Fatalf("warden %s: %v", b, err)
		}
		return out
	}
	d := startRaw(t, spec.root, DefaultLanguages()[spec.lang])

	var n agreementCounts
	var disagreements []string
	disagree := func(format string, args ...any) {
		disagreements = append(disagreements, fmt.Sprintf(format, args...))
	}
	for _, file := range spec.files {
		// documentSymbol: names, kinds and name positions, flattened.
		var ws symbolsReply
		json.Unmarshal([]byte(ask(map[string]any{"op": "documentSymbol", "path": file})), &ws)
		got := flattenSymbols(ws.Symbols, "")
		want := d.documentSymbols(file)
		n.symbols[1]++
		if slices.Equal(got, want) {
			n.symbols[0]++
		} else {
			disagree("documentSymbol %s:\n warden %v\n direct %v", file, got, want)
		}

		for _, p := range selectPositions(t, spec, file) {
			at := map[string]any{"path": file, "line": p.Line, "column": p.Column}
			with := func(op string, extra ...any) map[string]any {
				r := map[string]any{"op": op}
				for k, v := range at {
					r[k] = v
				}
				for i := 0; i+1 < len(extra); i += 2 {
					r[extra[i].(string)] = extra[i+1]
				}
				return r
			}
			where := fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column)

			gotDef := locationStrings(locationsOf(t, ask(with("definition"))))
			wantDef := d.locations(file, p, "textDocument/definition", nil)
			n.definitions[1]++
			if len(wantDef) > 0 {
				n.answered[0]++
			}
			if slices.Equal(gotDef, wantDef) {
				n.definitions[0]++
			} else {
				disagree("definition at %s:\n warden %v\n direct %v", where, gotDef, wantDef)
			}

			gotRefs := locationStrings(locationsOf(t, ask(with("references", "includeDeclaration", true))))
			wantRefs := d.locations(file, p, "textDocument/references", map[string]any{"context": map[string]any{"includeDeclaration": true}})
			n.references[1]++
			if len(wantRefs) > 0 {
				n.answered[1]++
			}
			if slices.Equal(gotRefs, wantRefs) {
				n.references[0]++
			} else {
				disagree("references at %s:\n warden %v\n direct %v", where, gotRefs, wantRefs)
			}

			var hr hoverReply
			json.Unmarshal([]byte(ask(with("hover"))), &hr)
			gotHover := ""
			if hr.Hover != nil {
				gotHover = hr.Hover.Text
			}
			wantHover := d.hover(file, p)
			n.hovers[1]++
			if wantHover != "" {
				n.answered[2]++
			}
			if gotHover == wantHover {
				n.hovers[0]++
			} else {
				disagree("hover at %s:\n warden %q\n direct %q", where, gotHover, wantHover)
			}
		}
	}
	for _, q := range spec.queries {
		var ws symbolsReply
		json.Unmarshal([]byte(ask(map[string]any{"op": "workspaceSymbol", "query": q})), &ws)
		var got []string
		for _, s := range ws.Symbols {
			got = append(got, fmt.Sprintf("%s %s %s:%d:%d", s.Name, s.Kind, s.Path, s.Line, s.Column))
		}
		sort.Strings(got)
		want := d.workspaceSymbols(q)
		n.workspace[1]++
		if slices.Equal(got, want) && len(got) > 0 {
			n.workspace[0]++
		} else {
			disagree("workspaceSymbol %q:\n warden %v\n direct %v", q, got, want)
		}
	}
	agreed, compared := n.total()
	t.Logf("%s agreement: %d of %d answers agree (%s)", spec.lang, agreed, compared, n)
	for _, s := range disagreements {
		t.Error(s)
	}
	if compared < minCompared {
		t.Fatalf("only %d answers compared (%d agreed): the selector picked too few positions", compared, agreed)
	}
	return n
}

func flattenSymbols(syms []Symbol, container string) []string {
	var out []string
	for _, s := range syms {
		out = append(out, fmt.Sprintf("%s/%s %s %d:%d", container, s.Name, s.Kind, s.Line, s.Column))
		out = append(out, flattenSymbols(s.Children, container+"/"+s.Name)...)
	}
	return out
}

func locationStrings(locs []Location) []string {
	out := []string{}
	for _, l := range locs {
		out = append(out, fmt.Sprintf("%s:%d:%d-%d:%d", l.Path, l.Line, l.Column, l.EndLine, l.EndColumn))
	}
	sort.Strings(out)
	return out
}

var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// selectPositions picks every spec.every-th identifier occurrence of file
// that is not a keyword and not in a comment line, up to spec.maxPos: the
// start of the identifier, as a 1-based byte column.
func selectPositions(t *testing.T, spec agreementSpec, file string) []Position {
	content, err := os.ReadFile(filepath.Join(spec.root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []Position
	k := 0
	for i, line := range strings.Split(string(content), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "//") || strings.HasPrefix(trimmed, "*") || strings.HasPrefix(trimmed, "/*") {
			continue
		}
		for _, m := range identifier.FindAllStringIndex(line, -1) {
			if slices.Contains(spec.keywords, line[m[0]:m[1]]) {
				continue
			}
			if k++; k%spec.every != 0 {
				continue
			}
			out = append(out, Position{Line: i + 1, Column: m[0] + 1})
			if len(out) == spec.maxPos {
				return out
			}
		}
	}
	return out
}

// --- the direct server's answers, as runAgreement compares them ---

// locations asks method at p and returns the project locations, as
// path:line:col-line:col, sorted.
func (r *rawServer) locations(rel string, p Position, method string, extra map[string]any) []string {
	r.open(rel)
	params := r.at(rel, p)
	for k, v := range extra {
		params[k] = v
	}
	var raw json.RawMessage
	r.call(method, params, &raw)
	in, _ := r.files.locs(raw)
	return locationStrings(in)
}

// hover returns the hover text at p, flattened as warden documents it.
func (r *rawServer) hover(rel string, p Position) string {
	r.open(rel)
	var h *rawHover
	r.call("textDocument/hover", r.at(rel, p), &h)
	if h == nil || len(h.Contents) == 0 {
		return ""
	}
	if text := h.text(); strings.TrimSpace(text) != "" {
		return text
	}
	return ""
}

// documentSymbols returns rel's symbols flattened as flattenSymbols does
// warden's: container/name kind line:column.
func (r *rawServer) documentSymbols(rel string) []string {
	r.open(rel)
	var syms []rawDocSymbol
	r.call("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": fileURI(filepath.Join(r.root, rel))}}, &syms)
	var flat func(syms []rawDocSymbol, container string) []string
	flat = func(syms []rawDocSymbol, container string) []string {
		var out []string
		for _, s := range syms {
			at := s.SelectionRange
			if s.Location != nil { // SymbolInformation
				at = s.Location.Range
			}
			out = append(out, fmt.Sprintf("%s/%s %s %d:%d", container, s.Name, wireKind(s.Kind), at.Start.Line+1, r.files.col(rel, at.Start.Line, at.Start.Character)))
			out = append(out, flat(s.Children, container+"/"+s.Name)...)
		}
		return out
	}
	return flat(syms, "")
}

// workspaceSymbols asks query, first opening the first file of the
// language when none is open and the language needs it, as warden does,
// and retrying an empty answer for a while (a server loading the project
// answers nothing yet).
func (r *rawServer) workspaceSymbols(query string) []string {
	if r.lang.WaitForProject && !r.warm {
		root, _ := os.OpenRoot(r.root)
		first, _ := findFile(context.Background(), root.FS(), r.lang.Extensions)
		root.Close()
		if first != "" {
			r.open(first)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var syms []rawSymInfo
		r.call("workspace/symbol", map[string]any{"query": query}, &syms)
		out := []string{}
		for _, s := range syms {
			if loc, ok := r.files.loc(s.Location.URI, s.Location.Range); ok {
				out = append(out, fmt.Sprintf("%s %s %s:%d:%d", s.Name, wireKind(s.Kind), loc.Path, loc.Line, loc.Column))
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			sort.Strings(out)
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}
