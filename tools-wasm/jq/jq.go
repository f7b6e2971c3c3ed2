package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/itchyny/gojq"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// Budgets. A filter can produce endless output (repeat, range(1e9)), so the
// tool stops pulling results once it has more than it could show; the bytes
// budgets keep one call's answer well under the host's default 1 MiB
// max_output even when single results are large.
const (
	maxScan       = 10000     // results evaluated at most, shown or not
	exploreBytes  = 64 << 10  // text shown in exploring mode
	focusedBytes  = 512 << 10 // text shown per page in focused mode
	maxInputBytes = 8 << 20
)

type jqTool struct{}

type jqArgs struct {
	Filter string          `json:"filter"`
	Input  json.RawMessage `json:"input"`
	Raw    bool            `json:"raw"`
	Vars   map[string]any  `json:"vars"`
}

type jqOutput struct {
	Results  []json.RawMessage `json:"results"`
	Overflow *warden.Overflow  `json:"overflow,omitempty"`
}

var yes = true

func (jqTool) Descriptor() tool.Descriptor {
	return tool.Descriptor{
		Name:  "jq",
		Title: "jq",
		Description: "Runs a jq filter over JSON and returns the results, one compact JSON value per line. " +
			"Use it to extract, reshape, count or search JSON without reading all of it. " +
			"Output is capped: omit detail_level for a quick look; use detail_level \"full\" with offset/limit to page through many results.",
		InputSchema: warden.WithPagination(json.RawMessage(`{
			"type": "object",
			"properties": {
				"filter": {"type": "string", "description": "A jq filter, e.g. '.items[] | select(.price > 10) | .name'."},
				"input": {"description": "The JSON to filter: any JSON value, or a string holding JSON text (several concatenated values are filtered one after another, as jq does)."},
				"raw": {"type": "boolean", "description": "Treat a string input as a plain string value instead of parsing it as JSON text."},
				"vars": {"type": "object", "description": "Variables for the filter: {\"name\": value} is available as $name."}
			},
			"required": ["filter", "input"],
			"additionalProperties": false
		}`)),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"results": {"type": "array"},
				"overflow": {"type": "object", "properties": {
					"shown": {"type": "integer"}, "total": {"type": "integer"},
					"hint": {"type": "string"}, "next_offset": {"type": "integer"}}}
			},
			"required": ["results"]
		}`),
		Annotations: &tool.Annotations{ReadOnlyHint: &yes, IdempotentHint: &yes},
		Version:     "1.0.0",
		Category:    "data",
		Tags:        []string{"json", "jq", "query"},
	}
}

func (jqTool) Call(ctx *warden.Context, raw json.RawMessage) (*tool.Result, error) {
	a, err := warden.Args[jqArgs](raw)
	if err != nil {
		return nil, err
	}
	guard, err := warden.NewGuard(raw)
	if err != nil {
		return nil, err
	}
	code, err := compile(a.Filter, a.Vars)
	if err != nil {
		return nil, err
	}
	inputs, err := decodeInputs(a.Input, a.Raw)
	if err != nil {
		return nil, err
	}
	out, err := run(code, inputs, a.Vars, guard)
	if err != nil {
		return nil, err
	}
	lines := make([]string, len(out.Results))
	for i, r := range out.Results {
		lines[i] = string(r)
	}
	text := strings.Join(lines, "\n")
	if out.Overflow != nil {
		o, _ := json.Marshal(out.Overflow)
		text += "\n# overflow: " + string(o)
	}
	return warden.WithStructured(warden.Text(text), out)
}

// compile parses and compiles filter with vars bound as $name.
func compile(filter string, vars map[string]any) (*gojq.Code, error) {
	if strings.TrimSpace(filter) == "" {
		return nil, warden.InvalidArguments(`argument "filter": must not be empty (use "." for the identity)`)
	}
	q, err := gojq.Parse(filter)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			return nil, warden.InvalidArguments("filter: %v (at byte %d)", err, pe.Offset)
		}
		return nil, warden.InvalidArguments("filter: %v", err)
	}
	names := make([]string, 0, len(vars))
	for _, name := range sortedKeys(vars) {
		names = append(names, "$"+name)
	}
	code, err := gojq.Compile(q, gojq.WithVariables(names),
		// The sandbox has no environment; say so rather than show an empty one.
		gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, warden.InvalidArguments("filter: %v", err)
	}
	return code, nil
}

// decodeInputs turns the input argument into the values the filter runs on.
// Numbers are kept as json.Number so that large integers survive.
func decodeInputs(input json.RawMessage, raw bool) ([]any, error) {
	if len(input) == 0 {
		return nil, warden.InvalidArguments(`argument "input": missing`)
	}
	if len(input) > maxInputBytes {
		return nil, warden.InvalidArguments(`argument "input": %d bytes, more than the %d allowed`, len(input), maxInputBytes)
	}
	values, err := decodeStream(input)
	if err != nil {
		return nil, warden.InvalidArguments(`argument "input": %v`, err)
	}
	s, isString := values[0].(string)
	if len(values) != 1 || !isString || raw {
		return values, nil
	}
	// A string is JSON text unless it does not parse as JSON, in which case
	// it is taken as the string it is (jq -R would be needed otherwise).
	if parsed, err := decodeStream([]byte(s)); err == nil {
		return parsed, nil
	}
	return values, nil
}

func decodeStream(data []byte) ([]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var values []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		return nil, errors.New("no JSON value")
	}
	return values, nil
}

// run evaluates code over inputs and pages the results with guard.
func run(code *gojq.Code, inputs []any, vars map[string]any, guard *warden.Guard) (*jqOutput, error) {
	varValues := make([]any, 0, len(vars))
	for _, name := range sortedKeys(vars) {
		varValues = append(varValues, vars[name])
	}
	// What to show: results [skip, skip+want) within budget bytes.
	skip, want := guard.Window()
	budget := exploreBytes
	if guard.Mode == warden.Focused {
		budget = focusedBytes
	}
	out := &jqOutput{Results: []json.RawMessage{}}
	total, used := 0, 0
	stoppedShowing := false // budget ran out before want was reached
	truncated := false      // scanning stopped early: total is a lower bound
scan:
	for _, input := range inputs {
		iter := code.Run(input, varValues...)
		for {
			v, ok := iter.Next()
			if !ok {
				break
			}
			if err, isErr := v.(error); isErr {
				var halt *gojq.HaltError
				if errors.As(err, &halt) && halt.Value() == nil {
					break scan // halt: stop without error
				}
				return nil, warden.InvalidArguments("jq: %v (after %d results)", err, total)
			}
			if total >= skip && len(out.Results) < want && !stoppedShowing {
				b, err := gojq.Marshal(v)
				if err != nil {
					return nil, warden.Failed("encode result %d: %v", total, err)
				}
				if used+len(b) > budget && len(out.Results) > 0 {
					stoppedShowing = true
				} else {
					used += len(b) + 1
					out.Results = append(out.Results, b)
				}
			}
			total++
			if total >= maxScan {
				truncated = true
				break scan
			}
		}
	}
	shown := len(out.Results)
	if shown == total && !truncated {
		return out, nil
	}
	o := &warden.Overflow{Shown: shown, Total: total}
	switch {
	case guard.Mode == warden.Exploring:
		o.Hint = `narrow the filter, or use detail_level "full" with offset/limit to page through all results`
	case skip+shown < total:
		next := skip + shown
		o.NextOffset = &next
		o.Hint = "call again with offset set to next_offset for the next page"
	default:
		o.Hint = "this is the last page"
	}
	if truncated {
		o.Hint = fmt.Sprintf("the filter produced at least %d results and was stopped there; %s", maxScan, o.Hint)
	}
	out.Overflow = o
	return out, nil
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
