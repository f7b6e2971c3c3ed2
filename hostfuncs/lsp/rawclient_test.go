package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// rawServer is a language server asked directly, without warden: the
// agreement tests' oracle. It speaks JSON-RPC with untyped JSON, decodes
// answers with its own small types and converts UTF-16 columns with its own
// code, so that it shares nothing with the path under test but the server.
type rawServer struct {
	t    testing.TB
	root string
	cmd  *exec.Cmd
	conn jsonrpc2.Conn

	mu    sync.Mutex
	ended map[string]bool // $/progress tokens that ended
	begun map[string]string
	moved chan struct{} // closed and replaced on every $/progress

	closeOnce sync.Once
}

// startRaw starts command in root and runs the initialize handshake with
// the client capabilities warden declares (UTF-16 positions only: the LSP
// default, so the conversion below is always exercised).
func startRaw(t testing.TB, root string, l Language) *rawServer {
	t.Helper()
	r := &rawServer{t: t, root: root, ended: map[string]bool{}, begun: map[string]string{}, moved: make(chan struct{})}
	cmd := exec.Command(l.Command, l.Args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), l.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", l.Command, err)
	}
	r.cmd = cmd
	r.conn = jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(pipePair{r: stdout, w: stdin}))
	r.conn.Go(context.Background(), r.handle)
	t.Cleanup(r.close)

	rootURI := fileURI(root)
	var res json.RawMessage
	var opts any
	if len(l.InitializationOptions) > 0 {
		opts = json.RawMessage(l.InitializationOptions)
	}
	r.call("initialize", map[string]any{
		"initializationOptions": opts,
		"processId":             os.Getpid(),
		"rootUri":               rootURI,
		"rootPath":              root,
		"workspaceFolders": []map[string]string{
			{"uri": rootURI, "name": filepath.Base(root)},
		},
		"capabilities": map[string]any{
			"window": map[string]any{"workDoneProgress": true},
			"textDocument": map[string]any{
				"documentSymbol": map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"hover":          map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
			},
			"workspace": map[string]any{"workspaceFolders": true},
		},
	}, &res)
	if err := r.conn.Notify(context.Background(), "initialized", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	return r
}

// pipePair glues a child's stdout and stdin into one io.ReadWriteCloser.
type pipePair struct {
	r io.Reader
	w io.WriteCloser
}

func (p pipePair) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipePair) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipePair) Close() error                { return p.w.Close() }

func (r *rawServer) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	switch req.Method() {
	case "workspace/configuration":
		var p struct {
			Items []json.RawMessage `json:"items"`
		}
		json.Unmarshal(req.Params(), &p)
		return make([]any, len(p.Items)), nil
	case "$/progress":
		var p struct {
			Token any `json:"token"`
			Value struct {
				Kind  string `json:"kind"`
				Title string `json:"title"`
			} `json:"value"`
		}
		json.Unmarshal(req.Params(), &p)
		tok := fmt.Sprint(p.Token)
		r.mu.Lock()
		switch p.Value.Kind {
		case "begin":
			r.begun[tok] = p.Value.Title
		case "end":
			r.ended[tok] = true
		}
		close(r.moved)
		r.moved = make(chan struct{})
		r.mu.Unlock()
	}
	return nil, nil
}

// waitProgress waits until a progress whose token or title contains name
// has begun and ended: clangd's "backgroundIndexProgress", say.
func (r *rawServer) waitProgress(name string) {
	r.t.Helper()
	timeout := time.After(3 * time.Minute) // only a broken server hits this
	for {
		r.mu.Lock()
		done := false
		for tok, title := range r.begun {
			if (strings.Contains(tok, name) || strings.Contains(title, name)) && r.ended[tok] {
				done = true
			}
		}
		moved := r.moved
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-moved:
		case <-timeout:
			r.t.Fatalf("progress %q never ended", name)
		}
	}
}

func (r *rawServer) call(method string, params, result any) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := r.conn.Call(ctx, method, params, result); err != nil {
		r.t.Fatalf("%s (direct): %v", method, err)
	}
}

func (r *rawServer) close() { r.closeOnce.Do(r.stop) }

func (r *rawServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.conn.Call(ctx, "shutdown", nil, nil)
	r.conn.Notify(ctx, "exit", nil)
	r.conn.Close()
	done := make(chan struct{})
	go func() { r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-done
	}
}

