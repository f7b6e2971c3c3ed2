package schema

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/warden-run/warden/tool"
)

// TestReadableValidationErrors: each keyword's failure names the argument,
// what was given and what is allowed, through the real validator.
func TestReadableValidationErrors(t *testing.T) {
	d := tool.Descriptor{Name: "x", Description: "d", InputSchema: json.RawMessage(`{"type":"object",
		"properties":{
			"count":{"type":"integer","minimum":1,"maximum":10},
			"ratio":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1,"multipleOf":0.25},
			"mode":{"enum":["a","b"]},
			"fixed":{"const":"on"},
			"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":2},
			"name":{"type":"string","minLength":2,"maxLength":3,"pattern":"^[a-z]+$"},
			"either":{"type":["string","integer"]},
			"opts":{"type":"object","properties":{"depth":{"type":"integer"}},"required":["depth"],"additionalProperties":false}},
		"required":["count"],"additionalProperties":false}`)}
	s, err := CompileDescriptor(&d)
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{"count":0}`:                          `argument "count": 0 is less than the minimum 1`,
		`{"count":11}`:                         `argument "count": 11 is more than the maximum 10`,
		`{"count":1.5}`:                        `argument "count": got a number (1.5), want an integer`,
		`{"count":"3"}`:                        `argument "count": got a string ("3"), want an integer`,
		`{}`:                                   `missing required argument "count"`,
		`{"count":1,"extra":1}`:                `unknown argument "extra" (the input schema allows no others)`,
		`{"count":1,"ratio":0}`:                `argument "ratio": 0 must be more than 0`,
		`{"count":1,"ratio":1}`:                `argument "ratio": 1 must be less than 1`,
		`{"count":1,"ratio":0.3}`:              `argument "ratio": 0.3 is not a multiple of 0.25`,
		`{"count":1,"mode":"c"}`:               `argument "mode": c is not one of the allowed values [a b]`,
		`{"count":1,"fixed":"off"}`:            `argument "fixed": must be on, got off`,
		`{"count":1,"tags":[]}`:                `argument "tags": has 0 items; the schema allows at least 1`,
		`{"count":1,"tags":["a","b","c"]}`:     `argument "tags": has 3 items; the schema allows at most 2`,
		`{"count":1,"tags":[1]}`:               `argument "tags[]": got an integer (1), want a string`,
		`{"count":1,"name":"a"}`:               `argument "name": "a" is 1 characters long; the schema allows at least 2`,
		`{"count":1,"name":"abcde"}`:           `argument "name": "abcde" is 5 characters long; the schema allows at most 3`,
		`{"count":1,"name":"AB"}`:              `argument "name": "AB" does not match the pattern "^[a-z]+$"`,
		`{"count":1,"either":true}`:            `argument "either": got a boolean (true), want a string or an integer`,
		`{"count":1,"opts":{}}`:                `argument "opts": missing required field "depth"`,
		`{"count":1,"opts":{"depth":1,"x":2}}`: `argument "opts": unknown field "x" (the schema allows no others)`,
		`{"count":1,"opts":{"depth":"deep"}}`:  `argument "opts.depth": got a string ("deep"), want an integer`,
	} {
		var v any
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			t.Fatal(err)
		}
		err := s.Input.Validate(v)
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", args, err, want)
		}
	}
}

// TestSchemaKeywordTypes: a descriptor schema with a keyword of the wrong
// JSON type is named by its place, not as encoding/json's Go type dump; a
// property named like a keyword is a property.
func TestSchemaKeywordTypes(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object","properties":{"a":{"minimum":"x"}}}`:            `properties.a.minimum: must be a number, got a string`,
		`{"type":"object","required":"a"}`:                                `required: must be an array of property names, got a string`,
		`{"type":"object","required":["a",1]}`:                            `required[1]: must be a property name (a string), got a number`,
		`{"type":"object","properties":{"a":{"maxLength":-1}}}`:           `properties.a.maxLength: must be a non-negative integer, got a number (-1)`,
		`{"type":"object","properties":{"a":{"maxItems":1.5}}}`:           `properties.a.maxItems: must be a non-negative integer, got a number (1.5)`,
		`{"type":"object","properties":{"a":{"pattern":5}}}`:              `properties.a.pattern: must be a string, got a number`,
		`{"type":"object","properties":{"a":{"enum":"x"}}}`:               `properties.a.enum: must be an array of the allowed values, got a string`,
		`{"type":"object","properties":"x"}`:                              `properties: must be an object of schemas, got a string`,
		`{"type":"object","properties":{"a":7}}`:                          `properties.a: must be a schema (an object or a boolean), got a number`,
		`{"type":"object","properties":{"a":{"items":{"type":"strin"}}}}`: `properties.a.items.type: unknown type "strin" (allowed: array, boolean, integer, null, number, object, string)`,
		`{"type":"object","anyOf":{"type":"object"}}`:                     `anyOf: must be an array of schemas, got an object`,
		`{"type":"object","properties":{"a":{"uniqueItems":"yes"}}}`:      `properties.a.uniqueItems: must be true or false, got a string`,
		`{"type":"object","properties":{"a":{"type":7}}}`:                 `properties.a.type: must be a type name or an array of them, got a number`,
	} {
		d := tool.Descriptor{Name: "x", Description: "d", InputSchema: json.RawMessage(schema)}
		_, err := CompileDescriptor(&d)
		if err == nil || !strings.Contains(err.Error(), "inputSchema: "+want) {
			t.Errorf("%s:\n got %v\nwant inputSchema: %s", schema, err, want)
		}
	}
	// Properties named like keywords, and data under enum/const/default.
	for _, ok := range []string{
		`{"type":"object","properties":{"minimum":{"type":"string"},"type":{"type":"string"},"required":{"type":"boolean"}}}`,
		`{"type":"object","properties":{"a":{"enum":[{"type":"strin"}],"default":{"minimum":"x"}}}}`,
		`{"type":"object","properties":{"a":{"items":[{"type":"string"},true]}}}`,
	} {
		d := tool.Descriptor{Name: "x", Description: "d", InputSchema: json.RawMessage(ok)}
		if _, err := CompileDescriptor(&d); err != nil {
			t.Errorf("%s: refused: %v", ok, err)
		}
	}
}

// FuzzReadableValidation: the rewrite never panics, never returns invalid
// UTF-8 from valid input, and keeps the message when it cannot parse it.
func FuzzReadableValidation(f *testing.F) {
	f.Add("validating root: validating /properties/count: minimum: 0/1 is less than 1.000000")
	f.Add("validating root: required: missing properties: [\"a\" \"b\"]")
	f.Add("validating root: validating /$defs/x/properties/y: type: 1 has type \"integer\", want one of [\"string\" \"null\"]")
	f.Add("validating /properties/a: oneOf: did not validate against any of [...]")
	f.Fuzz(func(t *testing.T, msg string) {
		got := readableValidation(msg, "argument")
		if utf8.ValidString(msg) && !utf8.ValidString(got) {
			t.Fatalf("%q -> invalid UTF-8 %q", msg, got)
		}
		if !strings.Contains(msg, "validating ") && !strings.Contains(got, msg) && !recognised(msg) {
			t.Fatalf("%q lost in %q", msg, got)
		}
	})
}

// recognised reports whether readableValidation rewrites msg's keyword.
func recognised(msg string) bool {
	for _, re := range []interface{ MatchString(string) bool }{typeMsg, boundMsg, lengthMsg, itemsMsg, enumMsg, constMsg, patternMsg, requiredMsg, additionalMsg} {
		if re.MatchString(msg) {
			return true
		}
	}
	return false
}
