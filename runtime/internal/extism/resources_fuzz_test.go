package extism

import (
	"encoding/json"
	"testing"

	"github.com/warden-run/warden/runtime/internal/guest"
)

// FuzzFeatureList: a plugin's list output is a JSON array or an error.
func FuzzFeatureList(f *testing.F) {
	f.Add([]byte(`{"resources":[{"uri":"a://b","name":"b"}],"nextCursor":"x"}`))
	f.Add([]byte(`{"resources":null}`))
	f.Add([]byte(`{"resources":{"a":1}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, out []byte) {
		list, err := ParseFeatureList(out, "resources")
		if err != nil {
			return
		}
		var items []json.RawMessage
		if json.Unmarshal(list, &items) != nil {
			t.Fatalf("accepted %q", list)
		}
	})
}

// FuzzOpInput: any native request converts or is refused, never panics.
func FuzzOpInput(f *testing.F) {
	f.Add([]byte(`{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"v"},"context":{"arguments":{"x":"y"}}}`))
	f.Add([]byte(`{"uri":"a://b","callId":"c"}`))
	f.Add([]byte(`{"name":"p","arguments":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, req []byte) {
		for _, op := range []guest.Op{guest.OpReadResource, guest.OpGetPrompt, guest.OpComplete} {
			params, _, err := OpInput(op, req)
			if err != nil {
				continue
			}
			if _, e := json.Marshal(params); e != nil {
				t.Fatalf("%s: params do not encode: %v", op, e)
			}
		}
	})
}
