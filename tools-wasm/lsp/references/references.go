// Package references is warden's references tool: every place in the project
// that uses the identifier at a position, from the language's server.
package references

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
	"github.com/warden-run/warden/tools-wasm/internal/lsptool"
)

// exploreMax caps the references shown without detail_level "full".
const exploreMax = 100

// Tool is the references tool; tools-wasm/lsp registers it.
type Tool struct{}

type args struct {
	lsptool.At
	IncludeDeclaration bool `json:"include_declaration"`
}

// query identifies the list a cursor continues: the position, resolved to
// a column, whether it was given as a column or a name.
type query struct {
	lsptool.Spot
	IncludeDeclaration bool `json:"decl,omitempty"`
}

// Reference is one use, with the text of its line.
type Reference struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"endLine,omitempty"`
	EndColumn int    `json:"endColumn,omitempty"`
	Text      string `json:"text,omitempty"`
}

// FileCount says how many references one file holds; exploring output
// lists them when it had to cut, so the model sees where the rest are.
type FileCount struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
}

type output struct {
	References []Reference      `json:"references"`
	Files      []FileCount      `json:"files,omitempty"`
	Overflow   *warden.Overflow `json:"overflow,omitempty"`
}

func (Tool) Descriptor() tool.Descriptor {
	return lsptool.Descriptor(tool.Descriptor{
		Name:  "references",
		Title: "Find references",
		Description: "Lists every place in the project that refers to the identifier (function, method, type, class, field, variable, constant, module) at a position, using the language's own server (gopls, pyright, typescript-language-server, clangd, rust-analyzer) — " +
			"exact semantic matches, unlike a text search, so methods of the same name on other types are not included. " +
			"Each reference shows path:line:column and the source line. Give the position as 1-based line and column, or line and the identifier's name. " +
			"By default returns up to 100 references (and a per-file count when there are more); use detail_level \"full\" with offset/limit to page through all. " +
			"Only files you may read are searched; the standard library and dependencies are not included.",
		InputSchema: warden.WithPagination(json.RawMessage(`{"type": "object", "properties": {` + lsptool.PositionProperties + `,
			"include_declaration": {"type": "boolean", "description": "Also list the declaration itself (default false: uses only)."}
		}, ` + lsptool.PositionRequired + `, "additionalProperties": false}`)),
		OutputSchema: lsptool.OutputSchema(`
			"references": {"type": "array", "items": {"type": "object", "properties": {
				"path": {"type": "string"}, "line": {"type": "integer"}, "column": {"type": "integer"},
				"endLine": {"type": "integer"}, "endColumn": {"type": "integer"}, "text": {"type": "string"}},
				"required": ["path", "line", "column"]}},
			"files": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "count": {"type": "integer"}}}}`,
			"references"),
		Tags: []string{"references", "usages"},
	})
}

func (Tool) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[args](raw)
	if err != nil {
		return nil, err
	}
	src := lsptool.NewSources(ctx)
	at, err := a.Resolve(src)
	if err != nil {
		return nil, err
	}
	q := query{Spot: at, IncludeDeclaration: a.IncludeDeclaration}
	pager, err := lsptool.NewPager(ctx, raw, q, exploreMax)
	if err != nil {
		return nil, err
	}
	pager.Unit = "references"
	req := at.Request("references")
	req["includeDeclaration"] = a.IncludeDeclaration
	locs, complete, err := lsptool.Fetch[lsptool.Location](ctx, req, "locations")
	if err != nil {
		return nil, err
	}
	pager.Incomplete = !complete
	page, overflow, next := lsptool.Page(pager, locs, "ask about a narrower identifier")
	out := output{References: make([]Reference, len(page)), Overflow: overflow}
	lines := make([]string, 0, len(page)+1)
	for i, l := range page {
		r := Reference{Path: l.Path, Line: l.Line, Column: l.Column, Text: src.Line(l.Path, l.Line)}
		if pager.Mode == warden.Focused {
			r.EndLine, r.EndColumn = l.EndLine, l.EndColumn
		}
		out.References[i] = r
		lines = append(lines, lsptool.Pos(r.Path, r.Line, r.Column)+": "+r.Text)
	}
	if overflow != nil && pager.Mode == warden.Exploring {
		// Where the references left out are: in the text too, since a
		// model may read only the text.
		out.Files = countByFile(locs)
		lines = append(lines, fmt.Sprintf("# references per file (%d files):", len(out.Files)))
		for _, f := range out.Files {
			lines = append(lines, fmt.Sprintf("#   %s: %d", f.Path, f.Count))
		}
	}
	if len(locs) == 0 {
		lines = append(lines, "no references")
	}
	res, err := warden.WithStructured(warden.Text(lsptool.Text(lines, overflow)), out)
	if err != nil {
		return nil, err
	}
	res.NextCursor = next
	return res, nil
}

// countByFile counts locations per file, most first.
func countByFile(locs []lsptool.Location) []FileCount {
	index := map[string]int{}
	var counts []FileCount
	for _, l := range locs {
		i, ok := index[l.Path]
		if !ok {
			i = len(counts)
			index[l.Path] = i
			counts = append(counts, FileCount{Path: l.Path})
		}
		counts[i].Count++
	}
	slices.SortStableFunc(counts, func(a, b FileCount) int { return b.Count - a.Count })
	return counts
}
