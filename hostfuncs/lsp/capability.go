package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/hostfuncs/lsp/lspwire"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/tool"
)

// ReadGate is the fs capability's read check. The LSP capability asks it
// about every path a guest names and every location it would return, so a
// tool learns nothing through a language server about a file it may not
// read.
type ReadGate interface {
	// CheckRead returns nil when call may read relPath (slash-separated,
	// relative to the project root), else the error a read would get.
	CheckRead(call *hostfuncs.Call, relPath string) error
}

// Capability serves the warden.lsp import for the project root.
type Capability struct {
	m    *Manager
	root func() string
	gate ReadGate

	mu      sync.Mutex
	lastRaw string // root() as last seen, and its absolute form
	lastAbs string
}

// MaxResults caps the locations, symbols or diagnostics of one reply; a
// reply that was cut says "truncated": true.
const MaxResults = 1000

// NewCapability returns the warden.lsp capability, querying m's servers
// and checking paths with gate. root returns the project root and is asked
// on every request, so that the root the gate judges paths against and the
// one servers run in cannot drift apart on a config reload: pass the fs
// capability's ProjectRoot.
func NewCapability(m *Manager, root func() string, gate ReadGate) (*Capability, error) {
	if m == nil || root == nil || gate == nil {
		return nil, errors.New("lsp: NewCapability needs a Manager, a root and a ReadGate")
	}
	return &Capability{m: m, root: root, gate: gate}, nil
}

// projectRoot returns the current project root, absolute and clean.
func (c *Capability) projectRoot() (string, error) {
	raw := c.root()
	c.mu.Lock()
	defer c.mu.Unlock()
	if raw != c.lastRaw || c.lastAbs == "" {
		abs, err := filepath.Abs(raw)
		if err != nil || raw == "" {
			return "", fmt.Errorf("lsp: project root %q: %v", raw, err)
		}
		c.lastRaw, c.lastAbs = raw, abs
	}
	return c.lastAbs, nil
}

// Name implements hostfuncs.Capability.
func (c *Capability) Name() string { return "lsp" }

// request is one guest request; see doc.go.
type request struct {
	Op                 string  `json:"op"`
	Language           string  `json:"language"`
	Path               string  `json:"path"`
	Line               int     `json:"line"`
	Column             int     `json:"column"`
	Query              *string `json:"query"`
	IncludeDeclaration *bool   `json:"includeDeclaration"`
	// Offset skips that many items of a list reply (documentSymbol,
	// workspaceSymbol, definition, references, diagnostics), so that a
	// tool can fetch past MaxResults.
	Offset int `json:"offset"`
}

const (
	opDocumentSymbol  = "documentSymbol"
	opWorkspaceSymbol = "workspaceSymbol"
	opDefinition      = "definition"
	opReferences      = "references"
	opHover           = "hover"
	opDiagnostics     = "diagnostics"
	opLanguages       = "languages"
)

// parseRequest decodes and checks a guest request. It does not look at
// grants or files.
func parseRequest(raw []byte) (*request, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var req request
	if err := dec.Decode(&req); err != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "lsp request: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, tool.Errorf(tool.KindInvalidArguments, "lsp request: trailing data after the JSON object")
	}
	needPath, needPos := false, false
	switch req.Op {
	case opDocumentSymbol:
		needPath = true
	case opDefinition, opHover:
		needPath, needPos = true, true
	case opReferences:
		needPath, needPos = true, true
	case opWorkspaceSymbol:
		if req.Query == nil {
			return nil, tool.Errorf(tool.KindInvalidArguments, "workspaceSymbol needs a query (it may be empty)")
		}
	case opDiagnostics:
	case opLanguages:
		if req.Language != "" || req.Path != "" || req.Offset != 0 {
			return nil, tool.Errorf(tool.KindInvalidArguments, "languages takes no language, path or offset")
		}
	case "":
		return nil, tool.Errorf(tool.KindInvalidArguments, "lsp request: op is required")
	default:
		return nil, tool.Errorf(tool.KindInvalidArguments, "lsp request: unknown op %q", req.Op)
	}
	if req.Op != opWorkspaceSymbol && req.Query != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "%s takes no query", req.Op)
	}
	if req.Offset < 0 {
		return nil, tool.Errorf(tool.KindInvalidArguments, "%s: offset must not be negative, got %d", req.Op, req.Offset)
	}
	if req.Op == opHover && req.Offset != 0 {
		return nil, tool.Errorf(tool.KindInvalidArguments, "hover takes no offset")
	}
	if req.Op != opReferences && req.IncludeDeclaration != nil {
		return nil, tool.Errorf(tool.KindInvalidArguments, "%s takes no includeDeclaration", req.Op)
	}
	if needPath && req.Path == "" {
		return nil, tool.Errorf(tool.KindInvalidArguments, "%s needs a path", req.Op)
	}
	if req.Op == opWorkspaceSymbol && req.Path != "" {
		return nil, tool.Errorf(tool.KindInvalidArguments, "workspaceSymbol takes no path")
	}
	if needPos {
		if req.Line < 1 || req.Column < 1 {
			return nil, tool.Errorf(tool.KindInvalidArguments, "%s needs line and column, both 1-based", req.Op)
		}
	} else if req.Line != 0 || req.Column != 0 {
		return nil, tool.Errorf(tool.KindInvalidArguments, "%s takes no line or column", req.Op)
	}
	if req.Path != "" {
		p, err := cleanPath(req.Path)
		if err != nil {
			return nil, err
		}
		req.Path = p
	}
	return &req, nil
}

