package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/warden-run/warden/internal/schema/internal/schemabound"
	"github.com/warden-run/warden/tool"
)

// nestedAnyOf is levels of anyOf pairs through $defs: the validator's work
// on one value doubles with each level.
func nestedAnyOf(levels int) string {
	var defs []string
	for i := 0; i < levels; i++ {
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"a%d":{"type":"integer"}`, levels))
	return strings.Join(defs, ",")
}

// hostileSchemas are refused at load, each with a message that names the
// problem (want).
var hostileSchemas = []struct {
	name, schema, want string
}{
	{"allOf $ref root", `{"type":"object","allOf":[{"$ref":"#"}]}`, "form a cycle"},
	{"$defs a->b->a", `{"type":"object","$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}}}`, "#/$defs/a -($ref)-> #/$defs/b -(allOf/0)-> #/$defs/b/allOf/0 -($ref)-> #/$defs/a"},
	{"anyOf cycle", `{"type":"object","anyOf":[{"type":"string"},{"$ref":"#"}]}`, "form a cycle"},
	{"not cycle", `{"type":"object","$defs":{"x":{"not":{"$ref":"#/$defs/x"}}},"properties":{"p":{"$ref":"#/$defs/x"}}}`, "form a cycle"},
	{"if/then cycle via anchor", `{"type":"object","$defs":{"x":{"$anchor":"x","if":{"$ref":"#x"}}}}`, "form a cycle"},
	{"dependentSchemas cycle", `{"type":"object","dependentSchemas":{"a":{"$ref":"#"}}}`, "form a cycle"},
	{"draft 7 dependencies cycle", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","dependencies":{"a":{"$ref":"#"}}}`, "form a cycle"},
	{"cycle through pointer with ~1", `{"type":"object","properties":{"a/b":{"allOf":[{"$ref":"#/properties/a~1b"}]}}}`, "#/properties/a~1b -(allOf/0)-> #/properties/a~1b"},
	{"cycle with uppercase keyword", `{"type":"object","ALLOF":[{"$REF":"#"}]}`, "form a cycle"},
	{"exponential anyOf", `{"type":"object","$ref":"#/$defs/a0","$defs":{` + nestedAnyOf(40) + `}}`, "more than 262144 evaluation steps"},
	{"exponential anyOf unused by root", `{"type":"object","properties":{"x":{"$ref":"#/$defs/a0"}},"$defs":{` + nestedAnyOf(40) + `}}`, "#/$defs/a0: validating any single value"},
	{"$dynamicRef", `{"type":"object","$dynamicAnchor":"n","properties":{"c":{"$dynamicRef":"#n"}}}`, `"$dynamicRef" is not supported`},
	{"$recursiveRef", `{"type":"object","properties":{"c":{"$recursiveRef":"#"}}}`, `"$recursiveRef" (draft 2019-09) is not supported`},
	{"nested $id", `{"type":"object","properties":{"c":{"$id":"http://example.com/c","type":"string"}}}`, `"$id" "http://example.com/c" inside the schema is not supported`},
	{"external $ref", `{"type":"object","properties":{"c":{"$ref":"http://example.com/s.json"}}}`, "refers outside this schema"},
	{"$ref to absent keyword", `{"type":"object","properties":{"c":{"$ref":"#/not"}}}`, `"not": no such subschema`},
	{"$ref to non-schema", `{"type":"object","enum":[{}],"properties":{"c":{"$ref":"#/enum/0"}}}`, `"enum" is not a keyword holding a subschema`},
	{"$ref to missing anchor", `{"type":"object","properties":{"c":{"$ref":"#nope"}}}`, `no anchor "nope"`},
	{"unsupported $schema", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`, `$schema "http://json-schema.org/draft-04/schema#" is not supported`},
	{"too big", `{"type":"object","description":"` + strings.Repeat("x", 300<<10) + `"}`, "over the limit of 262144"},
	{"too deep JSON", `{"type":"object","const":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, "more than 256 deep"},
	{"nested too much", `{"type":"object"` + strings.Repeat(`,"not":{"type":"string"`, 40) + `,"enum":[` + strings.Repeat(`{"a":[1,2,3]},`, 9000) + `{}]` + strings.Repeat("}", 41), "objects' sizes add up to more than 4194304 bytes"},
	{"too deep schema", `{"type":"object"` + strings.Repeat(`,"not":{"type":"string"`, 130) + strings.Repeat("}", 131), "subschemas nest more than 128 deep"},
	{"too many subschemas", `{"type":"object","anyOf":[` + strings.TrimSuffix(strings.Repeat("true,", 10_001), ",") + `]}`, "more than 10000 subschemas"},
	{"in-place chain too long", `{"type":"object","$ref":"#/$defs/c0","$defs":{` + chain(300) + `}}`, "over the limit of 256"},
	{"pointer bytes", `{"type":"object","properties":{"` + strings.Repeat("k", 100<<10) + `":` + strings.Repeat(`{"not":`, 50) + `{}` + strings.Repeat("}", 50) + `}}`, "JSON pointers of its subschemas add up to more than"},
}

func chain(n int) string {
	var defs []string
	for i := 0; i < n; i++ {
		defs = append(defs, fmt.Sprintf(`"c%d":{"$ref":"#/$defs/c%d"}`, i, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"c%d":{}`, n))
	return strings.Join(defs, ",")
}

func TestCompileSchemaRefusesHostileSchemas(t *testing.T) {
	for _, tc := range hostileSchemas {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(json.RawMessage(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile = %v, want an error containing %q", err, tc.want)
			}
			if len(err.Error()) > 4096 {
				t.Errorf("error is %d bytes; a refusal must stay readable", len(err.Error()))
			}
		})
	}
}

// TestDescriptorValidateNamesTheSchema: the refusal says which schema.
func TestDescriptorValidateNamesTheSchema(t *testing.T) {
	d := tool.Descriptor{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","allOf":[{"$ref":"#"}]}`)}
	_, err := CompileDescriptor(&d)
	if err == nil || !strings.HasPrefix(err.Error(), "outputSchema: #: the in-place applicators form a cycle") {
		t.Fatalf("Validate = %v", err)
	}
}

// Schemas that recurse through the value, use anchors, pointers with
// escapes and draft 7 are accepted, and validate as jsonschema-go does.
var acceptedSchemas = []string{
	// A recursive tree: recursion descends into the value.
	`{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}},"required":["name"]}`,
	`{"type":"object","$defs":{"node":{"$anchor":"node","type":"object","properties":{"next":{"$ref":"#node"}}}},"properties":{"list":{"$ref":"#node"}}}`,
	`{"type":"object","properties":{"a/b":{"type":"integer"},"m~n":{"type":"string"},"c":{"$ref":"#/properties/a~1b"},"d":{"$ref":"#/properties/m~0n"},"e":{"$ref":"#/properties/a%7E1b"}}}`,
	`{"$id":"https://example.com/root.json","type":"object","properties":{"x":{"$ref":"https://example.com/root.json#/$defs/pos"},"y":{"$ref":"root.json#/$defs/pos"}},"$defs":{"pos":{"type":"number","minimum":0}}}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"s":{"$id":"#s","type":"string"}},"properties":{"a":{"$ref":"#s"},"b":{"items":[{"type":"integer"}],"additionalItems":{"type":"string"}}},"dependencies":{"a":["b"],"b":{"required":["a"]}}}`,
	`{"type":"object","properties":{"x":{"$ref":"#/$defs/a0"}},"$defs":{` + nestedAnyOf(8) + `}}`,
	`{"type":"object","additionalProperties":false,"properties":{"a":{"enum":[1,"x",{"k":[1,2]}]},"b":{"const":{"q":null}}},"patternProperties":{"^x-":{"type":"string","pattern":"^[a-z]+$","minLength":2}}}`,
	`{"type":"object","properties":{"l":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},"contains":{"const":3},"uniqueItems":true,"unevaluatedItems":false}},"unevaluatedProperties":{"type":"number"},"propertyNames":{"maxLength":3}}`,
	`{"type":"object","if":{"required":["a"]},"then":{"properties":{"a":{"type":"string"}}},"else":{"not":{"required":["b"]}},"oneOf":[{"required":["a"]},{"required":["c"]},true],"dependentSchemas":{"c":{"properties":{"c":false}}}}`,
}

var instances = []string{
	`{}`, `{"name":"x"}`, `{"name":"x","children":[{"name":"y","children":[]},{"nope":1}]}`,
	`{"list":{"next":{"next":{}}}}`, `{"list":{"next":{"next":3}}}`,
	`{"a/b":1,"m~n":"s","c":2,"d":"t","e":3}`, `{"c":"no"}`, `{"d":4}`, `{"e":"x"}`,
	`{"x":1,"y":2}`, `{"x":-1}`, `{"y":-1}`,
	`{"a":"s","b":[1,"x"]}`, `{"a":3}`, `{"b":[1,2]}`, `{"a":"s"}`,
	`{"x":5}`, `{"x":"s"}`,
	`{"a":1}`, `{"a":{"k":[1,2]}}`, `{"b":{"q":null}}`, `{"x-y":"ab"}`, `{"x-y":"A"}`, `{"z":1}`,
	`{"l":["s",1,3]}`, `{"l":["s",3,3]}`, `{"l":[1]}`, `{"abc":1.5}`, `{"abcd":1}`, `{"l":["s",1]}`,
	`{"a":"x","b":1}`, `{"c":1}`, `{"a":1}`, `{"b":1}`,
}

// TestAcceptedSchemasValidateAsJsonschemaGo is the differential test: on
// every schema the bound accepts, the verdict is jsonschema-go's own.
func TestAcceptedSchemasValidateAsJsonschemaGo(t *testing.T) {
	for i, raw := range acceptedSchemas {
		s, err := Compile(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("schema %d refused: %v\n%s", i, err, raw)
		}
		var plain jsonschema.Schema
		if err := json.Unmarshal([]byte(raw), &plain); err != nil {
			t.Fatal(err)
		}
		resolved, err := plain.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		valid := 0
		for _, inst := range instances {
			var v any
			if err := json.Unmarshal([]byte(inst), &v); err != nil {
				t.Fatal(err)
			}
			got, want := s.Validate(v), resolved.Validate(v)
			if (got == nil) != (want == nil) {
				t.Errorf("schema %d, instance %s: bounded %v, jsonschema-go %v", i, inst, got, want)
			}
			if got == nil {
				valid++
			}
		}
		if valid == 0 || valid == len(instances) {
			t.Errorf("schema %d: %d of %d instances valid; the differential needs both verdicts", i, valid, len(instances))
		}
	}
}

// TestRecursiveSchemaValidatesDeepValues: recursion through the value is
// bounded by the value's depth, refused past it with a typed error.
func TestRecursiveSchemaValidatesDeepValues(t *testing.T) {
	s, err := Compile(json.RawMessage(acceptedSchemas[1]))
	if err != nil {
		t.Fatal(err)
	}
	nest := func(depth int, leaf string) any {
		doc := strings.Repeat(`{"next":`, depth) + leaf + strings.Repeat("}", depth)
		var v any
		if err := json.Unmarshal([]byte(`{"list":`+doc+`}`), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := s.Validate(nest(100, "{}")); err != nil {
		t.Errorf("depth 100: %v", err)
	}
	if err := s.Validate(nest(100, "1")); err == nil {
		t.Error("depth 100 with a bad leaf validated")
	}
	var limit *LimitError
	if err := s.Validate(nest(200, "{}")); !errors.As(err, &limit) || !strings.Contains(limit.Reason, "nests more than 128 levels") {
		t.Errorf("depth 200: %v, want a LimitError", err)
	}
}

// listOf is a schema whose every item costs about 2^levels evaluations.
func listOf(levels int) string {
	return `{"type":"object","properties":{"list":{"type":"array","items":{"$ref":"#/$defs/a0"}}},"$defs":{` + nestedAnyOf(levels) + `}}`
}

func list(n int) any {
	items := make([]any, n)
	for i := range items {
		items[i] = "not an integer"
	}
	return map[string]any{"list": items}
}

// TestExponentialValidationStopsWithinBudget: a schema that is cheap per
// value but multiplied by a long list is refused by the pre-pass, which
// stopped after at most the budget's steps, before jsonschema-go ran.
func TestExponentialValidationStopsWithinBudget(t *testing.T) {
	s, err := Compile(json.RawMessage(listOf(8)))
	if err != nil {
		t.Fatal(err)
	}
	budget := schemabound.DefaultLimits().Budget
	if err := s.Validate(list(10)); err == nil || errors.As(err, new(*LimitError)) {
		t.Fatalf("10 items: %v, want an ordinary mismatch", err)
	}
	_, err = s.check(list(5000))
	var limit *LimitError
	if !errors.As(err, &limit) {
		t.Fatalf("5000 items: %v, want a LimitError", err)
	}
	if limit.Reason != fmt.Sprintf("more than %d schema evaluation steps", budget) {
		t.Errorf("reason %q", limit.Reason)
	}
	if limit.Steps <= 0 || limit.Steps > budget {
		t.Errorf("the pre-pass made %d steps; want 1..%d", limit.Steps, budget)
	}
	t.Logf("refused after %d pre-pass steps (budget %d)", limit.Steps, budget)
}

// TestExponentialSchemaWithoutLoadCheck runs the pre-pass on the 40-level
// schema the load check refuses, as a second line of defence: it stops
// within the budget.
func TestExponentialSchemaWithoutLoadCheck(t *testing.T) {
	lim := schemabound.DefaultLimits()
	lim.Budget = 1 << 62 // let Analyse accept it
	var s jsonschema.Schema
	raw := `{"type":"object","$ref":"#/$defs/a0","$defs":{` + nestedAnyOf(40) + `}}`
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	g, err := schemabound.Analyse(&s, lim)
	if err != nil {
		t.Fatal(err)
	}
	g.SetBudget(1 << 18)
	st, err := g.Check(map[string]any{})
	var le *schemabound.LimitError
	if !errors.As(err, &le) || le.Steps > 1<<18 || le.Steps <= 0 {
		t.Fatalf("Check = %+v, %v", st, err)
	}
	t.Logf("stopped after %d steps", le.Steps)
}

// TestEveryChildField: eachChild must know every subschema field of
// jsonschema.Schema, or a new one would escape the analysis.
func TestEveryChildField(t *testing.T) {
	schemaT := reflect.TypeFor[*jsonschema.Schema]()
	known := map[string]bool{}
	for _, f := range []string{"Defs", "Definitions", "DependencySchemas", "PrefixItems", "Items", "ItemsArray",
		"AdditionalItems", "Contains", "UnevaluatedItems", "Properties", "PatternProperties", "AdditionalProperties",
		"PropertyNames", "UnevaluatedProperties", "AllOf", "AnyOf", "OneOf", "Not", "If", "Then", "Else",
		"DependentSchemas", "ContentSchema"} {
		known[f] = true
	}
	for _, f := range reflect.VisibleFields(schemaT.Elem()) {
		switch f.Type {
		case schemaT, reflect.TypeFor[[]*jsonschema.Schema](), reflect.TypeFor[map[string]*jsonschema.Schema]():
			if !known[f.Name] {
				t.Errorf("jsonschema.Schema.%s holds subschemas the bound does not walk", f.Name)
			}
		}
	}
}

// TestValidatorRecursionIsBounded: a chain of 200 in-place references
// (under the chain limit) that recurses through the value multiplies the
// validator's depth by the value's; past 2048 frames the value is refused
// before jsonschema-go recurses.
func TestValidatorRecursionIsBounded(t *testing.T) {
	var defs []string
	for i := 0; i < 200; i++ {
		defs = append(defs, fmt.Sprintf(`"c%d":{"$ref":"#/$defs/c%d"}`, i, i+1))
	}
	defs = append(defs, `"c200":{"type":"object","properties":{"c":{"$ref":"#/$defs/c0"}}}`)
	s, err := Compile(json.RawMessage(`{"type":"object","properties":{"c":{"$ref":"#/$defs/c0"}},"$defs":{` + strings.Join(defs, ",") + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	nest := func(depth int) any {
		var v any = map[string]any{}
		for range depth {
			v = map[string]any{"c": v}
		}
		return v
	}
	if err := s.Validate(nest(5)); err != nil {
		t.Fatalf("depth 5: %v", err)
	}
	_, err = s.check(nest(20))
	var limit *LimitError
	if !errors.As(err, &limit) || limit.Reason != "schema evaluations nest more than 2048 deep" {
		t.Fatalf("depth 20: %v", err)
	}
}

// TestCompileSchemaRefusesUnknownTypeNames: a type name that is no JSON
// Schema type is refused naming the field; a property named "type" and
// type names inside enum or const are not type keywords.
func TestCompileSchemaRefusesUnknownTypeNames(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"type":"strin"}}}`,
			`properties.a.type: unknown type "strin" (allowed: array, boolean, integer, null, number, object, string)`},
		{`{"type":"object","properties":{"a":{"type":["string","nul"]}}}`,
			`properties.a.type: unknown type "nul" (allowed: array, boolean, integer, null, number, object, string)`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"int"}}}}`,
			`properties.a.items.type: unknown type "int" (allowed: array, boolean, integer, null, number, object, string)`},
		{`{"type":"object","properties":{"type":{"type":"string","enum":["strin"]},"b":{"const":{"type":"x"}}}}`, ""},
	} {
		_, err := Compile(json.RawMessage(tc.schema))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.schema, got, tc.want)
		}
	}
}
