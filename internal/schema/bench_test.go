package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// bundled are the schemas of bundled tools (echo, jq with pagination) and
// a typical value for each.
var bundled = []struct{ name, schema, value string }{
	{"echo_in", `{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"],"additionalProperties":false}`,
		`{"text":"hello, world"}`},
	{"echo_out", `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`, `{"text":"hello, world"}`},
	{"jq_in", `{"type":"object","properties":{"filter":{"type":"string"},"input":{},"raw":{"type":"boolean"},"vars":{"type":"object"},
	  "offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1},"detail_level":{"type":"string","enum":["summary","full"]}},"required":["filter","input"]}`,
		`{"filter":".items[] | .name","input":{"items":[{"name":"a","price":1},{"name":"b","price":2},{"name":"c","price":3}]},"limit":10,"detail_level":"full"}`},
	{"jq_out", `{"type":"object","properties":{"results":{"type":"array"},"overflow":{"type":"object","properties":{"shown":{"type":"integer"},"total":{"type":"integer"},"hint":{"type":"string"},"next_offset":{"type":"integer"}}}},"required":["results"]}`,
		`{"results":["\"a\"","\"b\"","\"c\""],"overflow":{"shown":3,"total":30,"hint":"use offset","next_offset":3}}`},
}

// BenchmarkBundled compares jsonschema-go's Validate alone (plain) with
// the bounded Validate (pre-pass + Validate) on the bundled schemas.
func BenchmarkBundled(b *testing.B) {
	for _, tc := range bundled {
		var v any
		if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
			b.Fatal(err)
		}
		bounded, err := Compile(json.RawMessage(tc.schema))
		if err != nil {
			b.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(tc.schema), &s); err != nil {
			b.Fatal(err)
		}
		plain, err := s.Resolve(nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name+"/plain", func(b *testing.B) {
			for b.Loop() {
				if err := plain.Validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/bounded", func(b *testing.B) {
			for b.Loop() {
				if err := bounded.Validate(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// budgetMax returns the longest list the costly schema still validates
// within the budget: the most expensive validation the bound lets run.
func budgetMax(tb testing.TB, s *Schema) any {
	lo, hi := 1, 1
	for {
		if _, err := s.check(list(hi)); errors.As(err, new(*LimitError)) {
			break
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if _, err := s.check(list(mid)); errors.As(err, new(*LimitError)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return list(lo)
}

// BenchmarkBudgetMax times the costliest validation the budget admits, on
// an error-heavy schema (anyOf failures build long error text) and on a
// flat one (a long list of objects that validate).
func BenchmarkBudgetMax(b *testing.B) {
	for _, levels := range []int{4, 8} {
		s, err := Compile(json.RawMessage(listOf(levels)))
		if err != nil {
			b.Fatal(err)
		}
		v := budgetMax(b, s)
		st, _ := s.check(v)
		b.Run("anyOf"+string(rune('0'+levels)), func(b *testing.B) {
			b.ReportMetric(float64(st.Cost), "units")
			for b.Loop() {
				if err := s.Validate(v); err == nil || errors.As(err, new(*LimitError)) {
					b.Fatal(err)
				}
			}
		})
	}
	flat, err := Compile(json.RawMessage(`{"type":"object","properties":{"list":{"type":"array","items":{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	var v any
	for n := 1000; ; n += 1000 {
		items := make([]any, n)
		for i := range items {
			items[i] = map[string]any{"a": 1.0, "b": "x"}
		}
		next := map[string]any{"list": items}
		if _, err := flat.check(next); err != nil {
			break
		}
		v = next
	}
	st, _ := flat.check(v)
	b.Run("flat", func(b *testing.B) {
		b.ReportMetric(float64(st.Cost), "units")
		for b.Loop() {
			if err := flat.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}