// Replies. Lines and columns are 1-based; columns count UTF-8 bytes.
type (
	symbolsReply struct {
		Path    string   `json:"path,omitempty"`
		Symbols []Symbol `json:"symbols"`
		page
	}
	locationsReply struct {
		Locations []Location `json:"locations"`
		page
	}
	// page says where a list reply's items sit in the whole list: Total
	// items exist (after the gate's filtering), and Truncated is set when
	// some follow the ones returned (ask again with offset).
	page struct {
		Total     int  `json:"total"`
		Truncated bool `json:"truncated,omitempty"`
	}
	// languagesReply lists the languages the tool may ask about: granted
	// and configured, in grant order.
	languagesReply struct {
		Languages []lspwire.Language `json:"languages"`
	}
	hoverReply struct {
		Hover *Hover `json:"hover"`
	}
	diagnosticsReply struct {
		Diagnostics []Diagnostic `json:"diagnostics"`
		// Complete is false when the server had not yet diagnosed the
		// file's current content when the wait ran out.
		Complete bool `json:"complete"`
		page
	}
)

// Serve implements hostfuncs.Capability.
func (c *Capability) Serve(ctx context.Context, call *hostfuncs.Call, raw []byte) (any, error) {
	req, err := parseRequest(raw)
	if len(call.Grants.LSP) == 0 {
		denial := tool.Errorf(tool.KindDenied, "tool %s is not granted lsp access (config key tools.grants.%s.lsp, e.g. [go])", call.Tool, configkey.Fold(call.Tool))
		if err == nil {
			// Name the language the request is for, so that a permission
			// prompt can offer exactly that.
			if lang, ok := c.requestLanguage(req); ok {
				denial.Need = &tool.Need{Key: "lsp", Value: lang}
			}
		}
		return nil, denial
	}
	if err != nil {
		return nil, err
	}
	if req.Op == opLanguages {
		return c.languages(call), nil
	}
	lang, err := c.language(call, req)
	if err != nil {
		return nil, err
	}
	g := &gate{call: call, gate: c.gate, seen: map[string]error{}}
	if req.Path != "" {
		if err := g.check(req.Path); err != nil {
			return nil, err
		}
	}
	root, err := c.projectRoot()
	if err != nil {
		return nil, err
	}
	t := Target{Language: lang, Root: root}
	pos := Position{Line: req.Line, Column: req.Column}

	switch req.Op {
	case opDocumentSymbol:
		syms, err := c.m.DocumentSymbols(ctx, t, req.Path)
		if err != nil {
			return nil, err
		}
		syms, pg := window(syms, req.Offset)
		return symbolsReply{Path: req.Path, Symbols: syms, page: pg}, nil

	case opWorkspaceSymbol:
		syms, err := c.m.WorkspaceSymbols(ctx, t, *req.Query)
		if err != nil {
			return nil, err
		}
		syms = slices.DeleteFunc(syms, func(s Symbol) bool { return !g.allows(s.Path) })
		syms, pg := window(syms, req.Offset)
		return symbolsReply{Symbols: syms, page: pg}, nil

	case opDefinition:
		locs, err := c.m.Definition(ctx, t, req.Path, pos)
		if err != nil {
			return nil, err
		}
		locs, pg := window(g.locations(locs), req.Offset)
		return locationsReply{Locations: locs, page: pg}, nil

	case opReferences:
		include := req.IncludeDeclaration != nil && *req.IncludeDeclaration
		locs, err := c.m.References(ctx, t, req.Path, pos, include)
		if err != nil {
			return nil, err
		}
		locs, pg := window(g.locations(locs), req.Offset)
		return locationsReply{Locations: locs, page: pg}, nil

	case opHover:
		// Hover text is mostly the definition's signature and doc
		// comment: withhold it when the definition is in a file the tool
		// may not read. Definitions outside the project (the standard
		// library, dependencies) are not project files and don't.
		defs, err := c.m.Definition(ctx, t, req.Path, pos)
		if err != nil {
			return nil, err
		}
		for _, d := range defs {
			if !g.allows(d.Path) {
				return hoverReply{}, nil
			}
		}
		h, err := c.m.Hover(ctx, t, req.Path, pos)
		if err != nil {
			return nil, err
		}
		return hoverReply{Hover: h}, nil

	case opDiagnostics:
		diags, complete, err := c.m.Diagnostics(ctx, t, req.Path)
		if err != nil {
			return nil, err
		}
		diags = slices.DeleteFunc(diags, func(d Diagnostic) bool { return !g.allows(d.Path) })
		for i := range diags {
			diags[i].Related = g.locations(diags[i].Related)
		}
		diags, pg := window(diags, req.Offset)
		return diagnosticsReply{Diagnostics: diags, Complete: complete, page: pg}, nil
	}
	return nil, tool.Errorf(tool.KindInvalidArguments, "lsp request: unknown op %q", req.Op)
}

