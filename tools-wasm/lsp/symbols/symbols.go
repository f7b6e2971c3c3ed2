// Package symbols is warden's symbols tool: the outline of a source file,
// or of every file of a granted language in a directory, from the
// language's server.
package symbols

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
	"github.com/warden-run/warden/tools-wasm/internal/lsptool"
)

const (
	// exploreMax caps the symbols shown without detail_level "full".
	exploreMax = 200
	// maxFiles caps the files one call outlines; a directory with more is
	// cut, and the result says so.
	maxFiles = 500
)

// Tool is the symbols tool; tools-wasm/lsp registers it.
type Tool struct{}

type args struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

// query identifies the list a cursor continues.
type query struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// Entry is one symbol of the outline, flattened: Container names the
// enclosing symbol of a member (a struct's field, an interface's method).
type Entry struct {
	Path      string `json:"path"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	Container string `json:"container,omitempty"`
	Detail    string `json:"detail,omitempty"`
	StartLine int    `json:"startLine,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
	// Members counts the children left out in exploring mode.
	Members int `json:"members,omitempty"`
	depth   int
}

// Skipped is a file of a directory that could not be outlined.
type Skipped struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

type output struct {
	Path  string `json:"path"`
	Files int    `json:"files"`
	// FilesTruncated says the directory held more than maxFiles source
	// files.
	FilesTruncated bool             `json:"files_truncated,omitempty"`
	Symbols        []Entry          `json:"symbols"`
	Skipped        []Skipped        `json:"skipped,omitempty"`
	Overflow       *warden.Overflow `json:"overflow,omitempty"`
}

func (Tool) Descriptor() tool.Descriptor {
	return lsptool.Descriptor(tool.Descriptor{
		Name:  "symbols",
		Title: "Symbols outline",
		Description: "Outlines code with the language's own server (gopls, pyright, typescript-language-server, clangd, rust-analyzer): the types, classes, functions, methods, variables and constants of one source file, or of every file in a directory of the languages granted to the tool (recursive: true to include subdirectories). " +
			"Each symbol comes with its 1-based line and column, ready to pass to definition, references or hover. " +
			"By default shows top-level symbols only (with a count of their members), up to 200; " +
			"detail_level \"full\" adds members (fields, methods), signatures and line ranges, paged with offset/limit. " +
			"Use it to see what a file or package contains before reading it.",
		InputSchema: warden.WithPagination(json.RawMessage(`{"type": "object", "properties": {
			"path": {"type": "string", "description": "Project-relative path of a source file or a directory, e.g. \"internal/server\", \"src/app.py\" or \".\"."},
			"recursive": {"type": "boolean", "description": "For a directory: include its subdirectories (not hidden ones, testdata, vendor, node_modules or __pycache__). Default false."}
		}, "required": ["path"], "additionalProperties": false}`)),
		OutputSchema: lsptool.OutputSchema(`
			"path": {"type": "string"},
			"files": {"type": "integer", "description": "Source files outlined."},
			"files_truncated": {"type": "boolean"},
			"symbols": {"type": "array", "items": {"type": "object", "properties": {
				"path": {"type": "string"}, "name": {"type": "string"}, "kind": {"type": "string"},
				"line": {"type": "integer"}, "column": {"type": "integer"}, "container": {"type": "string"},
				"detail": {"type": "string"}, "startLine": {"type": "integer"}, "endLine": {"type": "integer"},
				"members": {"type": "integer"}},
				"required": ["path", "name", "kind", "line", "column"]}},
			"skipped": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "error": {"type": "string"}}}}`,
			"path", "files", "symbols"),
		Tags: []string{"outline", "symbols"},
	})
}

func (Tool) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[args](raw)
	if err != nil {
		return nil, err
	}
	pager, err := lsptool.NewPager(ctx, raw, query{Path: a.Path, Recursive: a.Recursive}, exploreMax)
	if err != nil {
		return nil, err
	}
	pager.Unit = "symbols"
	langs, err := lsptool.GrantedLanguages(ctx)
	if err != nil {
		return nil, err
	}
	files, cut, isDir, err := sourceFiles(ctx, a.Path, a.Recursive, langs)
	if err != nil {
		return nil, err
	}
	out := output{Path: a.Path, Files: len(files), FilesTruncated: cut}
	var all []Entry
	for i, f := range files {
		if isDir {
			ctx.Progress(float64(i+1), float64(len(files)), f)
		}
		syms, complete, err := lsptool.DocumentSymbols(ctx, f)
		if !complete && err == nil {
			pager.Incomplete = true
		}
		if err != nil {
			if !isDir {
				return nil, err
			}
			// One file a server cannot outline must not hide the others.
			out.Skipped = append(out.Skipped, Skipped{Path: f, Error: err.Error()})
			continue
		}
		all = flatten(all, f, "", 0, syms, pager.Mode == warden.Focused)
	}
	page, overflow, next := lsptool.Page(pager, all, "outline a single file or a subdirectory")
	out.Symbols, out.Overflow = nonNil(page), overflow
	res, err := warden.WithStructured(warden.Text(render(out, isDir, pager.Mode)), out)
	if err != nil {
		return nil, err
	}
	res.NextCursor = next
	return res, nil
}

