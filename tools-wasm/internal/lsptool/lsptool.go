// Package lsptool is what warden's language tools (symbols, definition,
// references, hover, workspace_symbols) share: the warden.lsp and warden.fs
// request and reply shapes, paging with continuation cursors, reading
// source lines, and the pieces of their descriptors.
//
// It lives under tools-wasm/internal so that cmd/build-tools, which builds
// every folder of tools-wasm/ holding Go files, does not take it for a tool.
package lsptool

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/hostfuncs/lsp/lspwire"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/tool"
)

// Languages are the languages the tools request: every language warden
// serves without config (hostfuncs/lsp.DefaultLanguages). Config grants the
// ones a project needs; the host picks the server from a file's extension.
var Languages = limits.DefaultLSPLanguages

// The reply shapes of warden.lsp, shared with the host.
type (
	Location = lspwire.Location
	Symbol   = lspwire.Symbol
	Hover    = lspwire.Hover
	Language = lspwire.Language
)

// GrantedLanguages returns the languages the calling tool may ask about
// (the languages op): its granted, configured languages, in grant order.
func GrantedLanguages(ctx *warden.Context) ([]Language, error) {
	var reply struct {
		Languages []Language `json:"languages"`
	}
	if err := LSP(ctx, map[string]any{"op": "languages"}, &reply); err != nil {
		return nil, err
	}
	return reply.Languages, nil
}

// LSP sends one warden.lsp request and decodes its result into reply.
func LSP(ctx *warden.Context, request map[string]any, reply any) error {
	return warden.Host(ctx, "lsp", request, reply)
}

// MaxFetched bounds the items a tool gathers from warden.lsp across pages
// of a list (the capability returns at most 1000 per request): a list
// longer than this is reported as "at least MaxFetched", never as complete.
const MaxFetched = 20000

// Fetch asks warden.lsp for the whole list request names, whose items are
// the reply's field ("locations" or "symbols"), page by page past the
// capability's cap, up to MaxFetched items. complete is false when the
// server has more: the tool must then say its total is a lower bound.
func Fetch[T any](ctx *warden.Context, request map[string]any, field string) (items []T, complete bool, err error) {
	req := maps.Clone(request)
	for {
		req["offset"] = len(items)
		var reply map[string]json.RawMessage
		if err := LSP(ctx, req, &reply); err != nil {
			return nil, false, err
		}
		var page []T
		if err := json.Unmarshal(reply[field], &page); err != nil {
			return nil, false, warden.Failed("decode lsp %s: %v", field, err)
		}
		var truncated bool
		if raw, ok := reply["truncated"]; ok {
			if err := json.Unmarshal(raw, &truncated); err != nil {
				return nil, false, warden.Failed("decode lsp truncated: %v", err)
			}
		}
		items = append(items, page...)
		switch {
		case !truncated:
			return items, true, nil
		case len(page) == 0 || len(items) >= MaxFetched:
			return items, false, nil
		}
	}
}

// Request is a warden.lsp request naming a position.
func PositionRequest(op, path string, line, column int) map[string]any {
	return map[string]any{"op": op, "path": path, "line": line, "column": column}
}

// DocumentSymbols returns the outline of one file; complete is false when
// it has more top-level symbols than MaxFetched.
func DocumentSymbols(ctx *warden.Context, path string) (syms []Symbol, complete bool, err error) {
	return Fetch[Symbol](ctx, map[string]any{"op": "documentSymbol", "path": path}, "symbols")
}

// Overflow is the overflow object of the tools' output schemas.
const overflowSchema = `{"type": "object", "description": "Present when results were left out: how many are shown, how many exist, and how to see the rest.",
	"properties": {"shown": {"type": "integer"}, "total": {"type": "integer"}, "hint": {"type": "string"},
		"at_least": {"type": "boolean", "description": "total is a lower bound: there are more than could be fetched."},
		"next_offset": {"type": "integer", "description": "With detail_level \"full\": the offset of the next page."}},
	"required": ["shown", "total", "hint"]}`

// OutputSchema returns an object schema with the given properties (a JSON
// object's members, without braces) plus "overflow", requiring required.
func OutputSchema(properties string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type": "object", "properties": {` + properties +
		`, "overflow": ` + overflowSchema + `}, "required": ` + string(req) + `}`)
}

// PositionProperties are the input-schema properties of a position in a
// file; the schema should require path and line, and column or name.
const PositionProperties = `
	"path": {"type": "string", "description": "Project-relative file path, e.g. \"pkg/server/handler.go\" or \"src/app.py\"."},
	"line": {"type": "integer", "minimum": 1, "description": "1-based line number."},
	"column": {"type": "integer", "minimum": 1, "description": "1-based column in bytes of the line's UTF-8 text, as the symbols tool reports it. Omit it and give name instead if unsure."},
	"name": {"type": "string", "description": "The identifier at that line (e.g. \"ServeHTTP\"); used to find the column when column is omitted. Its first whole-word occurrence on the line is taken."}`

// PositionRequired is the part of an input schema that asks for line and
// either column or name.
const PositionRequired = `"required": ["path", "line"], "anyOf": [{"required": ["column"]}, {"required": ["name"]}]`

var yes = true

// Descriptor fills in what the five tools' descriptors have in common:
// read-only and idempotent, paginated, asking for the language servers
// and for reading the project (requests only: config grants).
func Descriptor(d tool.Descriptor) tool.Descriptor {
	d.Annotations = &tool.Annotations{ReadOnlyHint: &yes, IdempotentHint: &yes}
	d.Paginates = true
	d.Capabilities = tool.Capabilities{LSP: slices.Clone(Languages), FS: tool.FSAccess{Read: []string{"."}}}
	d.Version = "1.0.0"
	d.Category = "code"
	d.Tags = append([]string{"lsp", "code-navigation"}, d.Tags...)
	return d
}

// Text joins rendered lines and, when o is set, appends the overflow as a
// final "# overflow:" line, so that a model reading only the text sees it.
func Text(lines []string, o *warden.Overflow) string {
	text := strings.Join(lines, "\n")
	if o != nil {
		b, _ := json.Marshal(o)
		if text != "" {
			text += "\n"
		}
		text += "# overflow: " + string(b)
	}
	return text
}

// Pos renders a position as path:line:column.
func Pos(path string, line, column int) string {
	return fmt.Sprintf("%s:%d:%d", path, line, column)
}

// At is the position argument of the position tools (definition,
// references, hover): a file, a 1-based line, and a column or the name to
// find on that line.
type At struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Name   string `json:"name"`
}

// Spot is a resolved position: what a position tool queries, and what its
// cursor remembers.
type Spot struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// Resolve pins a down to a column: Column when given, else the first
// whole-word match of Name on the line.
func (a At) Resolve(s *Sources) (Spot, error) {
	col, err := ResolveColumn(s, a.Path, a.Line, a.Column, a.Name)
	if err != nil {
		return Spot{}, err
	}
	return Spot{Path: a.Path, Line: a.Line, Column: col}, nil
}

// Request is the warden.lsp request for op at sp.
func (sp Spot) Request(op string) map[string]any {
	return PositionRequest(op, sp.Path, sp.Line, sp.Column)
}

// String is sp as path:line:column.
func (sp Spot) String() string { return Pos(sp.Path, sp.Line, sp.Column) }