// open sends didOpen for the project file rel.
func (r *rawServer) open(rel, languageID string) {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	err = r.conn.Notify(context.Background(), "textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": fileURI(filepath.Join(r.root, rel)), "languageId": languageID, "version": 1, "text": string(b)},
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func fileURI(abs string) string {
	// Test paths are plain ASCII temp directories: no escaping needed.
	return "file://" + filepath.ToSlash(abs)
}

// The oracle's own decoding of LSP answers.
type (
	rawPos struct {
		Line      int `json:"line"`
		Character int `json:"character"`
	}
	rawRange struct {
		Start rawPos `json:"start"`
		End   rawPos `json:"end"`
	}
	rawLoc struct {
		URI   string   `json:"uri"`
		Range rawRange `json:"range"`
		// LocationLink fields.
		TargetURI            string   `json:"targetUri"`
		TargetSelectionRange rawRange `json:"targetSelectionRange"`
	}
	rawDocSymbol struct {
		Name           string         `json:"name"`
		Detail         string         `json:"detail"`
		Kind           int            `json:"kind"`
		Range          rawRange       `json:"range"`
		SelectionRange rawRange       `json:"selectionRange"`
		Children       []rawDocSymbol `json:"children"`
	}
	rawSymInfo struct {
		Name          string `json:"name"`
		Kind          int    `json:"kind"`
		ContainerName string `json:"containerName"`
		Location      rawLoc `json:"location"`
	}
	rawHover struct {
		Contents json.RawMessage `json:"contents"`
		Range    *rawRange       `json:"range"`
	}
)

// rawFiles converts UTF-16 positions of files under root to warden's
// 1-based byte columns, reading each file once.
type rawFiles struct {
	root  string
	lines map[string][]string
}

// rel returns the project-relative path of a file URI, or false when it
// is outside the root.
func (f *rawFiles) rel(u string) (string, bool) {
	p, ok := strings.CutPrefix(u, "file://")
	if !ok {
		return "", false
	}
	rel, err := filepath.Rel(f.root, filepath.FromSlash(p))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// col converts a UTF-16 offset on line (0-based) of rel to a 1-based byte
// column.
func (f *rawFiles) col(rel string, line, utf16 int) int {
	if f.lines == nil {
		f.lines = map[string][]string{}
	}
	ls, ok := f.lines[rel]
	if !ok {
		b, _ := os.ReadFile(filepath.Join(f.root, rel))
		ls = strings.Split(string(b), "\n")
		f.lines[rel] = ls
	}
	if line >= len(ls) {
		return utf16 + 1
	}
	text := strings.TrimSuffix(ls[line], "\r")
	units, i := 0, 0
	for i < len(text) && units < utf16 {
		r, size := utf8.DecodeRuneInString(text[i:])
		if r >= 0x10000 {
			units += 2
		} else {
			units++
		}
		i += size
	}
	return i + 1
}

// loc converts a location; false when it is outside the root.
func (f *rawFiles) loc(u string, r rawRange) (Location, bool) {
	rel, ok := f.rel(u)
	if !ok {
		return Location{}, false
	}
	return Location{
		Path: rel,
		Line: r.Start.Line + 1, Column: f.col(rel, r.Start.Line, r.Start.Character),
		EndLine: r.End.Line + 1, EndColumn: f.col(rel, r.End.Line, r.End.Character),
	}, true
}

// locs decodes a definition or references answer (Location, Location[] or
// LocationLink[]) and splits it into locations inside the root and the
// number outside.
func (f *rawFiles) locs(raw json.RawMessage) (in []Location, outside int) {
	var many []rawLoc
	if err := json.Unmarshal(raw, &many); err != nil {
		var one rawLoc
		if json.Unmarshal(raw, &one) == nil && (one.URI != "" || one.TargetURI != "") {
			many = []rawLoc{one}
		}
	}
	for _, l := range many {
		u, r := l.URI, l.Range
		if l.TargetURI != "" {
			u, r = l.TargetURI, l.TargetSelectionRange
		}
		if loc, ok := f.loc(u, r); ok {
			in = append(in, loc)
		} else {
			outside++
		}
	}
	return in, outside
}

// flatSymbols renders document symbols one per line, depth-indented, with
// what warden's reply carries: name, kind, name position, end line.
func (f *rawFiles) flatSymbols(rel string, syms []rawDocSymbol, depth int, out *[]string) {
	for _, s := range syms {
		*out = append(*out, fmt.Sprintf("%s%s %s %d:%d-%d", strings.Repeat("  ", depth), s.Name, symbolKindName(protocol.SymbolKind(s.Kind)),
			s.SelectionRange.Start.Line+1, f.col(rel, s.SelectionRange.Start.Line, s.SelectionRange.Start.Character), s.Range.End.Line+1))
		f.flatSymbols(rel, s.Children, depth+1, out)
	}
}

// flatWarden renders warden's symbols like flatSymbols.
func flatWarden(syms []Symbol, depth int, out *[]string) {
	for _, s := range syms {
		*out = append(*out, fmt.Sprintf("%s%s %s %d:%d-%d", strings.Repeat("  ", depth), s.Name, s.Kind, s.Line, s.Column, s.EndLine))
		flatWarden(s.Children, depth+1, out)
	}
}

// hoverText is the oracle's reading of hover contents: MarkupContent's
// value (the shape servers that honour contentFormat send).
func (h rawHover) text() string {
	var mc struct {
		Kind  string `json:"kind"`
		Value string `json:"value"`
	}
	if json.Unmarshal(h.Contents, &mc) == nil && mc.Kind != "" {
		return mc.Value
	}
	var s string
	if json.Unmarshal(h.Contents, &s) == nil {
		return s
	}
	return string(h.Contents)
}

// identifiers picks query positions deterministically, like a script
// would: every stride-th identifier of a C-like file (comments, strings,
// character literals and preprocessor lines skipped, keywords left out),
// at most limit of them, as 1-based line and byte column.
func identifiers(src string, keywords map[string]bool, stride, limit int) []Position {
	var out []Position
	lines := strings.Split(src, "\n")
	inComment := false
	n := 0
	for li, line := range lines {
		if !inComment && strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for i := 0; i < len(line); {
			switch {
			case inComment:
				if strings.HasPrefix(line[i:], "*/") {
					inComment = false
					i += 2
				} else {
					i++
				}
			case strings.HasPrefix(line[i:], "/*"):
				inComment = true
				i += 2
			case strings.HasPrefix(line[i:], "//"):
				i = len(line)
			case line[i] == '"' || line[i] == '\'':
				q := line[i]
				for i++; i < len(line) && line[i] != q; i++ {
					if line[i] == '\\' {
						i++
					}
				}
				i++
			case isIdentStart(line[i]):
				j := i
				for j < len(line) && (isIdentStart(line[j]) || line[j] >= '0' && line[j] <= '9') {
					j++
				}
				if word := line[i:j]; !keywords[word] {
					if n%stride == 0 && len(out) < limit {
						out = append(out, Position{Line: li + 1, Column: i + 1})
					}
					n++
				}
				i = j
			case line[i] >= '0' && line[i] <= '9':
				for i < len(line) && (isIdentStart(line[i]) || line[i] >= '0' && line[i] <= '9' || line[i] == '.') {
					i++
				}
			default:
				i++
			}
		}
	}
	return out
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// tally counts one language's agreement, per tool.
type tally struct {
	asked, agreed map[string]int
	why           []string
	outside       int // locations the server gave outside the root, dropped
}

func newTally() *tally { return &tally{asked: map[string]int{}, agreed: map[string]int{}} }

func (t *tally) add(tool string, ok bool, why string, args ...any) {
	t.asked[tool]++
	if ok {
		t.agreed[tool]++
		return
	}
	t.why = append(t.why, tool+": "+fmt.Sprintf(why, args...))
}

func (t *tally) report(tb testing.TB, lang string) {
	tb.Helper()
	tools := make([]string, 0, len(t.asked))
	for k := range t.asked {
		tools = append(tools, k)
	}
	sort.Strings(tools)
	asked, agreed := 0, 0
	var parts []string
	for _, k := range tools {
		asked += t.asked[k]
		agreed += t.agreed[k]
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, t.agreed[k], t.asked[k]))
	}
	tb.Logf("%s agreement: %d of %d positions agree (%s); %d locations outside the root dropped by both",
		lang, agreed, asked, strings.Join(parts, ", "), t.outside)
	for _, w := range t.why {
		tb.Logf("%s disagreement: %s", lang, w)
	}
	if agreed != asked {
		tb.Errorf("%s: %d of %d answers disagree", lang, asked-agreed, asked)
	}
}

// sortedLocs sorts a copy of ls like warden sorts references.
func sortedLocs(ls []Location) []Location {
	out := slices.Clone(ls)
	sortLocations(out)
	return out
}