// flatten appends syms (of file) to dst in document order. Exploring mode
// keeps the top level and counts members; focused mode keeps every level.
func flatten(dst []Entry, file, container string, depth int, syms []lsptool.Symbol, focused bool) []Entry {
	for _, s := range syms {
		e := Entry{Path: file, Name: s.Name, Kind: s.Kind, Line: s.Line, Column: s.Column, Container: container, depth: depth}
		if focused {
			e.Detail, e.StartLine, e.EndLine = s.Detail, s.StartLine, s.EndLine
			dst = append(dst, e)
			dst = flatten(dst, file, s.Name, depth+1, s.Children, focused)
			continue
		}
		e.Members = len(s.Children)
		dst = append(dst, e)
	}
	return dst
}

// sourceFiles returns the source files path names: itself when it is a
// file of one of langs, its files of langs (sorted, at most maxFiles) when
// it is a directory.
func sourceFiles(ctx *warden.Context, p string, recursive bool, langs []lsptool.Language) (files []string, cut, isDir bool, err error) {
	isSource := func(name string) bool {
		return slices.ContainsFunc(langs, func(l lsptool.Language) bool { return slices.Contains(l.Extensions, path.Ext(name)) })
	}
	var st struct {
		Path string `json:"path"`
		Type string `json:"type"`
	}
	if err := warden.Host(ctx, "fs", map[string]any{"op": "stat", "path": p}, &st); err != nil {
		return nil, false, false, err
	}
	if st.Type != "dir" {
		if !isSource(p) {
			return nil, false, false, warden.InvalidArguments("%s is not a directory or a file of a language granted to this tool (%s)", p, describe(langs))
		}
		return []string{p}, false, false, nil
	}
	dirs := []string{p}
	for len(dirs) > 0 && len(files) <= maxFiles {
		dir := dirs[0]
		dirs = dirs[1:]
		var list struct {
			Entries []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"entries"`
		}
		if err := warden.Host(ctx, "fs", map[string]any{"op": "list", "path": dir}, &list); err != nil {
			if dir == p {
				return nil, false, true, err
			}
			continue // a subdirectory that cannot be listed is left out
		}
		for _, e := range list.Entries {
			child := path.Join(dir, e.Name)
			switch {
			case e.Type == "file" && isSource(e.Name):
				files = append(files, child)
			case e.Type == "dir" && recursive && !skipDir(e.Name):
				dirs = append(dirs, child)
			}
		}
	}
	slices.Sort(files)
	if len(files) > maxFiles {
		files, cut = files[:maxFiles], true
	}
	return files, cut, true, nil
}

// skipDir reports directories the go command ignores too, and those of
// installed dependencies and caches of other languages.
func skipDir(name string) bool {
	switch name {
	case "testdata", "vendor", "node_modules", "__pycache__":
		return true
	}
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// describe lists langs with their extensions for an error message.
func describe(langs []lsptool.Language) string {
	if len(langs) == 0 {
		return "none"
	}
	parts := make([]string, len(langs))
	for i, l := range langs {
		parts[i] = l.Name + ": " + strings.Join(l.Extensions, " ")
	}
	return strings.Join(parts, "; ")
}

// render is the text the model reads: symbols grouped by file, one per
// line, members indented under their container in focused mode.
func render(out output, isDir bool, mode warden.Mode) string {
	var lines []string
	last := ""
	for _, e := range out.Symbols {
		indent := ""
		if isDir {
			if e.Path != last {
				lines = append(lines, e.Path)
				last = e.Path
			}
			indent = "  "
		}
		line := fmt.Sprintf("%s%s%s %s %d:%d", indent, strings.Repeat("  ", e.depth), e.Kind, e.Name, e.Line, e.Column)
		if mode == warden.Focused {
			if start := max(e.StartLine, 0); start != 0 || e.EndLine > e.Line {
				if start == 0 {
					start = e.Line
				}
				line += fmt.Sprintf(" (lines %d-%d)", start, e.EndLine)
			}
			if e.Detail != "" {
				line += " " + e.Detail
			}
		} else if e.Members > 0 {
			line += fmt.Sprintf(" (%d member%s)", e.Members, plural(e.Members))
		}
		lines = append(lines, line)
	}
	if len(out.Symbols) == 0 && out.Overflow == nil {
		lines = append(lines, fmt.Sprintf("no symbols in %s (%d source files)", out.Path, out.Files))
	}
	if out.FilesTruncated {
		lines = append(lines, fmt.Sprintf("# only the first %d source files were outlined; outline a subdirectory", maxFiles))
	}
	for _, s := range out.Skipped {
		lines = append(lines, "# skipped "+s.Path+": "+s.Error)
	}
	return lsptool.Text(lines, out.Overflow)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
