package lsp

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// rawServer is a language server asked directly, without warden: the
// agreement tests' oracle. It shares no code with warden's LSP client: it
// frames JSON-RPC itself (Content-Length headers over the server's stdio),
// sends untyped JSON, decodes answers with its own small types and
// converts UTF-16 columns with its own code, so that it shares nothing
// with the path under test but the server, and an agreement is evidence.
type rawServer struct {
	t     testing.TB
	root  string
	lang  Language
	cmd   *exec.Cmd
	in    io.WriteCloser
	files *rawFiles
	done  chan struct{} // closed when the server's output ends

	wmu sync.Mutex // one message written at a time

	mu      sync.Mutex
	nextID  int
	pending map[int]chan rawReply
	diags   map[string]chan struct{} // closed when a file's diagnostics first arrive
	opened  map[string]bool
	warm    bool              // the first file opened was diagnosed
	ended   map[string]bool   // $/progress tokens that ended
	begun   map[string]string // $/progress tokens that began, with their titles
	moved   chan struct{}     // closed and replaced on every $/progress

	closeOnce sync.Once
}

// rawReply is the answer to one of the client's requests.
type rawReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startRaw starts the server of l in root and runs the initialize
// handshake (UTF-16 positions only: the LSP default, so the conversion
// below is always exercised).
func startRaw(t testing.TB, root string, l Language) *rawServer {
	t.Helper()
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
	r := &rawServer{t: t, root: root, lang: l, cmd: cmd, in: stdin, files: &rawFiles{root: root}, done: make(chan struct{}),
		pending: map[int]chan rawReply{}, diags: map[string]chan struct{}{}, opened: map[string]bool{},
		ended: map[string]bool{}, begun: map[string]string{}, moved: make(chan struct{})}
	go r.read(bufio.NewReader(stdout))
	t.Cleanup(r.close)

	rootURI := fileURI(root)
	var opts any
	if len(l.InitializationOptions) > 0 {
		json.Unmarshal(withRoot(l.InitializationOptions, root), &opts)
	}
	r.call("initialize", map[string]any{
		"initializationOptions": opts,
		"processId":             os.Getpid(),
		"rootUri":               rootURI,
		"rootPath":              root,
		"workspaceFolders":      []any{map[string]any{"uri": rootURI, "name": filepath.Base(root)}},
		"capabilities": map[string]any{
			"window": map[string]any{"workDoneProgress": true},
			"textDocument": map[string]any{
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
				"publishDiagnostics": map[string]any{"versionSupport": true},
			},
			"workspace": map[string]any{"workspaceFolders": true},
		},
	}, nil)
	r.notify("initialized", map[string]any{})
	return r
}

// send writes one message, framed.
func (r *rawServer) send(msg map[string]any) error {
	msg["jsonrpc"] = "2.0"
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	_, err = fmt.Fprintf(r.in, "Content-Length: %d\r\n\r\n%s", len(b), b)
	return err
}

func (r *rawServer) notify(method string, params any) {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	r.send(msg)
}

// request sends a request and waits at most timeout for its answer.
func (r *rawServer) request(method string, params any, timeout time.Duration) (json.RawMessage, error) {
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	ch := make(chan rawReply, 1)
	r.pending[id] = ch
	r.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if err := r.send(msg); err != nil {
		return nil, err
	}
	select {
	case rep := <-ch:
		if rep.Error != nil {
			return nil, fmt.Errorf("error %d: %s", rep.Error.Code, rep.Error.Message)
		}
		if len(rep.Result) == 0 {
			return json.RawMessage("null"), nil
		}
		return rep.Result, nil
	case <-r.done:
		return nil, errors.New("the server's output ended")
	case <-time.After(timeout):
		return nil, errors.New("no answer")
	}
}

// call sends a request, waits for its answer and decodes it into result
// (when not nil); an error answer fails the test.
func (r *rawServer) call(method string, params, result any) {
	r.t.Helper()
	res, err := r.request(method, params, 2*time.Minute)
	if err != nil {
		r.t.Fatalf("%s (direct): %v", method, err)
	}
	if result != nil {
		if err := json.Unmarshal(res, result); err != nil {
			r.t.Fatalf("%s (direct): %v: %s", method, err, res)
		}
	}
}

