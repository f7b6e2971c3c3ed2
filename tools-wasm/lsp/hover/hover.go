// Package hover is warden's hover tool: the type and documentation of the
// identifier at a position, from the language's server.
package hover

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
	"github.com/warden-run/warden/tools-wasm/internal/lsptool"
)

// exploreLines caps the hover text shown without detail_level "full": the
// signature and the start of the documentation.
const exploreLines = 30

// Tool is the hover tool; tools-wasm/lsp registers it.
type Tool struct{}

type output struct {
	// Found is false when the server has nothing to say about the position, or
	// the identifier is defined in a file the tool may not read.
	Found bool `json:"found"`
	// Text is the hover text (lines of it, when paged or capped).
	Text string `json:"text"`
	// Format is "plaintext" or "markdown".
	Format string `json:"format,omitempty"`
	// Range is the hovered identifier.
	Range    *lsptool.Location `json:"range,omitempty"`
	Overflow *warden.Overflow  `json:"overflow,omitempty"`
}

func (Tool) Descriptor() tool.Descriptor {
	return lsptool.Descriptor(tool.Descriptor{
		Name:  "hover",
		Title: "Hover: type and docs",
		Description: "Shows what the language's server (gopls, pyright, typescript-language-server, clangd, rust-analyzer) knows about the identifier at a position: its type or signature and its documentation, as an editor's hover does. " +
			"Works for project code, the standard library and dependencies. Give the position as 1-based line and column, or line and the identifier's name. " +
			"Shows the first 30 lines; long documentation can be paged line by line with detail_level \"full\" and offset/limit.",
		InputSchema: warden.WithPagination(json.RawMessage(`{"type": "object", "properties": {` + lsptool.PositionProperties + `
		}, ` + lsptool.PositionRequired + `, "additionalProperties": false}`)),
		OutputSchema: lsptool.OutputSchema(`
			"found": {"type": "boolean"},
			"text": {"type": "string"},
			"format": {"type": "string", "enum": ["plaintext", "markdown"]},
			"range": {"type": "object", "properties": {"path": {"type": "string"}, "line": {"type": "integer"},
				"column": {"type": "integer"}, "endLine": {"type": "integer"}, "endColumn": {"type": "integer"}}}`,
			"found", "text"),
		Tags: []string{"hover", "documentation", "types"},
	})
}

func (Tool) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[lsptool.At](raw)
	if err != nil {
		return nil, err
	}
	at, err := a.Resolve(lsptool.NewSources(ctx))
	if err != nil {
		return nil, err
	}
	pager, err := lsptool.NewPager(ctx, raw, at, exploreLines)
	if err != nil {
		return nil, err
	}
	var reply struct {
		Hover *lsptool.Hover `json:"hover"`
	}
	pager.Unit = "lines"
	if err := lsptool.LSP(ctx, at.Request("hover"), &reply); err != nil {
		return nil, err
	}
	if reply.Hover == nil || strings.TrimSpace(reply.Hover.Text) == "" {
		msg := fmt.Sprintf("no hover information for %s (not an identifier, or defined in a file you may not read)", at)
		return warden.WithStructured(warden.Text(msg), output{})
	}
	h := reply.Hover
	lines := strings.Split(strings.TrimRight(h.Text, "\n"), "\n")
	page, overflow, next := lsptool.Page(pager, lines, "the rest is documentation")
	out := output{Found: true, Text: strings.Join(page, "\n"), Format: h.Format, Range: h.Range, Overflow: overflow}
	res, err := warden.WithStructured(warden.Text(lsptool.Text([]string{out.Text}, overflow)), out)
	if err != nil {
		return nil, err
	}
	res.NextCursor = next
	return res, nil
}
