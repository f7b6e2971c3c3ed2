package lsp

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"go.lsp.dev/protocol"
)

// Positions cross two boundaries. Guests speak 1-based lines and 1-based
// UTF-8 byte columns; servers speak 0-based lines and columns in the
// encoding negotiated at initialize: UTF-8 when the server accepts it
// (gopls does), else the mandatory UTF-16, which needs the line's text to
// convert.

// splitLines splits content into lines without their terminators ("\n" or
// "\r\n"). Content ending in a newline has a last, empty line: a position
// just past the final newline is valid in LSP.
func splitLines(content []byte) [][]byte {
	lines := bytes.Split(content, []byte{'\n'})
	for i, l := range lines {
		lines[i] = bytes.TrimSuffix(l, []byte{'\r'})
	}
	return lines
}

// utf16Units counts the UTF-16 code units of b; invalid bytes count as one
// unit each (they become U+FFFD).
func utf16Units(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		n += utf16.RuneLen(r) // RuneError for invalid bytes: one unit
		b = b[size:]
	}
	return n
}

// utf16ToByte returns the byte offset in line of UTF-16 offset u, clamped to
// the line's length. An offset inside a surrogate pair maps to the start of
// its rune.
func utf16ToByte(line []byte, u int) int {
	off, units := 0, 0
	for off < len(line) {
		r, size := utf8.DecodeRune(line[off:])
		w := utf16.RuneLen(r)
		if units+w > u {
			break
		}
		units += w
		off += size
	}
	return off
}

// runeStart moves byte offset off in line back to the start of its rune.
func runeStart(line []byte, off int) int {
	for off > 0 && off < len(line) && !utf8.RuneStart(line[off]) {
		off--
	}
	return off
}

// toServer converts a validated guest position into the server's encoding.
// lines are the document's lines; p.Line indexes them.
func toServer(lines [][]byte, p Position, enc protocol.PositionEncodingKind) protocol.Position {
	line := lines[p.Line-1]
	off := runeStart(line, p.Column-1)
	char := off
	switch enc {
	case protocol.PositionEncodingKindUTF16:
		char = utf16Units(line[:off])
	case protocol.PositionEncodingKindUTF32:
		char = utf8.RuneCount(line[:off])
	}
	return protocol.Position{Line: uint32(p.Line - 1), Character: uint32(char)}
}

// fromServer converts a server position into a guest one. line is the
// text of that line, or nil when unknown; without it the column is passed
// through unconverted, which is exact for UTF-8 servers and ASCII lines.
// With it, the column is clamped to the line and lands on a rune start.
func fromServer(p protocol.Position, line []byte, enc protocol.PositionEncodingKind) Position {
	col := int(p.Character)
	if line != nil {
		switch enc {
		case protocol.PositionEncodingKindUTF16:
			col = utf16ToByte(line, col)
		case protocol.PositionEncodingKindUTF32:
			col = runesToByte(line, col)
		default:
			col = runeStart(line, min(col, len(line)))
		}
	}
	return Position{Line: int(p.Line) + 1, Column: col + 1}
}

// runesToByte returns the byte offset of the n-th rune of line, clamped.
func runesToByte(line []byte, n int) int {
	off := 0
	for i := 0; i < n && off < len(line); i++ {
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off
}
