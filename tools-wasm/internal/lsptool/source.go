package lsptool

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/warden-run/warden/guest-sdk/go/warden"
)

// MaxLineText caps a source line shown next to a location.
const MaxLineText = 160

// Sources reads project files through warden.fs, each at most once per
// call. A file that cannot be read (binary, too large, gone) reads as no
// lines: the line text next to a location is a convenience, not the answer.
type Sources struct {
	ctx   *warden.Context
	files map[string][]string
}

// NewSources returns an empty per-call file cache.
func NewSources(ctx *warden.Context) *Sources {
	return &Sources{ctx: ctx, files: map[string][]string{}}
}

// Lines returns path's lines, or the fs error (denied, not_found, ...).
func (s *Sources) Lines(path string) ([]string, error) {
	if lines, ok := s.files[path]; ok {
		return lines, nil
	}
	var reply struct {
		Content  string `json:"content"`
		Encoding string `json:"encoding"`
	}
	if err := warden.Host(s.ctx, "fs", map[string]any{"op": "read", "path": path}, &reply); err != nil {
		return nil, err
	}
	var lines []string
	if reply.Encoding == "" {
		lines = strings.Split(reply.Content, "\n")
	}
	s.files[path] = lines
	return lines, nil
}

// Line returns line n (1-based) of path with surrounding space trimmed and
// cut to MaxLineText bytes, or "" when it cannot be had.
func (s *Sources) Line(path string, n int) string {
	lines, err := s.Lines(path)
	if err != nil || n < 1 || n > len(lines) {
		return ""
	}
	return Clip(strings.TrimSpace(lines[n-1]), MaxLineText)
}

// Clip cuts s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ResolveColumn returns column when it is set, else the 1-based byte
// column of the first whole-word occurrence of name on line line of path.
// Models count characters poorly; naming the identifier is easier.
func ResolveColumn(s *Sources, path string, line, column int, name string) (int, error) {
	if column > 0 {
		return column, nil
	}
	if name == "" {
		return 0, warden.InvalidArguments(`give "column" or "name" (the identifier on that line)`)
	}
	lines, err := s.Lines(path)
	if err != nil {
		return 0, err
	}
	if line > len(lines) {
		return 0, warden.InvalidArguments("line %d is past the end of %s (%d lines)", line, path, len(lines))
	}
	text := lines[line-1]
	for from := 0; ; {
		i := strings.Index(text[from:], name)
		if i < 0 {
			break
		}
		start := from + i
		end := start + len(name)
		if !identRune(text[:start], true) && !identRune(text[end:], false) {
			return start + 1, nil
		}
		from = start + 1
	}
	return 0, warden.InvalidArguments("%q does not occur as a word on line %d of %s: %q", name, line, path, Clip(strings.TrimSpace(text), MaxLineText))
}

// identRune reports whether the rune next to a match (the last of before,
// or the first of after) continues an identifier.
func identRune(s string, last bool) bool {
	if s == "" {
		return false
	}
	var r rune
	if last {
		r, _ = utf8.DecodeLastRuneInString(s)
	} else {
		r, _ = utf8.DecodeRuneInString(s)
	}
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
