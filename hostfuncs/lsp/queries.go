package lsp

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/warden-run/warden/tool"
)

// cleanPath checks a guest's project-relative path and returns it in
// canonical form: slash-separated, no "." or ".." elements, not absolute.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "", tool.Errorf(tool.KindInvalidArguments, "path is required")
	}
	if strings.ContainsRune(p, 0) || strings.Contains(p, `\`) {
		return "", tool.Errorf(tool.KindInvalidArguments, "path %q: must be a slash-separated path relative to the project root", p)
	}
	// "project:src/a.go" is how the fs capability names the project root.
	c := path.Clean(strings.TrimPrefix(p, "project:"))
	if first, _, _ := strings.Cut(c, "/"); strings.Contains(first, ":") {
		// The fs capability reads "name:path" as a path in another root;
		// language servers serve the project root only.
		return "", tool.Errorf(tool.KindInvalidArguments, "path %q: only paths in the project root are served", p)
	}
	if c == "." || !filepath.IsLocal(filepath.FromSlash(c)) {
		return "", tool.Errorf(tool.KindInvalidArguments, "path %q: must be relative to the project root and stay inside it", p)
	}
	return c, nil
}

// checkFile validates rel for the language of t.
func (m *Manager) checkFile(t Target, rel string) (string, error) {
	rel, err := cleanPath(rel)
	if err != nil {
		return "", err
	}
	if lang, ok := m.cfg.Languages[t.Language]; ok && !m.cfg.serves(t.Language, rel) {
		return "", tool.Errorf(tool.KindInvalidArguments, "%s is not a %s file (%s)", rel, t.Language, strings.Join(lang.Extensions, ", "))
	}
	return rel, nil
}

// checkPosition validates p against the document and converts it for the
// server.
func checkPosition(s *server, doc *document, rel string, p Position) (protocol.Position, error) {
	if p.Line < 1 || p.Line > len(doc.lines) {
		return protocol.Position{}, tool.Errorf(tool.KindInvalidArguments, "line %d is outside %s (lines 1-%d)", p.Line, rel, len(doc.lines))
	}
	if n := len(doc.lines[p.Line-1]); p.Column < 1 || p.Column > n+1 {
		return protocol.Position{}, tool.Errorf(tool.KindInvalidArguments, "column %d is outside line %d of %s (columns 1-%d)", p.Column, p.Line, rel, n+1)
	}
	return toServer(doc.lines, p, s.encoding), nil
}

// DocumentSymbols returns the symbols of one file, nested as the server
// nests them.
func (m *Manager) DocumentSymbols(ctx context.Context, t Target, file string) ([]Symbol, error) {
	rel, err := m.checkFile(t, file)
	if err != nil {
		return nil, err
	}
	var out []Symbol
	err = m.do(ctx, t, func(ctx context.Context, s *server) error {
		if err := s.warmUp(ctx, rel); err != nil {
			return err
		}
		doc, err := s.sync(ctx, rel)
		if err != nil {
			return err
		}
		res, err := s.rpc.DocumentSymbol(ctx, &protocol.DocumentSymbolParams{TextDocument: protocol.TextDocumentIdentifier{URI: doc.uri}})
		if err != nil {
			return s.describe("textDocument/documentSymbol", ctx, err)
		}
		c := s.converter()
		switch r := res.(type) {
		case protocol.DocumentSymbolSlice:
			out = c.documentSymbols(rel, r)
		case protocol.SymbolInformationSlice:
			for _, si := range r {
				if sym, ok := c.symbolInformation(si); ok && sym.Path == rel {
					sym.Path = ""
					out = append(out, sym)
				}
			}
		}
		return nil
	})
	return out, err
}

// WorkspaceSymbols returns the server's matches for query across the
// project. Symbols outside the project root are left out.
//
// A server still loading the project (it reports work-done progress)
// answers from what it has loaded so far, often nothing: an empty answer
// then waits for the loading to end and asks again, within the request's
// deadline and never past it.
func (m *Manager) WorkspaceSymbols(ctx context.Context, t Target, query string) ([]Symbol, error) {
	if lang, ok := m.cfg.Languages[t.Language]; ok && m.noFiles(ctx, t.Root, lang) {
		// Nothing to find: don't start a server (a tool asking every
		// language it is granted must not start pyright in a Go project).
		return nil, nil
	}
	// The workspace_symbols tool asks every granted language in turn: one
	// server still loading (or hung) may take half of what is left of the
	// call, so that the languages after it are still asked and the tool
	// answers with that one listed as skipped, not as a timeout.
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
		defer cancel()
	}
	var out []Symbol
	err := m.do(ctx, t, func(ctx context.Context, s *server) error {
		if err := s.warmUp(ctx, ""); err != nil {
			return err
		}
		for {
			busy, ended := s.loading()
			res, err := s.rpc.Symbols(ctx, &protocol.WorkspaceSymbolParams{Query: query})
			if err != nil {
				return s.describe("workspace/symbol", ctx, err)
			}
			c := s.converter()
			out = out[:0]
			switch r := res.(type) {
			case protocol.SymbolInformationSlice:
				for _, si := range r {
					if sym, ok := c.symbolInformation(si); ok {
						out = append(out, sym)
					}
				}
			case protocol.WorkspaceSymbolSlice:
				for _, ws := range r {
					if sym, ok := c.workspaceSymbol(ws); ok {
						out = append(out, sym)
					}
				}
			}
			if still, _ := s.loading(); len(out) > 0 || (!busy && !still) {
				return nil
			}
			select {
			case <-ended:
			case <-s.exited:
				return s.exitError()
			case <-ctx.Done():
				return errStillLoading(ctx, s)
			}
		}
	})
	return out, err
}

// errStillLoading is the answer of a query whose deadline came while the
// server was loading the project; a query whose caller gave up instead
// gets its context's error, which the manager reports as cancelled.
func errStillLoading(ctx context.Context, s *server) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return tool.Errorf(tool.KindUnavailable, "language server %s for %s was still loading the project when the request's deadline came; ask again later",
		s.lang.Command, s.target.Language)
}

// maxScan bounds the directory entries findFile looks at.
const maxScan = 10000

// findFile returns the first file with one of exts in fsys, walking it in
// lexical order and skipping hidden directories and node_modules.
// complete is false when it gave up after maxScan entries or because ctx
// ended: a slow or huge tree (a network mount) must not hold a call past
// its deadline, so ctx is checked before every directory is read.
func findFile(ctx context.Context, fsys fs.FS, exts []string) (found string, complete bool) {
	seen := 0
	complete = true
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if seen++; seen > maxScan || d != nil && d.IsDir() && ctx.Err() != nil {
			complete = false
			return fs.SkipAll
		}
		if err != nil {
			if p == "." {
				complete = false
				return fs.SkipAll
			}
			return fs.SkipDir
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && slices.Contains(exts, path.Ext(p)) {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	return found, complete
}

// noFiles reports whether the project at root certainly has no file of
// lang: the whole tree was looked at (within maxScan entries) and none
// was found.
func (m *Manager) noFiles(ctx context.Context, root string, lang Language) bool {
	r, err := os.OpenRoot(root)
	if err != nil {
		return false
	}
	defer r.Close()
	found, complete := findFile(ctx, r.FS(), lang.Extensions)
	return found == "" && complete
}

// warmUp waits, once per server of a Language.WaitForProject, until the
// server has diagnosed rel (syncing it), or with rel empty the first file
// of its language in the project (hidden directories and node_modules
// skipped). A project without such a file is not an error: the server
// then answers what it answers.
func (s *server) warmUp(ctx context.Context, rel string) error {
	if !s.lang.WaitForProject {
		return nil
	}
	select {
	case s.warmSem <- struct{}{}:
	default:
		select {
		case s.warmSem <- struct{}{}:
		case <-ctx.Done():
			// Another query is warming the server up; this one's
			// deadline came first.
			return errStillLoading(ctx, s)
		}
	}
	defer func() { <-s.warmSem }()
	if s.warm {
		return nil
	}
	found := rel
	if found == "" {
		found, _ = findFile(ctx, s.rootFS.FS(), s.lang.Extensions)
	}
	if found != "" {
		doc, err := s.sync(ctx, found)
		if err != nil {
			return err
		}
		deadline, ok := ctx.Deadline()
		wait := time.Until(deadline)
		if !ok {
			wait = s.cfg.RequestTimeout
		}
		if _, fresh := s.waitDiagnostics(ctx, found, doc, wait); !fresh {
			if s.dead() {
				return s.exitError()
			}
			return errStillLoading(ctx, s)
		}
	}
	s.warm = true
	return nil
}

// Definition returns where the symbol at pos in file is defined.
// Definitions outside the project root are left out.
func (m *Manager) Definition(ctx context.Context, t Target, file string, pos Position) ([]Location, error) {
	rel, err := m.checkFile(t, file)
	if err != nil {
		return nil, err
	}
	var out []Location
	err = m.do(ctx, t, func(ctx context.Context, s *server) error {
		params, err := positionParams(ctx, s, rel, pos)
		if err != nil {
			return err
		}
		res, err := s.rpc.Definition(ctx, &protocol.DefinitionParams{TextDocumentPositionParams: params})
		if err != nil {
			return s.describe("textDocument/definition", ctx, err)
		}
		out = s.converter().definitions(res)
		return nil
	})
	return out, err
}

// References returns the references to the symbol at pos in file, sorted
// by path and position. References outside the project root are left out.
func (m *Manager) References(ctx context.Context, t Target, file string, pos Position, includeDeclaration bool) ([]Location, error) {
	rel, err := m.checkFile(t, file)
	if err != nil {
		return nil, err
	}
	var out []Location
	err = m.do(ctx, t, func(ctx context.Context, s *server) error {
		params, err := positionParams(ctx, s, rel, pos)
		if err != nil {
			return err
		}
		res, err := s.rpc.References(ctx, &protocol.ReferenceParams{
			TextDocumentPositionParams: params,
			Context:                    protocol.ReferenceContext{IncludeDeclaration: includeDeclaration},
		})
		if err != nil {
			return s.describe("textDocument/references", ctx, err)
		}
		c := s.converter()
		out = out[:0]
		for _, l := range res {
			if loc, ok := c.location(l.URI, l.Range); ok {
				out = append(out, loc)
			}
		}
		sortLocations(out)
		return nil
	})
	return out, err
}

// Hover returns what the server says about the symbol at pos in file, or
// nil when it says nothing.
func (m *Manager) Hover(ctx context.Context, t Target, file string, pos Position) (*Hover, error) {
	rel, err := m.checkFile(t, file)
	if err != nil {
		return nil, err
	}
	var out *Hover
	err = m.do(ctx, t, func(ctx context.Context, s *server) error {
		params, err := positionParams(ctx, s, rel, pos)
		if err != nil {
			return err
		}
		res, err := s.rpc.Hover(ctx, &protocol.HoverParams{TextDocumentPositionParams: params})
		if err != nil {
			return s.describe("textDocument/hover", ctx, err)
		}
		out = nil
		if res == nil {
			return nil
		}
		text, format := hoverText(res.Contents)
		if strings.TrimSpace(text) == "" {
			return nil
		}
		out = &Hover{Text: text, Format: format}
		if res.Range != nil {
			if loc, ok := s.converter().location(params.TextDocument.URI, *res.Range); ok {
				out.Range = &loc
			}
		}
		return nil
	})
	return out, err
}

// Diagnostics returns the diagnostics the server published. With a file,
// it syncs the file and waits up to Config.DiagnosticsWait for diagnostics
// of its current content; complete is false when they did not come and
// older ones (or none) are returned. Without a file it returns everything
// published so far in the project, without waiting: servers diagnose the
// workspace in the background after they start.
func (m *Manager) Diagnostics(ctx context.Context, t Target, file string) (diags []Diagnostic, complete bool, err error) {
	rel := ""
	if file != "" {
		if rel, err = m.checkFile(t, file); err != nil {
			return nil, false, err
		}
	}
	err = m.do(ctx, t, func(ctx context.Context, s *server) error {
		diags, complete = nil, true
		if rel == "" {
			s.diagMu.Lock()
			all := make(map[string]published, len(s.diags))
			for k, v := range s.diags {
				all[k] = v
			}
			s.diagMu.Unlock()
			c := s.converter()
			for p, pub := range all {
				diags = append(diags, c.diagnostics(p, pub.diags)...)
			}
			sortDiagnostics(diags)
			return nil
		}
		doc, err := s.sync(ctx, rel)
		if err != nil {
			return err
		}
		pub, fresh := s.waitDiagnostics(ctx, rel, doc, m.cfg.DiagnosticsWait)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		complete = fresh
		diags = s.converter().diagnostics(rel, pub.diags)
		sortDiagnostics(diags)
		return nil
	})
	return diags, complete, err
}

// waitDiagnostics waits up to wait for diagnostics of doc's version.
func (s *server) waitDiagnostics(ctx context.Context, rel string, doc *document, wait time.Duration) (published, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.diagMu.Lock()
		pub, ok := s.diags[rel]
		signal := s.diagSignal
		s.diagMu.Unlock()
		if ok && (pub.version >= doc.version || (pub.version == 0 && pub.seq > doc.sentSeq)) {
			return pub, true
		}
		select {
		case <-signal:
		case <-timer.C:
			return pub, false
		case <-ctx.Done():
			return pub, false
		case <-s.exited:
			return pub, false
		}
	}
}

func positionParams(ctx context.Context, s *server, rel string, pos Position) (protocol.TextDocumentPositionParams, error) {
	if err := s.warmUp(ctx, rel); err != nil {
		return protocol.TextDocumentPositionParams{}, err
	}
	doc, err := s.sync(ctx, rel)
	if err != nil {
		return protocol.TextDocumentPositionParams{}, err
	}
	p, err := checkPosition(s, doc, rel, pos)
	if err != nil {
		return protocol.TextDocumentPositionParams{}, err
	}
	return protocol.TextDocumentPositionParams{TextDocument: protocol.TextDocumentIdentifier{URI: doc.uri}, Position: p}, nil
}

// converter turns server results into guest results. For servers that
// speak UTF-16 it reads the lines it needs, once per file.
type converter struct {
	s     *server
	files map[string][][]byte
}

func (s *server) converter() *converter { return &converter{s: s, files: map[string][][]byte{}} }

// lines returns the lines of rel for column conversion, or nil when the
// columns need none or the file cannot be read.
func (c *converter) lines(rel string) [][]byte {
	if c.s.encoding == protocol.PositionEncodingKindUTF8 {
		return nil
	}
	if l, ok := c.files[rel]; ok {
		return l
	}
	c.s.docMu.Lock()
	doc := c.s.docs[rel]
	c.s.docMu.Unlock()
	var lines [][]byte
	if doc != nil {
		lines = doc.lines
	} else if f, err := c.s.rootFS.Open(filepath.FromSlash(rel)); err == nil {
		content, err := io.ReadAll(io.LimitReader(f, maxDocumentSize))
		f.Close()
		if err == nil {
			lines = splitLines(content)
		}
	}
	c.files[rel] = lines
	return lines
}

func (c *converter) pos(rel string, p protocol.Position) Position {
	var line []byte
	if lines := c.lines(rel); int(p.Line) < len(lines) {
		line = lines[p.Line]
	}
	return fromServer(p, line, c.s.encoding)
}

func (c *converter) rangeIn(rel string, r protocol.Range) Location {
	start, end := c.pos(rel, r.Start), c.pos(rel, r.End)
	return Location{Path: rel, Line: start.Line, Column: start.Column, EndLine: end.Line, EndColumn: end.Column}
}

// location converts a server location; false when it is outside the root.
func (c *converter) location(u uri.URI, r protocol.Range) (Location, bool) {
	rel, ok := c.s.relOf(u)
	if !ok {
		return Location{}, false
	}
	return c.rangeIn(rel, r), true
}

func (c *converter) documentSymbols(rel string, syms []protocol.DocumentSymbol) []Symbol {
	out := make([]Symbol, 0, len(syms))
	for _, ds := range syms {
		name := c.rangeIn(rel, ds.SelectionRange)
		full := c.rangeIn(rel, ds.Range)
		sym := Symbol{
			Name:    ds.Name,
			Kind:    symbolKindName(ds.Kind),
			Line:    name.Line,
			Column:  name.Column,
			EndLine: full.EndLine,
		}
		if ds.Detail != nil {
			sym.Detail = *ds.Detail
		}
		if full.Line != name.Line {
			sym.StartLine = full.Line
		}
		if len(ds.Children) > 0 {
			sym.Children = c.documentSymbols(rel, ds.Children)
		}
		out = append(out, sym)
	}
	return out
}

func (c *converter) symbolInformation(si protocol.SymbolInformation) (Symbol, bool) {
	loc, ok := c.location(si.Location.URI, si.Location.Range)
	if !ok {
		return Symbol{}, false
	}
	sym := Symbol{Name: si.Name, Kind: symbolKindName(si.Kind), Path: loc.Path, Line: loc.Line, Column: loc.Column, EndLine: loc.EndLine}
	if si.ContainerName != nil {
		sym.Container = *si.ContainerName
	}
	return sym, true
}

func (c *converter) workspaceSymbol(ws protocol.WorkspaceSymbol) (Symbol, bool) {
	sym := Symbol{Name: ws.Name, Kind: symbolKindName(ws.Kind)}
	if ws.ContainerName != nil {
		sym.Container = *ws.ContainerName
	}
	switch l := ws.Location.(type) {
	case *protocol.Location:
		loc, ok := c.location(l.URI, l.Range)
		if !ok {
			return Symbol{}, false
		}
		sym.Path, sym.Line, sym.Column, sym.EndLine = loc.Path, loc.Line, loc.Column, loc.EndLine
	case *protocol.LocationUriOnly:
		rel, ok := c.s.relOf(l.URI)
		if !ok {
			return Symbol{}, false
		}
		sym.Path = rel
	default:
		return Symbol{}, false
	}
	return sym, true
}

func (c *converter) definitions(res protocol.DefinitionResult) []Location {
	var out []Location
	add := func(u uri.URI, r protocol.Range) {
		if loc, ok := c.location(u, r); ok {
			out = append(out, loc)
		}
	}
	switch r := res.(type) {
	case *protocol.Location:
		if r != nil {
			add(r.URI, r.Range)
		}
	case protocol.LocationSlice:
		for _, l := range r {
			add(l.URI, l.Range)
		}
	case protocol.DefinitionLinkSlice:
		for _, l := range r {
			add(l.TargetURI, l.TargetSelectionRange)
		}
	}
	return out
}

func (c *converter) diagnostics(rel string, in []protocol.Diagnostic) []Diagnostic {
	out := make([]Diagnostic, 0, len(in))
	for _, d := range in {
		diag := Diagnostic{Location: c.rangeIn(rel, d.Range), Severity: severityName(d.Severity)}
		switch msg := d.Message.(type) {
		case protocol.String:
			diag.Message = string(msg)
		case *protocol.MarkupContent:
			diag.Message = msg.Value
		}
		if src, ok := d.Source.Get(); ok {
			diag.Source = src
		}
		switch code := d.Code.(type) {
		case protocol.String:
			diag.Code = string(code)
		case protocol.Integer:
			diag.Code = strconv.Itoa(int(code))
		}
		for _, ri := range d.RelatedInformation {
			if loc, ok := c.location(ri.Location.URI, ri.Location.Range); ok {
				diag.Related = append(diag.Related, loc)
			}
		}
		out = append(out, diag)
	}
	return out
}

// hoverText flattens hover contents into one text and its format.
func hoverText(contents protocol.HoverContents) (text, format string) {
	marked := func(ms protocol.MarkedString) string {
		switch v := ms.(type) {
		case protocol.String:
			return string(v)
		case *protocol.MarkedStringWithLanguage:
			return "```" + v.Language + "\n" + v.Value + "\n```"
		}
		return ""
	}
	switch v := contents.(type) {
	case *protocol.MarkupContent:
		return v.Value, string(v.Kind)
	case protocol.String:
		return string(v), string(protocol.MarkupKindMarkdown)
	case *protocol.MarkedStringWithLanguage:
		return marked(v), string(protocol.MarkupKindMarkdown)
	case protocol.MarkedStringSlice:
		parts := make([]string, 0, len(v))
		for _, ms := range v {
			parts = append(parts, marked(ms))
		}
		return strings.Join(parts, "\n\n"), string(protocol.MarkupKindMarkdown)
	}
	return "", string(protocol.MarkupKindPlainText)
}

func lessLocation(a, b Location) bool {
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Column < b.Column
}

func sortLocations(ls []Location) {
	sort.SliceStable(ls, func(i, j int) bool { return lessLocation(ls[i], ls[j]) })
}

func sortDiagnostics(ds []Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool { return lessLocation(ds[i].Location, ds[j].Location) })
}
