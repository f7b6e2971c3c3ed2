package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

var flatSeeds = []string{
	`{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"],"additionalProperties":false}`,
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
	`{"type":"object","title":"t","properties":{"a":{"type":"string","default":"x"},"b":{"type":"boolean","examples":[true]}},"additionalProperties":true}`,
	`{"type":"object","$schema":"https://json-schema.org/draft/2020-12/schema","required":["a","a"]}`,
	`{"type":"object"}`,
}

var flatInstances = []string{`{"text":"hi"}`, `{}`, `{"text":7}`, `{"text":null}`, `{"a":"x","b":false}`, `{"a":true}`,
	`{"text":"hi","extra":1}`, `[]`, `"text"`, `null`, `{"b":"yes"}`, `{"a":"x","a":"y"}`}

// TestFlatSchemaShape: which schemas take the single pass. Anything with an
// assertion besides a property's type, required and additionalProperties:
// false goes to the validator.
func TestFlatSchemaShape(t *testing.T) {
	for _, raw := range flatSeeds {
		s, err := Compile(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if s.flat == nil {
			t.Errorf("not flat: %s", raw)
		}
	}
	for _, raw := range []string{
		`{"type":"object","properties":{"n":{"type":"integer"}}}`,
		`{"type":"object","properties":{"s":{"type":"string","minLength":1}}}`,
		`{"type":"object","properties":{"s":{"type":"string","enum":["a"]}}}`,
		`{"type":"object","properties":{"s":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"s":{}}}`,
		`{"type":"object","properties":{"s":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","minProperties":1}`,
		`{"type":"object","properties":{"s":{"type":"string"}},"patternProperties":{"^x":{"type":"string"}}}`,
		`{"type":"object","allOf":[{"required":["s"]}]}`,
		`{"type":"object","not":{"required":["s"]}}`,
		`{"type":"object","properties":{"s":{"type":"string","const":"a"}}}`,
	} {
		s, err := Compile(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if s.flat != nil {
			t.Errorf("flat, but asserts more: %s", raw)
		}
	}
}

// TestFlatSchemaErrorsFromTheValidator: a value the single pass does not
// accept gets jsonschema-go's verdict, with the same readable errors as
// before.
func TestFlatSchemaErrorsFromTheValidator(t *testing.T) {
	d := tool.Descriptor{Name: "echo", Description: "d", InputSchema: json.RawMessage(flatSeeds[0])}
	schemas, err := CompileDescriptor(&d)
	if err != nil {
		t.Fatal(err)
	}
	if schemas.Input.flat == nil {
		t.Fatal("echo's input schema is not flat")
	}
	for instance, want := range map[string]string{
		`{}`:                     `missing required argument "text"`,
		`{"text":7}`:             `argument "text"`,
		`{"text":"a","extra":1}`: `unknown argument "extra"`,
	} {
		var v any
		if err := json.Unmarshal([]byte(instance), &v); err != nil {
			t.Fatal(err)
		}
		err := schemas.Input.Validate(v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error containing %q", instance, err, want)
		}
	}
	if err := schemas.Input.Validate(map[string]any{"text": "a"}); err != nil {
		t.Error(err)
	}
}

// FuzzFlatSchema: whatever the schema and the value, when the single pass
// accepts a value, jsonschema-go accepts it too (or, for a value too big
// for the validator's budget, refuses to judge it: the single pass is
// linear in the value, so it needs no budget).
func FuzzFlatSchema(f *testing.F) {
	for _, s := range flatSeeds {
		for _, i := range flatInstances {
			f.Add(s, i)
		}
	}
	f.Fuzz(func(t *testing.T, schema, instance string) {
		s, err := Compile(json.RawMessage(schema))
		if err != nil || s.flat == nil {
			return
		}
		var v any
		if json.Unmarshal([]byte(instance), &v) != nil {
			return
		}
		if !s.flat.valid(v) {
			return
		}
		if _, err := s.validate(v); err != nil && !errors.As(err, new(*LimitError)) {
			t.Fatalf("schema %s: the single pass accepts %s, the validator says %v", schema, instance, err)
		}
	})
}
