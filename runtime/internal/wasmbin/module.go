// Package wasmbin reads and writes the WebAssembly binary format at the
// level a rewriting pass needs: section framing, the few sections whose
// entries the pass inspects or extends, and single instructions. Everything
// it is not asked to change stays byte for byte as it was: sections are kept
// as raw payloads, vectors are extended by appending encoded entries after
// the originals, and function bodies are walked instruction by instruction.
//
// All offsets in errors are absolute byte offsets into the module.
package wasmbin

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Error is malformed or unsupported input at a byte offset of the module.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("wasm offset %#x: %s", e.Offset, e.Msg) }

func errAt(off int, format string, args ...any) error {
	return &Error{Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// Section IDs.
const (
	SectionCustom    byte = 0
	SectionType      byte = 1
	SectionImport    byte = 2
	SectionFunction  byte = 3
	SectionTable     byte = 4
	SectionMemory    byte = 5
	SectionGlobal    byte = 6
	SectionExport    byte = 7
	SectionStart     byte = 8
	SectionElement   byte = 9
	SectionCode      byte = 10
	SectionData      byte = 11
	SectionDataCount byte = 12
	SectionTag       byte = 13
)

// sectionRank orders known non-custom sections as the spec requires
// (DataCount sits between Element and Code, Tag between Memory and Global).
var sectionRank = [...]int{
	SectionType: 1, SectionImport: 2, SectionFunction: 3, SectionTable: 4,
	SectionMemory: 5, SectionTag: 6, SectionGlobal: 7, SectionExport: 8,
	SectionStart: 9, SectionElement: 10, SectionDataCount: 11, SectionCode: 12,
	SectionData: 13,
}

var header = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

// Section is one section of a module. Payload aliases the module's bytes
// until it is replaced.
type Section struct {
	ID      byte
	Offset  int    // absolute offset of the payload in the original module; -1 if new
	Payload []byte // section contents without id and size
}

// Module is a module as a sequence of sections, in file order.
type Module struct {
	Bytes    []byte // the original module
	Sections []Section
	// imports caches the decoded import section (Imports) until the
	// section is replaced.
	imports    []Import
	importsErr error
	decoded    bool
}

// Imports decodes the import section (nil if there is none). It is decoded
// once: the loaders' detection, their import checks and the
// instrumentation pass all read the same entries, which callers must not
// modify. Replacing or removing the section (SetSection, RemoveSection)
// drops the cached entries.
func (m *Module) Imports() ([]Import, error) {
	if !m.decoded {
		if s := m.Section(SectionImport); s != nil {
			m.imports, m.importsErr = m.SectionReader(s).Imports()
		}
		m.decoded = true
	}
	return m.imports, m.importsErr
}

// Parse checks the header and section framing: known ids, sizes within the
// module, no duplicate non-custom section and the spec's section order.
func Parse(b []byte) (*Module, error) {
	if len(b) < len(header) || !bytes.Equal(b[:4], header[:4]) {
		return nil, errAt(0, "not a WebAssembly module (bad magic)")
	}
	if !bytes.Equal(b[4:8], header[4:]) {
		return nil, errAt(4, "unsupported binary version %x", b[4:8])
	}
	m := &Module{Bytes: b}
	pos, lastRank := len(header), 0
	for pos < len(b) {
		start := pos
		id := b[pos]
		pos++
		size, p, ok := readUleb(b, pos, 32)
		if !ok {
			return nil, errAt(pos, "malformed size of section %d", id)
		}
		pos = p
		if uint64(len(b)-pos) < size {
			return nil, errAt(start, "section %d: size %d exceeds module end", id, size)
		}
		if id != SectionCustom {
			if int(id) >= len(sectionRank) || sectionRank[id] == 0 {
				return nil, errAt(start, "unknown section id %d", id)
			}
			if id == SectionTag {
				return nil, errAt(start, "unsupported tag section (exception handling)")
			}
			if sectionRank[id] <= lastRank {
				return nil, errAt(start, "section %d out of order or duplicated", id)
			}
			lastRank = sectionRank[id]
		} else {
			r := &Reader{b: b[:pos+int(size)], pos: pos}
			if _, err := r.Name(); err != nil {
				return nil, fmt.Errorf("custom section name: %w", err)
			}
		}
		m.Sections = append(m.Sections, Section{ID: id, Offset: pos, Payload: b[pos : pos+int(size)]})
		pos += int(size)
	}
	return m, nil
}

// Section returns the section with the given non-custom id, or nil.
func (m *Module) Section(id byte) *Section {
	for i := range m.Sections {
		if m.Sections[i].ID == id {
			return &m.Sections[i]
		}
	}
	return nil
}

// SetSection replaces the payload of the section with the given non-custom
// id, inserting the section at its place in the spec order if it is absent:
// right before the first section that must follow it, else right after the
// last non-custom section, so trailing custom sections (names, producers)
// stay at the end.
func (m *Module) SetSection(id byte, payload []byte) {
	if id == SectionImport {
		m.imports, m.importsErr, m.decoded = nil, nil, false
	}
	if s := m.Section(id); s != nil {
		s.Payload = payload
		s.Offset = -1
		return
	}
	at := -1
	for i, s := range m.Sections {
		if s.ID == SectionCustom {
			continue
		}
		if sectionRank[s.ID] > sectionRank[id] {
			at = i
			break
		}
		at = i + 1
	}
	if at < 0 {
		at = 0
	}
	m.Sections = append(m.Sections, Section{})
	copy(m.Sections[at+1:], m.Sections[at:])
	m.Sections[at] = Section{ID: id, Offset: -1, Payload: payload}
}

// RemoveSection drops the section with the given non-custom id, if present.
func (m *Module) RemoveSection(id byte) {
	if id == SectionImport {
		m.imports, m.importsErr, m.decoded = nil, nil, false
	}
	for i := range m.Sections {
		if m.Sections[i].ID == id {
			m.Sections = append(m.Sections[:i], m.Sections[i+1:]...)
			return
		}
	}
}

// Encode writes the module: header then every section in order.
func (m *Module) Encode() []byte {
	n := len(header)
	for _, s := range m.Sections {
		n += 1 + 5 + len(s.Payload)
	}
	out := make([]byte, 0, n)
	out = append(out, header...)
	for _, s := range m.Sections {
		out = append(out, s.ID)
		out = AppendU32(out, uint32(len(s.Payload)))
		out = append(out, s.Payload...)
	}
	return out
}

// Reader reads the binary format from b, keeping positions absolute so that
// errors name offsets in the module.
type Reader struct {
	b   []byte
	pos int
}

// NewReader reads b[pos:end] where b is the whole module.
func NewReader(b []byte, pos, end int) *Reader { return &Reader{b: b[:end], pos: pos} }

// SectionReader reads the payload of s. Positions are absolute offsets in
// the module for an unmodified section, offsets in the payload for one
// SetSection replaced.
func (m *Module) SectionReader(s *Section) *Reader {
	if s.Offset < 0 {
		return NewReader(s.Payload, 0, len(s.Payload))
	}
	return NewReader(m.Bytes, s.Offset, s.Offset+len(s.Payload))
}

// Pos is the absolute position of the next byte.
func (r *Reader) Pos() int { return r.pos }

// Len is the number of unread bytes.
func (r *Reader) Len() int { return len(r.b) - r.pos }

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errAt(r.pos, "unexpected end")
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

// U32 reads an unsigned 32-bit LEB128 number.
func (r *Reader) U32() (uint32, error) {
	v, p, ok := readUleb(r.b, r.pos, 32)
	if !ok {
		return 0, errAt(r.pos, "malformed u32")
	}
	r.pos = p
	return uint32(v), nil
}

// Bytes reads n raw bytes.
func (r *Reader) Bytes(n uint32) ([]byte, error) {
	if uint64(len(r.b)-r.pos) < uint64(n) {
		return nil, errAt(r.pos, "length %d exceeds end", n)
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// Name reads a length-prefixed UTF-8 name.
func (r *Reader) Name() (string, error) {
	at := r.pos
	n, err := r.U32()
	if err != nil {
		return "", err
	}
	s, err := r.Bytes(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(s) {
		return "", errAt(at, "name is not valid UTF-8")
	}
	return string(s), nil
}

// Count reads a vector length, rejecting one that cannot fit in the rest
// of the input even at one byte per entry (so callers may preallocate).
func (r *Reader) Count() (uint32, error) {
	at := r.pos
	n, err := r.U32()
	if err != nil {
		return 0, err
	}
	if uint64(n) > uint64(r.Len()) {
		return 0, errAt(at, "vector length %d exceeds end", n)
	}
	return n, nil
}

// End checks that the reader consumed everything.
func (r *Reader) End(what string) error {
	if r.pos != len(r.b) {
		return errAt(r.pos, "%s: %d trailing bytes", what, len(r.b)-r.pos)
	}
	return nil
}

// AppendVector re-encodes a vector payload (count then entries) with extra
// entries appended after the original ones, which stay byte for byte. old
// may be nil for an absent section.
func AppendVector(old []byte, oldCount, added uint32, extra []byte) []byte {
	var rest []byte
	if old != nil {
		_, p, _ := readUleb(old, 0, 32)
		rest = old[p:]
	}
	out := make([]byte, 0, 5+len(rest)+len(extra))
	out = AppendU32(out, oldCount+added)
	out = append(out, rest...)
	return append(out, extra...)
}

// AppendName appends a length-prefixed name.
func AppendName(b []byte, s string) []byte {
	b = AppendU32(b, uint32(len(s)))
	return append(b, s...)
}
