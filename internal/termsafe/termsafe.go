// Package termsafe makes strings that came from a module (or a client, or a
// file) safe to show a person on a terminal. Every guest-provided string
// that warden prints or logs goes through it, so that a module cannot clear
// the screen, set the window title, overwrite a line with a carriage return,
// conceal text, reverse its direction with a bidi override, or hide
// characters, and so make a review show something other than what the
// module asks for.
//
// Escaped characters are shown as visible Go-style escapes: C0 and C1
// controls and DEL as \x1b, \x9b..., other invisible or reordering
// characters (Unicode format characters such as U+202E and U+200B, line and
// paragraph separators, Hangul fillers) as \u202e. Bytes that are not UTF-8
// are shown as \xff. Everything else, letters and symbols of every script
// included, is kept. Each field is also bounded, with a visible marker
// saying how much was cut.
package termsafe

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds of the shown length of one field, in bytes of the original.
const (
	// MaxLine bounds a one-line field: a name, title, version, tag,
	// capability or message.
	MaxLine = 512
	// MaxText bounds a multi-line field: a description.
	MaxText = 8 << 10
)

// Line returns s escaped for one line of a terminal (newlines and tabs are
// escaped too, so s cannot fake a line or a column) and cut after MaxLine
// bytes.
func Line(s string) string { return Bound(s, MaxLine, false) }

// Text returns s escaped for a terminal with its newlines kept, cut after
// MaxText bytes.
func Text(s string) string { return Bound(s, MaxText, true) }

// Message returns an error message escaped for a terminal as one line:
// newlines are shown escaped like every other control character, so text a
// module put in an error (a schema pattern, a file name) cannot begin a
// line that passes for warden's own. Cut after MaxText bytes.
func Message(s string) string { return Bound(s, MaxText, false) }

// Escape returns s escaped as Line does but without a bound, for a log line
// whose length something else bounds.
func Escape(s string) string { return Bound(s, -1, false) }

// Bound escapes s, keeping newlines if keepNewlines, and cuts it after max
// bytes of s (at a character boundary; max < 0 means no bound), followed by
// "…(N more bytes)". Strings that need nothing are returned as they are.
func Bound(s string, max int, keepNewlines bool) string {
	cut := 0
	if max >= 0 && len(s) > max {
		keep := max
		for keep > 0 && !utf8.RuneStart(s[keep]) {
			keep--
		}
		s, cut = s[:keep], len(s)-keep
	}
	if safe(s, keepNewlines) {
		if cut == 0 {
			return s
		}
		return fmt.Sprintf("%s…(%d more bytes)", s, cut)
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepNewlines:
			b.WriteByte('\n')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Hidden(r):
			if r <= 0xffff {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	if cut > 0 {
		fmt.Fprintf(&b, "…(%d more bytes)", cut)
	}
	return b.String()
}

func safe(s string, keepNewlines bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\n' && keepNewlines {
			continue
		}
		if c < utf8.RuneSelf {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || Hidden(r) {
			return false
		}
		i += size - 1
	}
	return true
}

// Hidden reports whether r, outside ASCII, must not reach a terminal as it
// is: a C1 control (U+0080–U+009F; 0x9b is CSI on some terminals), a format
// character (bidi controls U+202A–U+202E and U+2066–U+2069, zero-width
// characters, soft hyphen, BOM, tag characters), a line or paragraph
// separator, a private-use or unassigned code point, or a character that
// renders as blank space of no width (Hangul fillers, U+2800).
func Hidden(r rune) bool {
	switch {
	case r < utf8.RuneSelf:
		return r < 0x20 || r == 0x7f
	case r <= 0x9f:
		return true
	case r == 0x115f, r == 0x1160, r == 0x3164, r == 0xffa0, r == 0x2800:
		return true
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r),
		unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r):
		return true
	case unicode.Is(unicode.Variation_Selector, r):
		return true
	}
	return !unicode.Is(unicode.L, r) && !unicode.Is(unicode.M, r) && !unicode.Is(unicode.N, r) &&
		!unicode.Is(unicode.P, r) && !unicode.Is(unicode.S, r) && !unicode.Is(unicode.Zs, r)
}

// Join escapes each of values as Line does and joins them with sep.
func Join(values []string, sep string) string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = Line(v)
	}
	return strings.Join(out, sep)
}

// JSON rewrites encoded JSON so that it is safe on a terminal without
// changing what it means: every character Hidden reports inside a string
// (encoding/json already escapes the ASCII controls but DEL, and emits C1
// controls, bidi overrides and zero-width characters as they are) becomes a \uXXXX
// escape, which any JSON reader decodes to the same character. Characters
// outside the Basic Multilingual Plane become surrogate pairs. Invalid
// UTF-8, which encoding/json never emits, becomes \ufffd.
func JSON(b []byte) []byte {
	if safeJSON(b) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 32)
	for i := 0; i < len(b); {
		c := b[i]
		if c == 0x7f {
			// encoding/json leaves DEL raw; it can only stand in a string.
			out.WriteString(`\u007f`)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			out.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out.WriteString(`\ufffd`)
		case Hidden(r):
			if r > 0xffff {
				hi, lo := surrogates(r)
				fmt.Fprintf(&out, `\u%04x\u%04x`, hi, lo)
			} else {
				fmt.Fprintf(&out, `\u%04x`, r)
			}
		default:
			out.Write(b[i : i+size])
		}
		i += size
	}
	return out.Bytes()
}

func safeJSON(b []byte) bool {
	for i := 0; i < len(b); {
		if b[i] == 0x7f {
			return false
		}
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 || Hidden(r) {
			return false
		}
		i += size
	}
	return true
}

func surrogates(r rune) (hi, lo rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
