package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The agreement tests put warden's answers (the capability, as a tool gets
// them) next to the same server's answers to a client of the test's own,
// asked directly over a second process on the same files: at positions a
// deterministic selector picks, they must be the same. The direct client
// shares no code with warden's: its JSON-RPC framing, its position
// conversion (it speaks UTF-16, LSP's default) and its result decoding are
// written here, so that a bug in either side shows as a disagreement.

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

// runAgreement runs spec and fails the test on any disagreement, logging
// the counts.
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
	d := startDirect(t, DefaultLanguages()[spec.lang], spec.root)

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

// --- the direct client ---

// direct is a language server the test talks to itself.
type direct struct {
	t    *testing.T
	root string
	lang Language
	cmd  *exec.Cmd
	in   io.WriteCloser

	mu      sync.Mutex
	nextID  int
	pending map[int]chan json.RawMessage
	diags   map[string]chan struct{} // closed when a file's diagnostics first arrive
	opened  map[string]bool
	lines   map[string][]string
	warm    bool // the first file opened was diagnosed
}

func startDirect(t *testing.T, lang Language, root string) *direct {
	t.Helper()
	cmd := exec.Command(lang.Command, lang.Args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), lang.Env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &direct{t: t, root: root, lang: lang, cmd: cmd, in: in, pending: map[int]chan json.RawMessage{},
		diags: map[string]chan struct{}{}, opened: map[string]bool{}, lines: map[string][]string{}}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	go d.read(bufio.NewReader(out))
	rootURI := "file://" + root
	var opts any
	if len(lang.InitializationOptions) > 0 {
		json.Unmarshal(withRoot(lang.InitializationOptions, root), &opts)
	}
	d.call("initialize", map[string]any{
		"processId": os.Getpid(), "rootUri": rootURI, "rootPath": root,
		"workspaceFolders": []any{map[string]any{"uri": rootURI, "name": filepath.Base(root)}},
		"capabilities": map[string]any{
			"textDocument": map[string]any{
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
				"publishDiagnostics": map[string]any{"versionSupport": true},
			},
			"workspace": map[string]any{"workspaceFolders": true},
		},
		"initializationOptions": opts,
	})
	d.notify("initialized", map[string]any{})
	return d
}

func (d *direct) send(msg map[string]any) {
	msg["jsonrpc"] = "2.0"
	b, _ := json.Marshal(msg)
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.in, "Content-Length: %d\r\n\r\n%s", len(b), b)
}

func (d *direct) notify(method string, params any) {
	d.send(map[string]any{"method": method, "params": params})
}

// call sends a request and waits for its result.
func (d *direct) call(method string, params any) json.RawMessage {
	d.t.Helper()
	d.mu.Lock()
	d.nextID++
	id := d.nextID
	ch := make(chan json.RawMessage, 1)
	d.pending[id] = ch
	d.mu.Unlock()
	d.send(map[string]any{"id": id, "method": method, "params": params})
	select {
	case res := <-ch:
		return res
	case <-time.After(2 * time.Minute):
		d.t.Fatalf("direct %s: no answer", method)
		return nil
	}
}

// read dispatches the server's messages: results to their callers, its
// requests answered with null (a configuration request with a null per
// item), diagnostics noted.
func (d *direct) read(r *bufio.Reader) {
	for {
		length := 0
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
				length, _ = strconv.Atoi(v)
			}
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return
		}
		var msg struct {
			ID     *json.RawMessage `json:"id"`
			Method string           `json:"method"`
			Params json.RawMessage  `json:"params"`
			Result json.RawMessage  `json:"result"`
		}
		json.Unmarshal(body, &msg)
		switch {
		case msg.Method != "" && msg.ID != nil:
			var result any
			if msg.Method == "workspace/configuration" {
				var p struct{ Items []any }
				json.Unmarshal(msg.Params, &p)
				result = make([]any, len(p.Items))
			}
			d.send(map[string]any{"id": msg.ID, "result": result})
		case msg.Method == "textDocument/publishDiagnostics":
			var p struct{ URI string }
			json.Unmarshal(msg.Params, &p)
			d.mu.Lock()
			if ch, ok := d.diags[p.URI]; ok {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
			d.mu.Unlock()
		case msg.ID != nil:
			var id int
			json.Unmarshal(*msg.ID, &id)
			d.mu.Lock()
			ch := d.pending[id]
			delete(d.pending, id)
			d.mu.Unlock()
			if ch != nil {
				ch <- msg.Result
			}
		}
	}
}

