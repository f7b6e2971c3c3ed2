package warden

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/warden-run/warden/tool"
)

// The fast paths of this file exist because encoding/json's reflection is
// slow inside wasm: decoding the call envelope and encoding a plain result
// were most of a small tool's in-guest time (RATIONALE.md, "The guest
// SDK's wire fast path"). Each handles only the common shape and reports
// false for anything else, so encoding/json stays the authority: a request
// or result that is not of that shape goes through it unchanged.

// decodeRequest parses the request envelope the host writes:
// {"tool": S, "arguments": V, "callId": S, "cursor": S} in any order, with
// string values free of escapes. Anything else (an escape, another key, a
// syntax error) returns false. It sets every field of req but Tool, whose
// bytes it returns instead: the caller looks the tool up without copying
// its name.
func decodeRequest(b []byte, req *tool.Request) (toolName []byte, ok bool) {
	ok = scanObject(b, func(key []byte, i int) (int, bool) {
		switch string(key) {
		case "arguments":
			end, ok := scanValue(b, i, 0, false)
			if !ok {
				return 0, false
			}
			req.Arguments = json.RawMessage(b[i:end])
			return end, true
		case "tool":
			s, end, ok := plainSpan(b, i)
			toolName = s
			return end, ok
		case "callId", "cursor":
			s, end, ok := plainString(b, i)
			if !ok {
				return 0, false
			}
			if string(key) == "callId" {
				req.CallID = s
			} else {
				req.Cursor = s
			}
			return end, true
		}
		// encoding/json matches keys case-insensitively and ignores
		// unknown ones: let it decide.
		return 0, false
	})
	return toolName, ok
}

