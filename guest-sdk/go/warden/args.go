package warden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/warden-run/warden/tool"
)

// Args decodes a call's arguments into a T, usually a struct with json tags.
// A mismatch is an "invalid_arguments" *tool.Error naming the field, so a
// tool can return it unchanged. Missing or null arguments decode to the zero T.
func Args[T any](args json.RawMessage) (T, error) {
	var v T
	if blank(args) {
		return v, nil
	}
	if decodeFlatArgs(args, reflect.TypeFor[T](), unsafe.Pointer(&v)) {
		return v, nil
	}
	return unmarshalArgs[T](args)
}

// unmarshalArgs is Args through encoding/json. It is apart so that only
// this path's T escapes to the heap, not the fast path's.
func unmarshalArgs[T any](args json.RawMessage) (T, error) {
	var v T
	if err := json.Unmarshal(args, &v); err != nil {
		return v, argsError(err)
	}
	return v, nil
}

// blank reports whether bytes.TrimSpace(b) is empty, calling it only when
// b's first or last byte may be Unicode white space (an ASCII control or
// space, or part of a multi-byte rune such as U+00A0).
func blank(b []byte) bool {
	return len(b) == 0 || (maySpace(b[0]) || maySpace(b[len(b)-1])) && len(bytes.TrimSpace(b)) == 0
}

func maySpace(c byte) bool { return c <= ' ' || c >= 0x80 }

func argsError(err error) *tool.Error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return tool.Errorf(tool.KindInvalidArguments, "argument %q: expected %s, got JSON %s",
			typeErr.Field, typeName(typeErr), typeErr.Value)
	case errors.As(err, &typeErr):
		return tool.Errorf(tool.KindInvalidArguments, "arguments: expected %s, got JSON %s",
			typeName(typeErr), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return tool.Errorf(tool.KindInvalidArguments, "arguments are not valid JSON (offset %d): %v",
			syntaxErr.Offset, err)
	}
	return tool.Errorf(tool.KindInvalidArguments, "arguments: %v", err)
}

// typeName names the expected type in JSON's terms, which is what the
// caller (a model writing JSON) can act on.
func typeName(e *json.UnmarshalTypeError) string {
	if e.Type == nil {
		return "a different type"
	}
	switch e.Type.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return fmt.Sprint(e.Type)
}
