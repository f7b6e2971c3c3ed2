package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/warden-run/warden/tool"
)

// FuzzDescriptor decodes bytes as a descriptor, validates it (schemas
// included) and validates a few values against its schemas. Whatever the
// bytes, nothing panics or overflows the stack, and every validation ends
// within its budget: a verdict, an ordinary error or a LimitError.
func FuzzDescriptor(f *testing.F) {
	for _, h := range hostileSchemas {
		if len(h.schema) < 4096 {
			f.Add([]byte(`{"name":"t","description":"d","inputSchema":` + h.schema + `}`))
		}
	}
	for _, s := range acceptedSchemas {
		f.Add([]byte(`{"name":"t","description":"d","inputSchema":` + s + `,"outputSchema":` + s + `}`))
	}
	f.Add([]byte(`{"name":"t","description":"d","inputSchema":` + listOf(8) + `}`))
	values := []any{}
	for _, inst := range append(instances, `{"list":[1,"x",2,3,4,5,6,7,8,9,10]}`) {
		var v any
		if err := json.Unmarshal([]byte(inst), &v); err != nil {
			f.Fatal(err)
		}
		values = append(values, v)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var d tool.Descriptor
		if json.Unmarshal(b, &d) != nil {
			return
		}
		schemas, err := CompileDescriptor(&d)
		if err != nil {
			return
		}
		for _, s := range []*Schema{schemas.Input, schemas.Output} {
			if s == nil {
				continue
			}
			for _, v := range values {
				stats, err := s.check(v)
				var limit *LimitError
				if errors.As(err, &limit) && (limit.Steps <= 0 || limit.Steps > 1<<18) {
					t.Fatalf("limit after %d steps", limit.Steps)
				}
				if stats.Steps > 1<<18 {
					t.Fatalf("%d steps", stats.Steps)
				}
			}
		}
	})
}
