package warden

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// decodeFlatArgs is Args' fast path, for the same reason as wire.go's:
// encoding/json's Unmarshal was the largest part of a small tool's
// instructions per call inside wasm. It decodes b into v, which must be a
// struct whose fields are all exported, not embedded, of type string or
// bool, named by a plain tag (or their Go name), with no two of the same
// name; b must be an object whose keys each name one of those fields
// exactly, once, with a value of the field's type: a string without escapes
// in valid UTF-8, or true or false. That is a shape where encoding/json
// cannot decide otherwise (no case folding, unknown key, null, duplicate,
// escape or conversion to resolve). Anything else returns false, possibly
// after setting some of v's fields: the caller zeroes v and lets
// encoding/json decide.
func decodeFlatArgs(b []byte, v reflect.Value) bool {
	// An escape is the common reason to decline: check for one before
	// paying for the reflection.
	if v.Kind() != reflect.Struct || bytes.IndexByte(b, '\\') >= 0 {
		return false
	}
	var buf [16]string
	names, ok := flatFieldNames(v.Type(), buf[:0])
	if !ok {
		return false
	}
	var seen uint64
	return scanObject(b, func(key []byte, i int) (int, bool) {
		field := indexOf(names, string(key))
		if field < 0 || seen&(1<<field) != 0 {
			return 0, false
		}
		seen |= 1 << field
		f := v.Field(field)
		if f.Kind() == reflect.String {
			s, end, ok := plainString(b, i)
			if ok {
				f.SetString(s)
			}
			return end, ok
		}
		end, ok := scanLiteral(b, i, "true")
		if !ok {
			if end, ok = scanLiteral(b, i, "false"); !ok {
				return 0, false
			}
		}
		f.SetBool(b[i] == 't')
		return end, true
	})
}

var (
	stringType          = reflect.TypeFor[string]()
	boolType            = reflect.TypeFor[bool]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// flatFieldNames returns the JSON name of each of t's fields, or false if t
// is not of decodeFlatArgs' shape. A named string or bool type is refused:
// it may have its own UnmarshalJSON.
func flatFieldNames(t reflect.Type, names []string) ([]string, bool) {
	// A type that decodes itself is its own authority.
	if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType) {
		return nil, false
	}
	n := t.NumField()
	if n > 64 {
		return nil, false
	}
	for i := range n {
		f := t.Field(i)
		if f.Anonymous || !f.IsExported() || (f.Type != stringType && f.Type != boolType) {
			return nil, false
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			return nil, false
		}
		name, opts, _ := strings.Cut(tag, ",")
		for opt := range strings.SplitSeq(opts, ",") {
			// ",string" changes how a value decodes; other options do not,
			// but only the common ones are taken on trust.
			if opt != "" && opt != "omitempty" && opt != "omitzero" {
				return nil, false
			}
		}
		if name == "" {
			name = f.Name
		} else if !plainTagName(name) {
			// encoding/json would fall back to the Go name for some; let it.
			return nil, false
		}
		if indexOf(names, name) >= 0 {
			return nil, false
		}
		names = append(names, name)
	}
	return names, true
}

// plainTagName reports whether name uses only characters encoding/json
// accepts in a tag name (a subset of them).
func plainTagName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}