// languages answers the languages op: what a tool walking a directory
// needs to pick the files it can ask about, without starting any server.
func (c *Capability) languages(call *hostfuncs.Call) languagesReply {
	out := languagesReply{Languages: []lspwire.Language{}}
	for _, name := range call.Grants.LSP {
		if l, ok := c.m.cfg.Languages[name]; ok {
			out.Languages = append(out.Languages, lspwire.Language{Name: name, Extensions: slices.Clone(l.Extensions)})
		}
	}
	return out
}

// language picks the request's language and checks it is granted.
func (c *Capability) language(call *hostfuncs.Call, req *request) (string, error) {
	lang := req.Language
	switch {
	case lang != "":
	case req.Path != "":
		var ok bool
		if lang, ok = c.m.LanguageFor(req.Path); !ok {
			return "", tool.Errorf(tool.KindInvalidArguments, "no configured language claims %s; pass language", req.Path)
		}
		if !slices.Contains(call.Grants.LSP, lang) {
			// A .h file (c's) is served to a tool granted only cpp by its
			// cpp server: both run clangd.
			for _, granted := range call.Grants.LSP {
				if c.m.cfg.serves(granted, req.Path) {
					lang = granted
					break
				}
			}
		}
	case len(call.Grants.LSP) == 1:
		lang = call.Grants.LSP[0]
	default:
		return "", tool.Errorf(tool.KindInvalidArguments, "%s needs a language (granted: %s)", req.Op, strings.Join(call.Grants.LSP, ", "))
	}
	if !slices.Contains(call.Grants.LSP, lang) {
		return "", tool.DeniedFor(tool.Need{Key: "lsp", Value: lang},
			"tool %s is not granted lsp access to %s (config key tools.grants.%s.lsp: add %s)", call.Tool, lang, configkey.Fold(call.Tool), lang)
	}
	return lang, nil
}

// requestLanguage is the language a request names or its path's extension
// claims, when it can be told without a grant.
func (c *Capability) requestLanguage(req *request) (string, bool) {
	if req.Language != "" {
		return req.Language, ValidateLanguage(req.Language) == nil
	}
	if req.Path != "" {
		return c.m.LanguageFor(req.Path)
	}
	return "", false
}

// gate asks the ReadGate once per path per request.
type gate struct {
	call *hostfuncs.Call
	gate ReadGate
	seen map[string]error
}

// check returns the gate's error for rel as a denial.
func (g *gate) check(rel string) error {
	err, ok := g.seen[rel]
	if !ok {
		err = g.gate.CheckRead(g.call, rel)
		if err != nil {
			var te *tool.Error
			if !errors.As(err, &te) {
				err = tool.Errorf(tool.KindDenied, "%v", err)
			}
		}
		g.seen[rel] = err
	}
	return err
}

func (g *gate) allows(rel string) bool { return g.check(rel) == nil }

// locations drops the locations the tool may not read.
func (g *gate) locations(locs []Location) []Location {
	return slices.DeleteFunc(locs, func(l Location) bool { return !g.allows(l.Path) })
}

// window returns at most MaxResults items of s from offset on (never nil,
// so that an empty list encodes as []) and where they sit in s.
func window[T any](s []T, offset int) ([]T, page) {
	pg := page{Total: len(s)}
	s = s[min(offset, len(s)):]
	if len(s) > MaxResults {
		s, pg.Truncated = s[:MaxResults], true
	}
	return nonNil(s), pg
}

// nonNil makes empty results encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
