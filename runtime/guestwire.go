package runtime

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/warden-run/warden/tool"
)

// decodeGuestResponse decodes the usual guest answer, text blocks and an
// object of structured content, into resp without encoding/json's
// reflection, and reports false (resp untouched) for anything else: other
// keys, escapes in a string, keys not written exactly, a repeated key,
// bytes that are not valid UTF-8, or JSON that is not valid. What it accepts
// it decodes exactly as json.Unmarshal does (FuzzGuestResponseDifferential);
// what it refuses, decodeResponse gives to json.Unmarshal. Nothing in resp
// aliases raw (the structured content is copied): raw is already a private
// copy of guest memory, but a result may outlive the call, and should not
// keep the whole answer alive, nor break if a caller ever passes a view of
// guest memory.
func decodeGuestResponse(raw []byte, resp *guestResponse) bool {
	d := wireDecoder{b: raw}
	if !d.byte('{') {
		return false
	}
	var content []tool.Content
	var structured json.RawMessage
	seenContent, seenStructured := false, false
	for first := true; ; first = false {
		if d.byte('}') {
			break
		}
		if !first && !d.byte(',') {
			return false
		}
		key, ok := d.plainString()
		if !ok || !d.byte(':') {
			return false
		}
		switch string(key) {
		case "content":
			if seenContent {
				return false
			}
			seenContent = true
			if content, ok = d.textBlocks(); !ok {
				return false
			}
		case "structuredContent":
			if seenStructured {
				return false
			}
			seenStructured = true
			d.space()
			if d.i >= len(d.b) || d.b[d.i] != '{' {
				return false
			}
			start := d.i
			if !d.skipValue() || !json.Valid(d.b[start:d.i]) {
				return false
			}
			structured = append(json.RawMessage(nil), d.b[start:d.i]...)
		default:
			return false
		}
	}
	if d.space(); d.i != len(d.b) {
		return false
	}
	resp.Content, resp.StructuredContent = content, structured
	return true
}

// wireDecoder reads the strict subset of JSON decodeGuestResponse accepts.
type wireDecoder struct {
	b []byte
	i int
}

func (d *wireDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte consumes c after any space.
func (d *wireDecoder) byte(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// plainString reads a string with no escape and no control byte, in valid
// UTF-8: one whose bytes are its value.
func (d *wireDecoder) plainString() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// textBlocks reads an array of {"type":"text","text":S} objects (the keys
// in either order, each once).
func (d *wireDecoder) textBlocks() ([]tool.Content, bool) {
	if !d.byte('[') {
		return nil, false
	}
	blocks := []tool.Content{}
	for first := true; ; first = false {
		if d.byte(']') {
			return blocks, true
		}
		if !first && !d.byte(',') {
			return nil, false
		}
		if !d.byte('{') {
			return nil, false
		}
		var typ, text []byte
		seenType, seenText := false, false
		for firstKey := true; ; firstKey = false {
			if d.byte('}') {
				break
			}
			if !firstKey && !d.byte(',') {
				return nil, false
			}
			key, ok := d.plainString()
			if !ok || !d.byte(':') {
				return nil, false
			}
			switch string(key) {
			case "type":
				if seenType {
					return nil, false
				}
				seenType = true
				if typ, ok = d.plainString(); !ok {
					return nil, false
				}
			case "text":
				if seenText {
					return nil, false
				}
				seenText = true
				if text, ok = d.plainString(); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
		}
		if string(typ) != tool.ContentText {
			return nil, false
		}
		blocks = append(blocks, tool.Content{Type: tool.ContentText, Text: string(text)})
	}
}

// skipValue moves past one object or array, ending where a valid one
// ends; json.Valid then judges the bytes it passed.
func (d *wireDecoder) skipValue() bool {
	depth := 0
	for d.i < len(d.b) {
		c := d.b[d.i]
		d.i++
		switch c {
		case '"':
			for {
				if d.i >= len(d.b) {
					return false
				}
				c := d.b[d.i]
				d.i++
				if c == '\\' {
					d.i++
				} else if c == '"' {
					break
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return true
			}
		}
	}
	return false
}
