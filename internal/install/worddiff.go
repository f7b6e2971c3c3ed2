package install

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/warden-run/warden/tool"
)

// WordEdit is one run of a word-level diff: Op is '=' (in both), '-'
// (only in the old text) or '+' (only in the new one).
type WordEdit struct {
	Op   byte
	Text string
}

// textChanges diffs, word by word, each field of a tool's descriptor that
// a model reads and that changed between old and new.
func textChanges(old, new tool.Descriptor) []TextChange {
	var out []TextChange
	add := func(field, a, b string) {
		if a != b {
			out = append(out, TextChange{Field: field, Diff: WordDiff(a, b)})
		}
	}
	add("title", old.Title, new.Title)
	add("description", old.Description, new.Description)
	add("inputSchema", indentedJSON(old.InputSchema), indentedJSON(new.InputSchema))
	add("outputSchema", indentedJSON(old.OutputSchema), indentedJSON(new.OutputSchema))
	add("annotations", indentedJSON(mustJSON(old.Annotations)), indentedJSON(mustJSON(new.Annotations)))
	return out
}

// indentedJSON is a JSON document with sorted keys, one member a line, so
// that a word diff of two schemas shows the members that changed; ""
// for none.
func indentedJSON(raw []byte) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

var wordToken = regexp.MustCompile(`\s+|[^\s]+`)

// WordDiff is a word-level diff of a and b: each word and each run of
// space is one token, mapped to one rune so that diffmatchpatch's
// Myers diff runs over words rather than characters (its line mode,
// applied to words).
func WordDiff(a, b string) []WordEdit {
	index := map[string]rune{}
	var tokens []string
	encode := func(s string) []rune {
		var rs []rune
		for _, t := range wordToken.FindAllString(s, -1) {
			r, ok := index[t]
			if !ok {
				r = rune(0x10000 + len(tokens)) // past the surrogates, valid runes
				index[t] = r
				tokens = append(tokens, t)
			}
			rs = append(rs, r)
		}
		return rs
	}
	ra, rb := encode(a), encode(b)
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // exact, and deterministic
	var out []WordEdit
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		var sb strings.Builder
		for _, r := range d.Text {
			sb.WriteString(tokens[r-0x10000])
		}
		op := byte('=')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			op = '-'
		case diffmatchpatch.DiffInsert:
			op = '+'
		}
		if n := len(out); n > 0 && out[n-1].Op == op {
			out[n-1].Text += sb.String()
			continue
		}
		out = append(out, WordEdit{Op: op, Text: sb.String()})
	}
	return out
}

// FormatWordDiff writes d as git's --word-diff=plain does: [-old-]{+new+}.
func FormatWordDiff(d []WordEdit) string {
	var sb strings.Builder
	for _, e := range d {
		switch e.Op {
		case '-':
			sb.WriteString("[-" + e.Text + "-]")
		case '+':
			sb.WriteString("{+" + e.Text + "+}")
		default:
			sb.WriteString(e.Text)
		}
	}
	return sb.String()
}