// scanObject walks the JSON object that is the whole of b (spaces around
// it allowed) whose keys are plain strings (no escape, valid UTF-8): for
// each member it calls member with the key's bytes and the index of its
// value, and member returns the index just past the value, or false to
// decline. scanObject returns false for anything else (a syntax error,
// an escaped key, trailing bytes) and as soon as member declines. It is
// the shape both fast paths read: the request envelope and Args.
func scanObject(b []byte, member func(key []byte, value int) (end int, ok bool)) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		key, next, ok := plainSpan(b, i)
		if !ok {
			return false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		if i, ok = member(key, skipSpace(b, i+1)); !ok {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a JSON string at b[i] that has no escape and is valid
// UTF-8, returning it and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	s, end, ok := plainSpan(b, i)
	return string(s), end, ok
}

// plainSpan is plainString without the copy: the string's bytes in b.
func plainSpan(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		if htmlSafe[b[j]] {
			continue
		}
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, 0, false
			}
			return s, j + 1, true
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// htmlSafe marks the bytes a JSON string may hold as they are, in any of
// the scanners' modes: printable ASCII but for ", \, <, > and &. The
// scanners' inner loops skip them with one load each and look closer only
// at the others.
var htmlSafe = func() (safe [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// maxScanDepth bounds scanValue's recursion; deeper values go through
// encoding/json, which has its own bound.
const maxScanDepth = 1000

// scanValue returns the index just past the JSON value at b[i], checking it
// fully against JSON's grammar (the encoding/json scanner's: strings may
// hold any byte from 0x20 up, invalid UTF-8 included). It replaces
// json.Valid on the fast paths because encoding/json's scanner calls a
// state function per byte, which is costly inside wasm.
//
// With compact set it also requires the value to be exactly what
// json.Compact followed by json.HTMLEscape would make of it (no whitespace
// outside strings; no <, >, &, U+2028 or U+2029 anywhere), so that the
// caller can copy it verbatim. It may decline a valid value (too deep, or
// not compact): the caller then lets encoding/json decide.
func scanValue(b []byte, i, depth int, compact bool) (int, bool) {
	if i >= len(b) || depth > maxScanDepth {
		return 0, false
	}
	switch b[i] {
	case '"':
		return scanString(b, i, compact)
	case '{', '[':
		closer := byte('}')
		if b[i] == '[' {
			closer = ']'
		}
		object := b[i] == '{'
		i = scanSpace(b, i+1, compact)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if object {
				if i >= len(b) || b[i] != '"' {
					return 0, false
				}
				end, ok := scanString(b, i, compact)
				if !ok {
					return 0, false
				}
				i = scanSpace(b, end, compact)
				if i >= len(b) || b[i] != ':' {
					return 0, false
				}
				i = scanSpace(b, i+1, compact)
			}
			end, ok := scanValue(b, i, depth+1, compact)
			if !ok {
				return 0, false
			}
			i = scanSpace(b, end, compact)
			if i >= len(b) {
				return 0, false
			}
			switch b[i] {
			case ',':
				i = scanSpace(b, i+1, compact)
			case closer:
				return i + 1, true
			default:
				return 0, false
			}
		}
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	default:
		return scanNumber(b, i)
	}
}

// scanSpace skips whitespace, or none when the value must be compact (the
// caller's next check then fails on it).
func scanSpace(b []byte, i int, compact bool) int {
	if compact {
		return i
	}
	return skipSpace(b, i)
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// scanString returns the index after the JSON string at b[i].
func scanString(b []byte, i int, compact bool) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		if htmlSafe[b[j]] {
			continue
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j >= len(b) {
				return 0, false
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-j <= 4 {
					return 0, false
				}
				for _, h := range b[j+1 : j+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		case compact && (c == '<' || c == '>' || c == '&'):
			return 0, false
		case compact && c == 0xE2 && j+2 < len(b) && b[j+1] == 0x80 && b[j+2]&^1 == 0xA8:
			// U+2028 or U+2029, which json.HTMLEscape escapes.
			return 0, false
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// scanNumber returns the index after the JSON number at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = scanDigits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		end := scanDigits(b, i+1)
		if end == i+1 {
			return 0, false
		}
		i = end
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		end := scanDigits(b, i)
		if end == i {
			return 0, false
		}
		i = end
	}
	return i, true
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// appendResult encodes a successful result as encodeResult's struct would
// through encoding/json, byte for byte, when every content block is plain
// text (or marshals on its own). It reports false when encoding/json must
// decide (a raw message that is not valid JSON).
func appendResult(dst []byte, r *tool.Result) ([]byte, bool) {
	dst = append(dst, `{"content":[`...)
	for i := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		c := &r.Content[i]
		if c.Data != "" || c.MimeType != "" || c.URI != "" || c.Name != "" || c.Title != "" ||
			c.Description != "" || c.Size != nil || c.Resource != nil || c.Annotations != nil {
			b, err := json.Marshal(c)
			if err != nil {
				return nil, false
			}
			dst = append(dst, b...)
			continue
		}
		if c.Type == tool.ContentText { // the common block, without a scan
			dst = append(dst, `{"type":"text"`...)
		} else {
			dst = append(dst, `{"type":`...)
			dst = appendString(dst, c.Type)
		}
		if c.Text != "" {
			dst = append(dst, `,"text":`...)
			dst = appendString(dst, c.Text)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	var ok bool
	if dst, ok = appendRaw(dst, `,"structuredContent":`, r.StructuredContent); !ok {
		return nil, false
	}
	if dst, ok = appendRaw(dst, `,"details":`, r.Details); !ok {
		return nil, false
	}
	if r.NextCursor != "" {
		dst = append(dst, `,"nextCursor":`...)
		dst = appendString(dst, r.NextCursor)
	}
	return append(dst, '}'), true
}

// appendRaw appends key and raw compacted, as encoding/json does for a
// json.RawMessage with omitempty, or nothing when raw is empty.
func appendRaw(dst []byte, key string, raw json.RawMessage) ([]byte, bool) {
	if len(raw) == 0 {
		return dst, true
	}
	// What json.Marshal made (WithStructured, JSON, WithDetails) is already
	// compact and HTML-escaped: copy it without encoding/json's scanner.
	if end, ok := scanValue(raw, 0, 0, true); ok && end == len(raw) {
		return append(append(dst, key...), raw...), true
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return nil, false
	}
	// encoding/json escapes <, >, &, U+2028 and U+2029 in a RawMessage too.
	buf := bytes.NewBuffer(append(dst, key...))
	json.HTMLEscape(buf, compact.Bytes())
	return buf.Bytes(), true
}

const hexDigits = "0123456789abcdef"

// appendString appends s as encoding/json encodes a string (HTML-safe
// escaping of <, > and &; U+2028 and U+2029 escaped; invalid UTF-8 as
// U+FFFD).
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {

		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
