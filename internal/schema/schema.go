// Package schema compiles and checks the JSON Schemas a tool declares (its
// inputSchema and outputSchema). It is the host's: the runtime validates a
// call's arguments and structured result against them, and the MCP server
// lists only tools whose schemas compile. The schemas themselves travel as
// raw JSON in tool.Descriptor, the wire contract guests build, so no guest
// links this package or the validator behind it (RATIONALE.md, "Schema
// validation is the host's, not the wire contract's").
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/warden-run/warden/internal/schema/internal/schemabound"
	"github.com/warden-run/warden/tool"
)

// Schema is a compiled tool schema (an inputSchema or outputSchema). A guest
// chooses it, so it is checked at load against the limits of docs/abi.md and
// every validation against it runs under a budget: a schema can make a
// validation fail, never crash or stall the host.
type Schema struct {
	resolved *jsonschema.Resolved
	graph    *schemabound.Graph
	// flat, when the schema has that shape, answers "valid" for most
	// values without the validator (flat.go).
	flat *flatSchema
	// noun names what the schema validates in errors: "argument" for an
	// input schema, "field" for an output schema ("value" when unset).
	noun string
}

// LimitError reports a value that would cost more to validate than a
// tool schema's budget allows. The value is neither valid nor invalid: it is
// refused unchecked.
type LimitError struct {
	// Reason says which bound, e.g. "more than 1048576 schema evaluation steps".
	Reason string
	// Steps is the work the bounding pre-pass did before it stopped.
	Steps int64
}

func (e *LimitError) Error() string { return e.Reason }

// maxReportBytes bounds the validator's error text kept in a call's error:
// it is meant for a model, which needs the first problems, not all of them.
const maxReportBytes = 8 << 10

// Schemas holds a descriptor's compiled schemas.
type Schemas struct {
	Input  *Schema
	Output *Schema // nil when the tool declares none
}

// CompileDescriptor checks d (tool.Descriptor.Validate) and compiles its
// schemas. Every problem is reported, each prefixed with the field it
// concerns, the schemas' after the other fields'.
func CompileDescriptor(d *tool.Descriptor) (*Schemas, error) {
	var errs []error
	if err := d.Validate(); err != nil {
		errs = append(errs, err)
	}
	var schemas Schemas
	var err error
	if len(d.InputSchema) > 0 {
		if schemas.Input, err = Compile(d.InputSchema); err == nil {
			schemas.Input.noun = "argument"
		} else {
			errs = append(errs, fmt.Errorf("inputSchema: %w", err))
		}
	}
	if len(d.OutputSchema) > 0 {
		if schemas.Output, err = Compile(d.OutputSchema); err != nil {
			errs = append(errs, fmt.Errorf("outputSchema: %w", err))
		} else {
			schemas.Output.noun = "field"
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &schemas, nil
}

// Compile parses and resolves a JSON Schema whose root must be an object
// schema, as MCP requires of tool input and output schemas. References are
// resolved only within the schema itself: loading one never touches the
// network. It refuses a schema past the limits of docs/abi.md ("Schema
// limits"), and one that jsonschema-go could not validate without recursing
// forever.
func Compile(raw json.RawMessage) (*Schema, error) {
	lim := schemabound.DefaultLimits()
	if err := schemabound.CheckRaw(raw, lim); err != nil {
		return nil, err
	}
	// Keywords of the wrong JSON type are named by their place in the
	// schema before encoding/json would report them as a Go type.
	var doc any
	var flat *flatSchema
	if err := json.Unmarshal(raw, &doc); err == nil {
		if err := checkSchemaDoc(doc, ""); err != nil {
			return nil, err
		}
		flat = newFlatSchema(doc)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("not a JSON Schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf(`root must have "type": "object", got %q`, s.Type)
	}
	g, err := schemabound.Analyse(&s, lim)
	if err != nil {
		return nil, err
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{
		Loader: func(uri *url.URL) (*jsonschema.Schema, error) {
			return nil, fmt.Errorf("external reference %s is not allowed", uri)
		},
	})
	if err != nil {
		return nil, err
	}
	return &Schema{resolved: resolved, graph: g, flat: flat}, nil
}

// Validate validates instance, a JSON value as encoding/json decodes it into
// any. It returns a *LimitError when validating instance would pass the
// schema's budget, and otherwise the validator's error (its text bounded).
func (s *Schema) Validate(instance any) error {
	_, err := s.check(instance)
	return err
}

func (s *Schema) check(instance any) (stats schemabound.Stats, err error) {
	if s.flat != nil && s.flat.valid(instance) {
		// One pass over the members, as bounded as the value itself.
		return stats, nil
	}
	return s.validate(instance)
}

// validate validates instance with jsonschema-go, under the budget.
func (s *Schema) validate(instance any) (stats schemabound.Stats, err error) {
	growCallStack(1)
	stats, err = s.graph.Check(instance)
	if err != nil {
		var le *schemabound.LimitError
		if errors.As(err, &le) {
			return stats, &LimitError{Reason: le.Reason, Steps: le.Steps}
		}
		return stats, err
	}
	defer func() {
		// The pre-pass bounds the recursion, so only a bug can panic here;
		// it must cost one call, not the process.
		if r := recover(); r != nil {
			err = fmt.Errorf("the schema validator failed: %v", r)
		}
	}()
	if err := s.resolved.Validate(instance); err != nil {
		noun := s.noun
		if noun == "" {
			noun = "value"
		}
		err = errors.New(readableValidation(err.Error(), noun))
		if msg := err.Error(); len(msg) > maxReportBytes {
			cut := maxReportBytes
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			return stats, fmt.Errorf("%s… (%d more bytes of errors)", msg[:cut], len(msg)-cut)
		}
		return stats, err
	}
	return stats, nil
}

// typeNames are the JSON Schema type names.
var typeNames = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

func quoteJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
