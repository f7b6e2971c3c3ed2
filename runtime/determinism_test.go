package runtime_test

import (
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestFuelDeterministic: the same call on the same input consumes the same
// fuel on every run and on both wazero engines, through the whole call path
// (snapshot restore included), for a standard-Go guest and a WAT one.
func TestFuelDeterministic(t *testing.T) {
	cases := []struct {
		name, args string
		wasm       []byte
	}{
		{"jq", `{"filter":"[.[] | select(. % 3 == 0)] | add","input":[1,2,3,4,5,6,7,8,9,10,11,12]}`, testwasm.BuildGo(t, "../tools-wasm/jq")},
		{"hash", `{"text":"the same bytes, every time","algorithms":["sha512"]}`, testwasm.BuildGo(t, "../tools-wasm/hash")},
		{"ping", `{}`, testwasm.WAT(t, "testdata/ping.wat")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var fuel []int64
			for _, interpreter := range []bool{false, true} {
				rt := newRuntime(t, runtime.Options{Interpreter: interpreter})
				tl := loadTool(t, rt, c.name, c.wasm, runtime.Limits{Isolation: runtime.IsolationCall})
				for range 3 {
					res := call(t, tl, c.args)
					if res.IsError {
						t.Fatal(res.Error)
					}
					fuel = append(fuel, res.Meta[tool.MetaFuel].(int64))
				}
			}
			for _, f := range fuel {
				if f != fuel[0] || f <= 0 {
					t.Fatalf("fuel per call (compiler x3, interpreter x3) = %v, want all equal and positive", fuel)
				}
			}
			t.Logf("%s: %d units per call on both engines", c.name, fuel[0])
		})
	}
}