// read dispatches the server's messages until its output ends: answers to
// their callers; its requests answered with null (a configuration request
// with a null per item); diagnostics and progress noted.
func (r *rawServer) read(br *bufio.Reader) {
	defer close(r.done)
	for {
		length := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSpace(line)
			if line == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
				length, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if length < 0 {
			continue
		}
		body := make([]byte, length)
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &msg) != nil {
			continue
		}
		hasID := len(msg.ID) > 0 && string(msg.ID) != "null"
		switch {
		case msg.Method != "" && hasID:
			var result any
			if msg.Method == "workspace/configuration" {
				var p struct {
					Items []json.RawMessage `json:"items"`
				}
				json.Unmarshal(msg.Params, &p)
				result = make([]any, len(p.Items))
			}
			r.send(map[string]any{"id": msg.ID, "result": result})
		case msg.Method == "textDocument/publishDiagnostics":
			var p struct {
				URI string `json:"uri"`
			}
			json.Unmarshal(msg.Params, &p)
			r.mu.Lock()
			if ch, ok := r.diags[p.URI]; ok {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
			r.mu.Unlock()
		case msg.Method == "$/progress":
			var p struct {
				Token any `json:"token"`
				Value struct {
					Kind  string `json:"kind"`
					Title string `json:"title"`
				} `json:"value"`
			}
			json.Unmarshal(msg.Params, &p)
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
		case hasID:
			var rep rawReply
			json.Unmarshal(body, &rep)
			var id int
			json.Unmarshal(msg.ID, &id)
			r.mu.Lock()
			ch := r.pending[id]
			delete(r.pending, id)
			r.mu.Unlock()
			if ch != nil {
				ch <- rep
			}
		}
	}
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

func (r *rawServer) close() { r.closeOnce.Do(r.stop) }

func (r *rawServer) stop() {
	r.request("shutdown", nil, 5*time.Second)
	r.notify("exit", nil)
	r.in.Close()
	exited := make(chan struct{})
	go func() { r.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-exited
	}
}

// open sends didOpen for the project file rel once, as warden does before
// a query. For a language that waits for its project, the first file
// opened waits, as warden's first query does, until the server has loaded
// the project, which it says by diagnosing the file.
func (r *rawServer) open(rel string) {
	r.t.Helper()
	if r.opened[rel] {
		return
	}
	r.opened[rel] = true
	b, err := os.ReadFile(filepath.Join(r.root, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	uri := fileURI(filepath.Join(r.root, rel))
	diagnosed := make(chan struct{})
	r.mu.Lock()
	r.diags[uri] = diagnosed
	r.mu.Unlock()
	r.notify("textDocument/didOpen", map[string]any{
		"textDocument": map[string]any{"uri": uri, "languageId": r.lang.languageID(rel), "version": 1, "text": string(b)},
	})
	if r.lang.WaitForProject && !r.warm {
		r.warm = true
		select {
		case <-diagnosed:
		case <-time.After(2 * time.Minute):
			r.t.Fatalf("direct: no diagnostics of %s", rel)
		}
	}
}

// at is the textDocument and UTF-16 position of p in rel, the parameters
// of a query at a position.
func (r *rawServer) at(rel string, p Position) map[string]any {
	return map[string]any{
		"textDocument": map[string]any{"uri": fileURI(filepath.Join(r.root, rel))},
		"position":     map[string]any{"line": p.Line - 1, "character": r.files.utf16(rel, p)},
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
		// SymbolInformation's field, in a flat answer.
		Location *rawLoc `json:"location"`
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

// line returns the text of line (0-based) of rel, without its line
// ending, and false past the end.
func (f *rawFiles) line(rel string, line int) (string, bool) {
	if f.lines == nil {
		f.lines = map[string][]string{}
	}
	ls, ok := f.lines[rel]
	if !ok {
		b, _ := os.ReadFile(filepath.Join(f.root, rel))
		ls = strings.Split(string(b), "\n")
		f.lines[rel] = ls
	}
	if line < 0 || line >= len(ls) {
		return "", false
	}
	return strings.TrimSuffix(ls[line], "\r"), true
}

// utf16 converts p's 1-based byte column in rel to a 0-based UTF-16 offset.
func (f *rawFiles) utf16(rel string, p Position) int {
	text, _ := f.line(rel, p.Line-1)
	units := 0
	for _, c := range text[:min(p.Column-1, len(text))] {
		if c >= 0x10000 {
			units += 2
		} else {
			units++
		}
	}
	return units
}

// col converts a UTF-16 offset on line (0-based) of rel to a 1-based byte
// column.
func (f *rawFiles) col(rel string, line, utf16 int) int {
	text, ok := f.line(rel, line)
	if !ok {
		return utf16 + 1
	}
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
		*out = append(*out, fmt.Sprintf("%s%s %s %d:%d-%d", strings.Repeat("  ", depth), s.Name, wireKind(s.Kind),
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

// sortedLocs sorts a copy of ls as warden documents its references
// sorted: by path, line and column.
func sortedLocs(ls []Location) []Location {
	out := slices.Clone(ls)
	slices.SortStableFunc(out, func(a, b Location) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return out
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
