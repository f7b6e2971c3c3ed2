// Package workspacesymbols is warden's workspace_symbols tool: symbols
// anywhere in the project whose name matches a query, from the servers of
// the languages granted to the tool.
package workspacesymbols

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
	"github.com/warden-run/warden/tools-wasm/internal/lsptool"
)

// exploreMax caps the symbols shown without detail_level "full".
const exploreMax = 50

// serverMax is the most matches a server returns for one query, for the
// servers known to cap them (gopls, and clangd by default).
var serverMax = map[string]int{"go": 100, "c": 100, "cpp": 100}

// Tool is the workspace_symbols tool; tools-wasm/lsp registers it.
type Tool struct{}

type args struct {
	Query    string `json:"query"`
	Kind     string `json:"kind"`
	Language string `json:"language"`
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
	Language  string `json:"language"`
}

// Skipped is a language whose server could not be asked (not installed,
// still loading), when the query went to several.
type Skipped struct {
	Language string `json:"language"`
	Error    string `json:"error"`
}

type output struct {
	Symbols  []Match          `json:"symbols"`
	Skipped  []Skipped        `json:"skipped,omitempty"`
	Overflow *warden.Overflow `json:"overflow,omitempty"`
}

// kinds are the symbol kinds the servers report, for the kind filter.
var kinds = []string{"function", "method", "struct", "interface", "class", "field", "variable", "constant", "typeParameter", "package", "namespace", "module", "enum", "enumMember", "property", "constructor"}

func (Tool) Descriptor() tool.Descriptor {
	kindsJSON, _ := json.Marshal(kinds)
	return lsptool.Descriptor(tool.Descriptor{
		Name:  "workspace_symbols",
		Title: "Find symbols by name",
		Description: "Searches the whole project, with the servers of the languages granted to the tool (gopls, pyright, typescript-language-server, clangd, rust-analyzer), for types, classes, functions, methods, fields, variables and constants whose name matches a query " +
			"(matching is the server's, usually fuzzy and case-insensitive: in Go \"srvhandle\" finds ServerHandler). " +
			"Each match has its path, language and 1-based line and column, ready to pass to definition, references or hover. Optionally filter by kind or ask one language. " +
			"Shows up to 50 matches, best first per language (gopls and clangd find at most 100); detail_level \"full\" pages through all with offset/limit and adds the container and source line. " +
			"Use it when you know a name but not the file.",
		InputSchema: warden.WithPagination(json.RawMessage(`{"type": "object", "properties": {
			"query": {"type": "string", "minLength": 1, "description": "Name or part of a name, e.g. \"Handler\" or \"Server.Close\"."},
			"kind": {"type": "string", "enum": ` + string(kindsJSON) + `, "description": "Only symbols of this kind (Go types are \"struct\" or \"interface\"; other named types are \"class\")."},
			"language": {"type": "string", "description": "Ask only this language's server, e.g. \"python\". Default: every language granted to the tool."}
		}, "required": ["query"], "additionalProperties": false}`)),
		OutputSchema: lsptool.OutputSchema(`
			"symbols": {"type": "array", "items": {"type": "object", "properties": {
				"name": {"type": "string"}, "kind": {"type": "string"}, "path": {"type": "string"},
				"line": {"type": "integer"}, "column": {"type": "integer"}, "container": {"type": "string"},
				"endLine": {"type": "integer"}, "text": {"type": "string"}, "language": {"type": "string"}},
				"required": ["name", "kind", "path", "line", "column"]}},
			"skipped": {"type": "array", "items": {"type": "object", "properties": {"language": {"type": "string"}, "error": {"type": "string"}}}}`,
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
	langs := []string{a.Language}
	if a.Language == "" {
		granted, err := lsptool.GrantedLanguages(ctx)
		if err != nil {
			return nil, err
		}
		langs = langs[:0]
		for _, l := range granted {
			langs = append(langs, l.Name)
		}
		if len(langs) == 0 {
			return nil, warden.InvalidArguments("no language is granted to this tool (tools.grants.workspace_symbols.lsp)")
		}
	}
	var (
		syms     []found
		skipped  []Skipped
		capped   []string
		firstErr error
	)
	for _, lang := range langs {
		all, complete, err := lsptool.Fetch[lsptool.Symbol](ctx, map[string]any{"op": "workspaceSymbol", "language": lang, "query": a.Query}, "symbols")
		if err != nil {
			if len(langs) == 1 {
				return nil, err
			}
			// One server that is missing or still loading must not hide
			// the others' matches.
			if firstErr == nil {
				firstErr = err
			}
			skipped = append(skipped, Skipped{Language: lang, Error: err.Error()})
			continue
		}
		pager.Incomplete = pager.Incomplete || !complete
		if max, ok := serverMax[lang]; ok && len(all) >= max {
			capped = append(capped, fmt.Sprintf("%s's server returns at most %d matches", lang, max))
		}
		for _, s := range all {
			if a.Kind == "" || s.Kind == a.Kind {
				syms = append(syms, found{s, lang})
			}
		}
	}
	if len(skipped) == len(langs) {
		return nil, firstErr
	}
	hint := "use a more specific query"
	if a.Kind == "" {
		hint += " or a kind filter"
	}
	page, overflow, next := lsptool.Page(pager, syms, hint)
	if len(capped) > 0 && overflow != nil {
		overflow.Hint = fmt.Sprintf("%s, so there may be more; %s", strings.Join(capped, ", "), overflow.Hint)
	}
	out := output{Symbols: make([]Match, len(page)), Skipped: skipped, Overflow: overflow}
	src := lsptool.NewSources(ctx)
	lines := make([]string, 0, len(page)+1)
	for i, f := range page {
		s := f.Symbol
		m := Match{Name: s.Name, Kind: s.Kind, Path: s.Path, Line: s.Line, Column: s.Column, Language: f.language}
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
	for _, sk := range skipped {
		lines = append(lines, "# skipped "+sk.Language+": "+sk.Error)
	}
	res, err := warden.WithStructured(warden.Text(lsptool.Text(lines, overflow)), out)
	if err != nil {
		return nil, err
	}
	res.NextCursor = next
	return res, nil
}

// found is a match and the language whose server found it.
type found struct {
	lsptool.Symbol
	language string
}
