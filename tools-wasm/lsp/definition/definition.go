// Package definition is warden's definition tool: where the identifier at
// a position is defined, from the language's server.
package definition

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
	"github.com/warden-run/warden/tools-wasm/internal/lsptool"
)

const (
	// exploreMax caps the definitions shown without detail_level "full"
	// (Go identifiers have one; an embedded field or a type switch can
	// have a few).
	exploreMax = 20
	// maxSourceLines caps the source of one definition in focused mode.
	maxSourceLines = 200
)

// Tool is the definition tool; tools-wasm/lsp registers it.
type Tool struct{}

// Definition is where an identifier is defined, with the text of that
// line; in focused mode also the declaration it names and its source.
type Definition struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"endLine"`
	EndColumn int    `json:"endColumn"`
	Text      string `json:"text,omitempty"`
	// Symbol is the declaration whose name is at this location.
	Symbol *Symbol `json:"symbol,omitempty"`
	// Source is the declaration's text (lines Symbol.StartLine..EndLine),
	// cut at maxSourceLines lines with SourceTruncated set.
	Source          string `json:"source,omitempty"`
	SourceTruncated bool   `json:"source_truncated,omitempty"`
}

// Symbol names the declaration at a definition.
type Symbol struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Detail    string `json:"detail,omitempty"`
	StartLine int    `json:"startLine"`
	EndLine   int    `json:"endLine"`
}

type output struct {
	Definitions []Definition     `json:"definitions"`
	Overflow    *warden.Overflow `json:"overflow,omitempty"`
}

func (Tool) Descriptor() tool.Descriptor {
	return lsptool.Descriptor(tool.Descriptor{
		Name:  "definition",
		Title: "Go to definition",
		Description: "Finds where the identifier at a position is defined, using the language's own server (gopls, pyright, typescript-language-server, clangd, rust-analyzer; it follows imports, methods and aliases exactly). " +
			"Returns path:line:column and the line of the definition; detail_level \"full\" also returns the whole declaration's source (up to 200 lines) and its kind and signature. " +
			"Give the position as 1-based line and column, or line and the identifier's name. " +
			"Definitions in the standard library, dependencies or files you may not read are not shown. Works for the languages granted to the tool (Go, Python, TypeScript, JavaScript, C, C++, Rust).",
		InputSchema: warden.WithPagination(json.RawMessage(`{"type": "object", "properties": {` + lsptool.PositionProperties + `
		}, ` + lsptool.PositionRequired + `, "additionalProperties": false}`)),
		OutputSchema: lsptool.OutputSchema(`
			"definitions": {"type": "array", "items": {"type": "object", "properties": {
				"path": {"type": "string"}, "line": {"type": "integer"}, "column": {"type": "integer"},
				"endLine": {"type": "integer"}, "endColumn": {"type": "integer"}, "text": {"type": "string"},
				"symbol": {"type": "object", "properties": {"name": {"type": "string"}, "kind": {"type": "string"},
					"detail": {"type": "string"}, "startLine": {"type": "integer"}, "endLine": {"type": "integer"}}},
				"source": {"type": "string"}, "source_truncated": {"type": "boolean"}},
				"required": ["path", "line", "column", "endLine", "endColumn"]}}`,
			"definitions"),
		Tags: []string{"definition", "navigation"},
	})
}

func (Tool) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[lsptool.At](raw)
	if err != nil {
		return nil, err
	}
	src := lsptool.NewSources(ctx)
	at, err := a.Resolve(src)
	if err != nil {
		return nil, err
	}
	pager, err := lsptool.NewPager(ctx, raw, at, exploreMax)
	if err != nil {
		return nil, err
	}
	pager.Unit = "definitions"
	locs, complete, err := lsptool.Fetch[lsptool.Location](ctx, at.Request("definition"), "locations")
	if err != nil {
		return nil, err
	}
	pager.Incomplete = !complete
	page, overflow, next := lsptool.Page(pager, locs, "the identifier has several definitions")
	out := output{Definitions: make([]Definition, len(page)), Overflow: overflow}
	var lines []string
	for i, l := range page {
		d := Definition{Path: l.Path, Line: l.Line, Column: l.Column, EndLine: l.EndLine, EndColumn: l.EndColumn, Text: src.Line(l.Path, l.Line)}
		lines = append(lines, lsptool.Pos(d.Path, d.Line, d.Column)+": "+d.Text)
		if pager.Mode == warden.Focused {
			declaration(ctx, src, &d)
			if d.Symbol != nil {
				lines = append(lines, fmt.Sprintf("%s %s, lines %d-%d:", d.Symbol.Kind, d.Symbol.Name, d.Symbol.StartLine, d.Symbol.EndLine))
			}
			if d.Source != "" {
				lines = append(lines, d.Source)
			}
			if d.SourceTruncated {
				lines = append(lines, fmt.Sprintf("# source cut at %d lines; read the file for the rest", maxSourceLines))
			}
		}
		out.Definitions[i] = d
	}
	if len(locs) == 0 {
		lines = append(lines, fmt.Sprintf("no definition found in the project for the identifier at %s "+
			"(it may be a builtin, in the standard library or a dependency, or in a file you may not read)", at))
	}
	res, err := warden.WithStructured(warden.Text(lsptool.Text(lines, overflow)), out)
	if err != nil {
		return nil, err
	}
	res.NextCursor = next
	return res, nil
}

// declaration fills in the declaration whose name d points at, and its
// source. Failing to find it leaves d as it is: the location is the answer.
func declaration(ctx *warden.Context, src *lsptool.Sources, d *Definition) {
	syms, _, err := lsptool.DocumentSymbols(ctx, d.Path)
	if err != nil {
		return
	}
	s := find(syms, d.Line, d.Column)
	if s == nil {
		return
	}
	start := s.StartLine
	if start == 0 {
		start = s.Line
	}
	d.Symbol = &Symbol{Name: s.Name, Kind: s.Kind, Detail: s.Detail, StartLine: start, EndLine: s.EndLine}
	lines, err := src.Lines(d.Path)
	if err != nil || start < 1 || s.EndLine < start || s.EndLine > len(lines) {
		return
	}
	end := s.EndLine
	if end-start+1 > maxSourceLines {
		end, d.SourceTruncated = start+maxSourceLines-1, true
	}
	d.Source = strings.Join(lines[start-1:end], "\n")
}

// find returns the symbol, at any depth, whose name starts at line:column.
func find(syms []lsptool.Symbol, line, column int) *lsptool.Symbol {
	for i := range syms {
		if syms[i].Line == line && syms[i].Column == column {
			return &syms[i]
		}
		if s := find(syms[i].Children, line, column); s != nil {
			return s
		}
	}
	return nil
}