func (d *direct) uri(rel string) string { return "file://" + filepath.Join(d.root, rel) }

// open sends didOpen for rel once, as warden does before a query.
func (d *direct) open(rel string) {
	if d.opened[rel] {
		return
	}
	d.opened[rel] = true
	content, err := os.ReadFile(filepath.Join(d.root, rel))
	if err != nil {
		d.t.Fatal(err)
	}
	d.mu.Lock()
	d.diags[d.uri(rel)] = make(chan struct{})
	d.mu.Unlock()
	d.notify("textDocument/didOpen", map[string]any{"textDocument": map[string]any{
		"uri": d.uri(rel), "languageId": d.lang.languageID(rel), "version": 1, "text": string(content)}})
	if d.lang.WaitForProject && !d.warm {
		// As warden does: the first query waits until the server has
		// loaded the project, which it says by diagnosing the file.
		d.warm = true
		d.mu.Lock()
		ch := d.diags[d.uri(rel)]
		d.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(2 * time.Minute):
			d.t.Fatalf("direct: no diagnostics of %s", rel)
		}
	}
}

// fileLines returns rel's lines, for column conversion.
func (d *direct) fileLines(rel string) []string {
	if l, ok := d.lines[rel]; ok {
		return l
	}
	content, _ := os.ReadFile(filepath.Join(d.root, rel))
	l := strings.Split(strings.ReplaceAll(string(content), "\r\n", "\n"), "\n")
	d.lines[rel] = l
	return l
}

// toUTF16 converts a 1-based byte column of rel to a 0-based UTF-16 one.
func (d *direct) toUTF16(rel string, p Position) map[string]any {
	line := d.fileLines(rel)[p.Line-1]
	return map[string]any{"line": p.Line - 1, "character": len(utf16.Encode([]rune(line[:p.Column-1])))}
}

// fromUTF16 converts a server position in rel to "line:column", 1-based
// byte column.
func (d *direct) fromUTF16(rel string, line, char int) string {
	lines := d.fileLines(rel)
	col := char
	if line < len(lines) {
		units, off := 0, 0
		s := lines[line]
		for off < len(s) && units < char {
			r, size := utf8.DecodeRuneInString(s[off:])
			units += len(utf16.Encode([]rune{r}))
			off += size
		}
		col = off
	}
	return fmt.Sprintf("%d:%d", line+1, col+1)
}

// rel returns the project-relative path of a file URI, or false outside
// the project.
func (d *direct) rel(u string) (string, bool) {
	p, ok := strings.CutPrefix(u, "file://")
	if !ok {
		return "", false
	}
	r, err := filepath.Rel(d.root, p)
	if err != nil || !filepath.IsLocal(r) {
		return "", false
	}
	return filepath.ToSlash(r), true
}

type wireRange struct {
	Start struct{ Line, Character int } `json:"start"`
	End   struct{ Line, Character int } `json:"end"`
}

func (d *direct) rangeString(rel string, r wireRange) string {
	return rel + ":" + d.fromUTF16(rel, r.Start.Line, r.Start.Character) + "-" + d.fromUTF16(rel, r.End.Line, r.End.Character)
}

