package schema

import (
	"fmt"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// This file makes schema problems read as what to fix: a tool's schema
// with a keyword of the wrong JSON type is named by its place in the
// schema (not as the Go type dump encoding/json gives), and a value that
// fails validation is named by its argument, with what was given and what
// is allowed (not as jsonschema-go's `validating root: validating
// /properties/count: minimum: 0/1 is less than 1.000000`).

// Keyword value kinds a schema must use (JSON Schema 2020-12, draft-07).
var (
	numberKeywords  = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
	countKeywords   = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	stringKeywords  = []string{"pattern", "format", "$ref", "$anchor", "$id", "$schema", "$comment", "title", "description", "contentMediaType", "contentEncoding"}
	boolKeywords    = []string{"uniqueItems", "readOnly", "writeOnly", "deprecated"}
	schemaMapWords  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaWords     = []string{"additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	schemaListWords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// checkSchemaDoc walks a schema as decoded into any and refuses a keyword
// whose value has the wrong JSON type, or a "type" that is no JSON Schema
// type name (a typo like "strin" would otherwise pass as a type nothing
// has), naming where: `properties.a.minimum: must be a number, got a
// string`. Only schema positions are walked, so a property named like a
// keyword is a property, and values under enum, const, default and
// examples are data.
func checkSchemaDoc(v any, at string) error {
	s, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool || at == "" {
			return nil // a boolean schema; the root's kind is checked later
		}
		return fmt.Errorf("%s: must be a schema (an object or a boolean), got %s", at, jsonKind(v))
	}
	where := func(k string) string {
		if at == "" {
			return k
		}
		return at + "." + k
	}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		val := s[k]
		switch {
		case k == "type":
			if err := checkTypeValue(val, where(k)); err != nil {
				return err
			}
		case slices.Contains(numberKeywords, k):
			if _, ok := val.(float64); !ok {
				if _, isBool := val.(bool); isBool && strings.HasPrefix(k, "exclusive") {
					continue // draft-04's boolean form; jsonschema-go decides
				}
				return fmt.Errorf("%s: must be a number, got %s", where(k), jsonKind(val))
			}
		case slices.Contains(countKeywords, k):
			if f, ok := val.(float64); !ok || f < 0 || f != float64(int64(f)) {
				return fmt.Errorf("%s: must be a non-negative integer, got %s", where(k), describeJSON(val))
			}
		case slices.Contains(stringKeywords, k):
			if _, ok := val.(string); !ok {
				return fmt.Errorf("%s: must be a string, got %s", where(k), jsonKind(val))
			}
		case slices.Contains(boolKeywords, k):
			if _, ok := val.(bool); !ok {
				return fmt.Errorf("%s: must be true or false, got %s", where(k), jsonKind(val))
			}
		case k == "required":
			list, ok := val.([]any)
			if !ok {
				return fmt.Errorf("%s: must be an array of property names, got %s", where(k), jsonKind(val))
			}
			for i, e := range list {
				if _, ok := e.(string); !ok {
					return fmt.Errorf("%s[%d]: must be a property name (a string), got %s", where(k), i, jsonKind(e))
				}
			}
		case k == "enum":
			if _, ok := val.([]any); !ok {
				return fmt.Errorf("%s: must be an array of the allowed values, got %s", where(k), jsonKind(val))
			}
		case slices.Contains(schemaMapWords, k):
			m, ok := val.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: must be an object of schemas, got %s", where(k), jsonKind(val))
			}
			for _, name := range slices.Sorted(maps.Keys(m)) {
				if err := checkSchemaDoc(m[name], where(k)+"."+name); err != nil {
					return err
				}
			}
		case k == "items":
			// 2020-12: one schema; draft-07: a schema or an array of them.
			if list, ok := val.([]any); ok {
				for i, e := range list {
					if err := checkSchemaDoc(e, fmt.Sprintf("%s[%d]", where(k), i)); err != nil {
						return err
					}
				}
			} else if err := checkSchemaDoc(val, where(k)); err != nil {
				return err
			}
		case slices.Contains(schemaWords, k):
			if err := checkSchemaDoc(val, where(k)); err != nil {
				return err
			}
		case slices.Contains(schemaListWords, k):
			list, ok := val.([]any)
			if !ok {
				return fmt.Errorf("%s: must be an array of schemas, got %s", where(k), jsonKind(val))
			}
			for i, e := range list {
				if err := checkSchemaDoc(e, fmt.Sprintf("%s[%d]", where(k), i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkTypeValue checks the value of a "type" keyword.
func checkTypeValue(v any, where string) error {
	var names []any
	switch t := v.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return fmt.Errorf("%s: must be a type name or an array of them, got %s", where, jsonKind(v))
	}
	for _, n := range names {
		if name, ok := n.(string); !ok || !slices.Contains(typeNames, name) {
			return fmt.Errorf("%s: unknown type %s (allowed: %s)", where, quoteJSON(n), strings.Join(typeNames, ", "))
		}
	}
	return nil
}

// jsonKind names the JSON kind of v with its article: "a string".
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// describeJSON is jsonKind with the value when it is short.
func describeJSON(v any) string {
	if s := quoteJSON(v); len(s) <= 40 {
		return jsonKind(v) + " (" + s + ")"
	}
	return jsonKind(v)
}

var (
	validatingPrefix = regexp.MustCompile(`^validating ([^:]*): `)
	typeMsg          = regexp.MustCompile(`^type: (.*) has type "([a-z]+)", want (.*)$`)
	boundMsg         = regexp.MustCompile(`^(minimum|maximum|exclusiveMinimum|exclusiveMaximum|multipleOf): (\S+) is (?:less than or equal to|greater than or equal to|less than|greater than|not a multiple of) (\S+)$`)
	lengthMsg        = regexp.MustCompile(`^(minLength|maxLength): (".*") contains (\d+) Unicode code points, (?:fewer|more) than (\d+)$`)
	itemsMsg         = regexp.MustCompile(`^(minItems|maxItems): array length (\d+) is (?:less|greater) than (\d+)$`)
	enumMsg          = regexp.MustCompile(`^enum: (.*) does not equal any of: (\[.*\])$`)
	constMsg         = regexp.MustCompile(`^const: (.*) does not equal (.*)$`)
	patternMsg       = regexp.MustCompile(`^pattern: (".*") does not match regular expression (".*")$`)
	requiredMsg      = regexp.MustCompile(`^required: missing properties: (\[.*\])$`)
	additionalMsg    = regexp.MustCompile(`^unexpected additional properties (\[.*\])$`)
)

// readableValidation rewrites a jsonschema-go validation message for a
// model: noun names what is validated ("argument" for an input schema,
// "field" for an output schema). A message it does not recognise keeps
// its text, without the "validating …:" chain.
func readableValidation(msg, noun string) string {
	// The chain of schema locations down to the failing keyword: the last
	// one says which value.
	loc := ""
	for {
		m := validatingPrefix.FindStringSubmatch(msg)
		if m == nil {
			break
		}
		if m[1] != "root" {
			loc = m[1]
		}
		msg = msg[len(m[0]):]
	}
	name, ok := valueName(loc)
	subject := ""
	switch {
	case name != "":
		subject = fmt.Sprintf("%s %q: ", noun, name)
	case !ok:
		subject = "at " + loc + ": "
	}
	if m := requiredMsg.FindStringSubmatch(msg); m != nil {
		missing := strings.Join(splitQuoted(m[1]), ", ")
		if name == "" && ok {
			return fmt.Sprintf("missing required %s %s", noun, missing)
		}
		return fmt.Sprintf("%smissing required field %s", subject, missing)
	}
	if m := additionalMsg.FindStringSubmatch(msg); m != nil {
		extra := strings.Join(splitQuoted(m[1]), ", ")
		if name == "" && ok {
			return fmt.Sprintf("unknown %s %s (the input schema allows no others)", noun, extra)
		}
		return fmt.Sprintf("%sunknown field %s (the schema allows no others)", subject, extra)
	}
	if m := typeMsg.FindStringSubmatch(msg); m != nil {
		want := m[3]
		// `"integer"`, or `one of "string, integer"`.
		if w, err := strconv.Unquote(strings.TrimPrefix(want, "one of ")); err == nil {
			var kinds []string
			for _, k := range strings.Split(w, ", ") {
				kinds = append(kinds, article(k))
			}
			want = strings.Join(kinds, " or ")
		}
		got := m[1]
		if m[2] == "string" {
			got = strconv.Quote(got) // %v printed it bare
		}
		return fmt.Sprintf("%sgot %s (%s), want %s", subject, article(m[2]), clipValue(got), want)
	}
	if m := boundMsg.FindStringSubmatch(msg); m != nil {
		got, limit := number(m[2]), number(m[3])
		what := map[string]string{
			"minimum": "is less than the minimum %s", "maximum": "is more than the maximum %s",
			"exclusiveMinimum": "must be more than %s", "exclusiveMaximum": "must be less than %s",
			"multipleOf": "is not a multiple of %s",
		}[m[1]]
		return subject + got + " " + fmt.Sprintf(what, limit)
	}
	if m := lengthMsg.FindStringSubmatch(msg); m != nil {
		bound := "at least"
		if m[1] == "maxLength" {
			bound = "at most"
		}
		return fmt.Sprintf("%s%s is %s characters long; the schema allows %s %s", subject, clipValue(m[2]), m[3], bound, m[4])
	}
	if m := itemsMsg.FindStringSubmatch(msg); m != nil {
		bound := "at least"
		if m[1] == "maxItems" {
			bound = "at most"
		}
		return fmt.Sprintf("%shas %s items; the schema allows %s %s", subject, m[2], bound, m[3])
	}
	if m := enumMsg.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s%s is not one of the allowed values %s", subject, clipValue(m[1]), clipValue(m[2]))
	}
	if m := constMsg.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%smust be %s, got %s", subject, clipValue(m[2]), clipValue(m[1]))
	}
	if m := patternMsg.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s%s does not match the pattern %s", subject, clipValue(m[1]), m[2])
	}
	return subject + msg
}

// valueName turns the schema location of a failing keyword into the
// value's name: /properties/a/properties/b is "a.b", /properties/tags/items
// "tags[]" (an item of tags). ok is false for a location it cannot name
// that way (under $defs, anyOf, ...); "" with ok is the root.
func valueName(loc string) (name string, ok bool) {
	if loc == "" {
		return "", true
	}
	segs := strings.Split(strings.TrimPrefix(loc, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(segs); i++ {
		switch seg := segs[i]; {
		case seg == "properties" && i+1 < len(segs):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(strings.NewReplacer("~1", "/", "~0", "~").Replace(segs[i+1]))
			i++
		case seg == "items" || seg == "additionalProperties":
			b.WriteString("[]")
		case seg == "prefixItems" && i+1 < len(segs):
			b.WriteString("[" + segs[i+1] + "]")
			i++
		default:
			return "", false
		}
	}
	return b.String(), true
}

// splitQuoted splits `["a" "b"]` (Go's %q of a []string) into its items.
func splitQuoted(list string) []string {
	return regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(list, -1)
}

// number renders jsonschema-go's numbers (a big.Rat "3/2", a %f "1.000000")
// as JSON would.
func number(s string) string {
	if r, ok := new(big.Rat).SetString(s); ok {
		if r.IsInt() {
			return r.Num().String()
		}
		f, _ := r.Float64()
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return s
}

func article(kind string) string {
	switch kind {
	case "integer", "array", "object":
		return "an " + kind
	case "null":
		return "null"
	}
	return "a " + kind
}

// clipValue bounds a value quoted from the validator's message.
func clipValue(s string) string {
	if len(s) <= 80 {
		return s
	}
	cut := 80
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
