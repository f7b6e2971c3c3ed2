package schema

// flatSchema is the shape most tool schemas have: an object whose
// properties each only name a JSON type, string or boolean, with a list of
// required ones and perhaps no others allowed. For such a schema a value is
// valid when a single pass over its members says so, without the general
// validator, whose recursion (4 KiB frames) grows the calling goroutine's
// stack on every call (RATIONALE.md, "Flat schemas checked without the
// validator").
//
// It only ever says "valid": anything it does not find valid, and every
// schema of another shape, goes to jsonschema-go, which stays the
// authority and writes the error. FuzzFlatSchema checks that the two agree.
type flatSchema struct {
	// props maps a property name to its type: 's' string, 'b' boolean.
	props    map[string]byte
	required []string
	// closed is "additionalProperties": false.
	closed bool
}

// Keywords that carry no assertion: a schema or property schema may hold
// them and still be flat.
var annotationKeywords = map[string]bool{
	"title": true, "description": true, "$comment": true, "examples": true, "default": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// newFlatSchema returns the flat form of the schema doc (as encoding/json
// decodes it into any), or nil when it has another shape.
func newFlatSchema(doc any) *flatSchema {
	root, ok := doc.(map[string]any)
	if !ok || root["type"] != "object" {
		return nil
	}
	f := &flatSchema{props: map[string]byte{}}
	for key, v := range root {
		switch key {
		case "type", "$schema":
			if _, ok := v.(string); !ok {
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range props {
				t := propertyType(p)
				if t == 0 {
					return nil
				}
				f.props[name] = t
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range list {
				name, ok := r.(string)
				if !ok {
					return nil
				}
				f.required = append(f.required, name)
			}
		case "additionalProperties":
			switch v {
			case false:
				f.closed = true
			case true:
			default:
				return nil
			}
		default:
			if !annotationKeywords[key] {
				return nil
			}
		}
	}
	return f
}

// propertyType is the type a flat property schema names, or 0 when p is
// not one.
func propertyType(p any) byte {
	m, ok := p.(map[string]any)
	if !ok {
		return 0
	}
	var t byte
	for key, v := range m {
		switch {
		case key == "type" && v == "string":
			t = 's'
		case key == "type" && v == "boolean":
			t = 'b'
		case !annotationKeywords[key]:
			return 0
		}
	}
	return t
}

// valid reports whether instance certainly satisfies the schema; false
// means "ask the validator".
func (f *flatSchema) valid(instance any) bool {
	obj, ok := instance.(map[string]any)
	if !ok {
		return false
	}
	for name, v := range obj {
		switch f.props[name] {
		case 's':
			if _, ok := v.(string); !ok {
				return false
			}
		case 'b':
			if _, ok := v.(bool); !ok {
				return false
			}
		default:
			if f.closed {
				return false
			}
		}
	}
	for _, name := range f.required {
		if _, ok := obj[name]; !ok {
			return false
		}
	}
	return true
}
