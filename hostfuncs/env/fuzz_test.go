package env

import "testing"

// FuzzDecode checks the request parser: it never panics, and accepts only
// get with a valid key or list with none.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"op":"get","key":"API_TOKEN"}`, `{"op":"list"}`, `{"op":"get","key":"A=B"}`, `{}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := decode(raw)
		if err != nil {
			return
		}
		if !(req.Op == "get" && validKey(req.Key) || req.Op == "list" && req.Key == "") {
			t.Fatalf("accepted %+v", req)
		}
	})
}
