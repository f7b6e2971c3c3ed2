package warden

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"
	"unsafe"
)

// decodeFlatArgs is Args' fast path, for the same reason as wire.go's:
// encoding/json's Unmarshal was the largest part of a small tool's
// instructions per call inside wasm. It decodes b into the value of type t
// at p, which must be a struct of flatShape's shape; b must be an object
// whose keys each name one of its fields exactly, once, with a value of the
// field's type: a string without escapes in valid UTF-8, or true or false.
// That is a shape where encoding/json cannot decide otherwise (no case
// folding, unknown key, null, duplicate, escape or conversion to resolve).
// Anything else returns false, possibly after setting some of the fields:
// the caller zeroes the value and lets encoding/json decide.
//
// p is written through unsafe pointers at the offsets reflect reported for
// t, rather than through a reflect.Value, so that Args' value need not
// escape to the heap: that was one allocation per call.
func decodeFlatArgs(b []byte, t reflect.Type, p unsafe.Pointer) bool {
	// An escape, the common reason to decline, stops the scan where it is:
	// the shape is cached, so there is no reflection left to spare by
	// searching for one first.
	if t.Kind() != reflect.Struct {
		return false
	}
	shape := flatShapeOf(t)
	if !shape.decodes {
		return false
	}
	var seen uint64
	return scanObject(b, func(key []byte, i int) (int, bool) {
		field := shape.index(key)
		if field < 0 || seen&(1<<field) != 0 {
			return 0, false
		}
		seen |= 1 << field
		f := &shape.fields[field]
		at := unsafe.Add(p, f.offset)
		if !f.isBool {
			s, end, ok := plainString(b, i)
			if ok {
				*(*string)(at) = s
			}
			return end, ok
		}
		end, ok := scanLiteral(b, i, "true")
		if !ok {
			if end, ok = scanLiteral(b, i, "false"); !ok {
				return 0, false
			}
		}
		*(*bool)(at) = b[i] == 't'
		return end, true
	})
}

// encodeFlatStruct is structured's fast path: it returns v as json.Marshal
// encodes it, byte for byte, when v is a struct (or a non-nil pointer to
// one) of flatShape's shape, and reports false for anything else, which
// encoding/json then encodes.
func encodeFlatStruct(v any) ([]byte, bool) {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if t.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil, false
		}
		t, rv = t.Elem(), rv.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	shape := flatShapeOf(t)
	if !shape.encodes {
		return nil, false
	}
	// Size the output first (exactly, unless a string needs escapes): one
	// allocation, where appending to a guess would make one or two.
	size := 2
	for i := range shape.fields {
		f := &shape.fields[i]
		size += len(f.key) + len(`false,`)
		if !f.isBool {
			size += len(rv.Field(i).String())
		}
	}
	out := make([]byte, 0, size)
	out = append(out, '{')
	first := true
	for i := range shape.fields {
		f := &shape.fields[i]
		fv := rv.Field(i)
		var s string
		var set bool
		if f.isBool {
			set = fv.Bool()
		} else {
			s = fv.String()
			set = s != ""
		}
		if !set && f.omitEmpty {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, f.key...)
		switch {
		case !f.isBool:
			out = appendString(out, s)
		case set:
			out = append(out, "true"...)
		default:
			out = append(out, "false"...)
		}
	}
	return append(out, '}'), true
}

// flatShape is what both fast paths need to know of a struct type: its
// fields, if they are all exported, not embedded, of type string or bool,
// named by a plain tag (or their Go name) with no option but omitempty or
// omitzero, and no two of the same name. decodes and encodes are false for
// any other struct, and for one that decodes or encodes itself, which is
// its own authority.
type flatShape struct {
	typ              reflect.Type
	fields           []flatField
	decodes, encodes bool
}

type flatField struct {
	name string
	// key is the name as encoding/json writes a member's key: `"name":`.
	key       string
	offset    uintptr
	isBool    bool
	omitEmpty bool
}

func (s *flatShape) index(name []byte) int {
	for i := range s.fields {
		if s.fields[i].name == string(name) {
			return i
		}
	}
	return -1
}

// flatShapeCacheSize is how many struct types the shape cache holds: a
// module usually has one argument type per tool, decoded on every call.
const flatShapeCacheSize = 8

// flatShapeCache remembers the shapes of the last struct types the fast
// paths saw. Computing a shape costs reflection (tag lookups, method sets)
// that was the largest single part of a warm call's instructions once the
// JSON itself was fast. It is the package's one piece of mutable global
// state, and only a cache: its entries are immutable and published
// atomically, so concurrent callers (tests and native tools call Dispatch
// from several goroutines) at worst compute a shape twice; a miss evicts an
// entry round-robin.
var flatShapeCache struct {
	entries [flatShapeCacheSize]atomic.Pointer[flatShape]
	next    atomic.Uint32
}

// flatShapeOf returns struct type t's shape, from the cache when it is there.
func flatShapeOf(t reflect.Type) *flatShape {
	for i := range flatShapeCache.entries {
		if s := flatShapeCache.entries[i].Load(); s != nil && s.typ == t {
			return s
		}
	}
	s := newFlatShape(t)
	slot := (flatShapeCache.next.Add(1) - 1) % flatShapeCacheSize
	flatShapeCache.entries[slot].Store(s)
	return s
}

var (
	stringType          = reflect.TypeFor[string]()
	boolType            = reflect.TypeFor[bool]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
)

// newFlatShape computes struct type t's flatShape. A named string or bool
// type is refused: it may have its own methods.
func newFlatShape(t reflect.Type) *flatShape {
	s := &flatShape{typ: t}
	n := t.NumField()
	if n > 64 {
		return s
	}
	for i := range n {
		f := t.Field(i)
		if f.Anonymous || !f.IsExported() || (f.Type != stringType && f.Type != boolType) {
			return s
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			return s
		}
		name, opts, _ := strings.Cut(tag, ",")
		omitEmpty := false
		for opt := range strings.SplitSeq(opts, ",") {
			switch opt {
			case "":
			case "omitempty", "omitzero":
				// Both omit "" and false: neither type has an IsZero method.
				omitEmpty = true
			default:
				// ",string" changes how a value decodes and encodes; other
				// options do not, but only the common ones are taken on trust.
				return s
			}
		}
		if name == "" {
			name = f.Name
		} else if !plainTagName(name) {
			// encoding/json would fall back to the Go name for some; let it.
			return s
		}
		if s.index([]byte(name)) >= 0 {
			return s
		}
		s.fields = append(s.fields, flatField{
			name: name, key: `"` + name + `":`, offset: f.Offset,
			isBool: f.Type == boolType, omitEmpty: omitEmpty,
		})
	}
	pt := reflect.PointerTo(t)
	s.decodes = !pt.Implements(jsonUnmarshalerType) && !pt.Implements(textUnmarshalerType)
	// The pointer's method set includes the value's: either marshaler on
	// either is left to encoding/json.
	s.encodes = !pt.Implements(jsonMarshalerType) && !pt.Implements(textMarshalerType)
	return s
}

// plainTagName reports whether name uses only characters encoding/json
// accepts in a tag name (a subset of them) and writes unescaped.
func plainTagName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
