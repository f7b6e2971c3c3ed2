// Package workspacesymbols is warden's workspace_symbols tool: Go symbols
// anywhere in the project whose name matches a query, from gopls.
package workspacesymbols

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
	"github.com/warden-run/warden/tools-wasm/internal/lsptool"
)

// exploreMax caps the symbols shown without detail_level "full".
const exploreMax = 50

// goplsMax is the most matches gopls returns for one query.
const goplsMax = 100

// Tool is the workspace_symbols tool; tools-wasm/lsp registers it.
type Tool struct{}

type args struct {
	Query string `json:"query"`
	Kind  string `json:"kind"`
}

// Match is one symbol found.
type Match struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Container string `json:"container,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
	Text      string `json:"text,omitempty"`
}

type output struct {
	Symbols  []Match          `json:"symbols"`
	Overflow *warden.Overflow `json:"overflow,omitempty"`
}

// kinds are the symbol kinds gopls reports for Go, for the kind filter.
var kinds = []string{"function", "method", "struct", "interface", "class", "field", "variable", "constant", "typeParameter", "package", "namespace", "module", "enum", "enumMember"}

func (Tool) Descriptor() tool.Descriptor {
	kindsJSON, _ := json.Marshal(kinds)
	return lsptool.Descriptor(tool.Descriptor{
		Name:  "workspace_symbols",
		Title: "Find symbols by name (Go)",
		Description: "Searches the whole Go project, with gopls, for types, functions, methods, fields, variables and constants whose name matches a query " +
			"(fuzzy, case-insensitive: \"srvhandle\" finds ServerHandler; \"Server.Close\" finds the Close method of Server). " +
			"Each match has its path and 1-based line and column, ready to pass to definition, references or hover. Optionally filter by kind. " +
			"Shows up to 50 matches, best first (gopls finds at most 100); detail_level \"full\" pages through all with offset/limit and adds the package and source line. " +
			"Use it when you know a name but not the file.",
		InputSchema: warden.WithPagination(json.RawMessage(`{"type": "object", "properties": {
			"query": {"type": "string", "minLength": 1, "description": "Name or part of a name, e.g. \"Handler\" or \"Server.Close\"."},
			"kind": {"type": "string", "enum": ` + string(kindsJSON) + `, "description": "Only symbols of this kind (Go types are \"struct\" or \"interface\"; other named types are \"class\")."}
		}, "required": ["query"], "additionalProperties": false}`)),
		OutputSchema: lsptool.OutputSchema(`
			"symbols": {"type": "array", "items": {"type": "object", "properties": {
				"name": {"type": "string"}, "kind": {"type": "string"}, "path": {"type": "string"},
				"line": {"type": "integer"}, "column": {"type": "integer"}, "container": {"type": "string"},
				"endLine": {"type": "integer"}, "text": {"type": "string"}},
				"required": ["name", "kind", "path", "line", "column"]}}`,
			"symbols"),
		Tags: []string{"search", "symbols"},
	})
}

func (Tool) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[args](raw)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, warden.InvalidArguments(`argument "query": must not be empty; to list a file's or a directory's symbols use the symbols tool`)
	}
	pager, err := lsptool.NewPager(ctx, raw, a, exploreMax)
	if err != nil {
		return nil, err
	}
	pager.Unit = "symbols"
	all, complete, err := lsptool.Fetch[lsptool.Symbol](ctx, map[string]any{"op": "workspaceSymbol", "language": lsptool.Language, "query": a.Query}, "symbols")
	if err != nil {
		return nil, err
	}
	pager.Incomplete = !complete
	syms := all
	if a.Kind != "" {
		syms = slices.DeleteFunc(syms, func(s lsptool.Symbol) bool { return s.Kind != a.Kind })
	}
	hint := "use a more specific query"
	if a.Kind == "" {
		hint += " or a kind filter"
	}
	page, overflow, next := lsptool.Page(pager, syms, hint)
	if len(all) >= goplsMax && overflow != nil {
		overflow.Hint = fmt.Sprintf("gopls returns at most %d matches, so there may be more; %s", goplsMax, overflow.Hint)
	}
	out := output{Symbols: make([]Match, len(page)), Overflow: overflow}
	src := lsptool.NewSources(ctx)
	lines := make([]string, 0, len(page)+1)
	for i, s := range page {
		m := Match{Name: s.Name, Kind: s.Kind, Path: s.Path, Line: s.Line, Column: s.Column}
		line := fmt.Sprintf("%s %s %s", s.Kind, s.Name, lsptool.Pos(s.Path, s.Line, s.Column))
		if pager.Mode == warden.Focused {
			m.Container, m.EndLine, m.Text = s.Container, s.EndLine, src.Line(s.Path, s.Line)
			line += " (" + m.Container + "): " + m.Text
		}
		out.Symbols[i] = m
		lines = append(lines, line)
	}
	if len(syms) == 0 {
		lines = append(lines, fmt.Sprintf("no symbols match %q", a.Query))
	}
	res, err := warden.WithStructured(warden.Text(lsptool.Text(lines, overflow)), out)
	if err != nil {
		return nil, err
	}
	res.NextCursor = next
	return res, nil
}