// locations asks method at p and returns the project locations, as
// path:line:col-line:col, sorted.
func (d *direct) locations(rel string, p Position, method string, extra map[string]any) []string {
	d.open(rel)
	params := map[string]any{"textDocument": map[string]any{"uri": d.uri(rel)}, "position": d.toUTF16(rel, p)}
	for k, v := range extra {
		params[k] = v
	}
	raw := d.call(method, params)
	var items []struct {
		URI                  string     `json:"uri"`
		Range                wireRange  `json:"range"`
		TargetURI            string     `json:"targetUri"`
		TargetSelectionRange *wireRange `json:"targetSelectionRange"`
	}
	if len(raw) > 0 && raw[0] == '{' {
		raw = json.RawMessage("[" + string(raw) + "]")
	}
	json.Unmarshal(raw, &items)
	out := []string{}
	for _, it := range items {
		u, r := it.URI, it.Range
		if it.TargetURI != "" {
			u, r = it.TargetURI, *it.TargetSelectionRange
		}
		if path, ok := d.rel(u); ok {
			out = append(out, d.rangeString(path, r))
		}
	}
	sort.Strings(out)
	return out
}

// hover returns the hover text at p, flattened as warden documents it.
func (d *direct) hover(rel string, p Position) string {
	d.open(rel)
	raw := d.call("textDocument/hover", map[string]any{"textDocument": map[string]any{"uri": d.uri(rel)}, "position": d.toUTF16(rel, p)})
	var h struct {
		Contents json.RawMessage `json:"contents"`
	}
	if json.Unmarshal(raw, &h) != nil || len(h.Contents) == 0 {
		return ""
	}
	var markup struct{ Kind, Value string }
	var text string
	if json.Unmarshal(h.Contents, &markup) == nil && markup.Kind != "" {
		text = markup.Value
	} else if json.Unmarshal(h.Contents, &text) != nil {
		text = string(h.Contents) // MarkedString forms: compared raw
	}
	if strings.TrimSpace(text) == "" {
		return ""
	}
	return text
}

type wireSymbol struct {
	Name           string       `json:"name"`
	Kind           int          `json:"kind"`
	SelectionRange wireRange    `json:"selectionRange"`
	Children       []wireSymbol `json:"children"`
	Location       *struct {
		URI   string    `json:"uri"`
		Range wireRange `json:"range"`
	} `json:"location"`
}

func (d *direct) documentSymbols(rel string) []string {
	d.open(rel)
	var syms []wireSymbol
	json.Unmarshal(d.call("textDocument/documentSymbol", map[string]any{"textDocument": map[string]any{"uri": d.uri(rel)}}), &syms)
	var flat func(syms []wireSymbol, container string) []string
	flat = func(syms []wireSymbol, container string) []string {
		var out []string
		for _, s := range syms {
			r := s.SelectionRange
			if s.Location != nil { // SymbolInformation
				r = s.Location.Range
			}
			pos := d.fromUTF16(rel, r.Start.Line, r.Start.Character)
			out = append(out, fmt.Sprintf("%s/%s %s %s", container, s.Name, wireKind(s.Kind), pos))
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
func (d *direct) workspaceSymbols(query string) []string {
	if d.lang.WaitForProject && !d.warm {
		r, _ := os.OpenRoot(d.root)
		first, _ := findFile(r.FS(), d.lang.Extensions)
		r.Close()
		if first != "" {
			d.open(first)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var syms []wireSymbol
		json.Unmarshal(d.call("workspace/symbol", map[string]any{"query": query}), &syms)
		out := []string{}
		for _, s := range syms {
			if s.Location == nil {
				continue
			}
			if rel, ok := d.rel(s.Location.URI); ok {
				out = append(out, fmt.Sprintf("%s %s %s:%s", s.Name, wireKind(s.Kind), rel, d.fromUTF16(rel, s.Location.Range.Start.Line, s.Location.Range.Start.Character)))
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			sort.Strings(out)
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wireKind names an LSP symbol kind, from the specification's table.
func wireKind(k int) string {
	names := []string{"", "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor",
		"enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array", "object",
		"key", "null", "enumMember", "struct", "event", "operator", "typeParameter"}
	if k > 0 && k < len(names) {
		return names[k]
	}
	return "unknown"
}
