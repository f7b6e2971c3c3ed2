package fs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// FuzzServe feeds arbitrary requests to the capability. Whatever arrives, the
// answer is a reply or a *tool.Error of a guest-facing kind (never internal,
// never a panic), no reply or message carries secret content or a host path
// other than one the request itself named, and no file outside out/ changes.
func FuzzServe(f *testing.F) {
	for _, s := range []string{
		`{"op":"read","path":"src/a.go"}`, `{"op":"read","path":"src/toenv"}`,
		`{"op":"read","path":"docs/a.md","offset":1,"limit":1,"maxBytes":3}`,
		`{"op":"list","path":"src"}`, `{"op":"stat","path":"src/todocs"}`,
		`{"op":"glob","pattern":"**"}`, `{"op":"glob","pattern":"notes:*"}`,
		`{"op":"search","pattern":"SECRET|package","ignoreCase":true}`,
		`{"op":"search","pattern":"a","path":"src","glob":"*.go","maxFiles":1}`,
		`{"op":"write","path":"out/x","content":"eA==","encoding":"base64"}`,
		`{"op":"append","path":"out/linkedsrc/a.go","content":"x"}`,
		`{"op":"mkdir","path":"out/a/b"}`, `{"op":"remove","path":"out","recursive":true}`,
		`{"op":"remove","path":"out/linkedsrc"}`, `{"op":"read","path":"../../.ssh/id_ed25519"}`,
		`{"op":"read","path":"/proc/self/environ"}`, `{"op":"x"}`, `{}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	e := newEnv(f)
	protected := map[string][]byte{}
	for _, p := range []string{"src/a.go", "docs/a.md", "config/.env", "notes/todo.md"} {
		full := filepath.Join(e.proj, p)
		if p == "notes/todo.md" {
			full = filepath.Join(e.notes, "todo.md")
		}
		b, err := os.ReadFile(full)
		if err != nil {
			f.Fatal(err)
		}
		protected[full] = b
	}
	c := call("fuzz", []string{".", "notes:"}, []string{"out"})
	f.Fuzz(func(t *testing.T, raw []byte) {
		res, err := e.fs.Serve(context.Background(), c, raw)
		var req struct{ Path, Pattern string }
		json.Unmarshal(raw, &req)
		scrub := func(s string) string {
			for _, p := range []string{req.Path, req.Pattern} {
				if len(p) > 1 {
					s = strings.ReplaceAll(s, p, "")
				}
			}
			return s
		}
		if err != nil {
			te, ok := err.(*tool.Error)
			if !ok || te.Kind == tool.KindInternal || !te.Kind.Valid() {
				t.Fatalf("%s: error %T %v", raw, err, err)
			}
			e.noLeak(t, string(raw), scrub(te.Message))
			return
		}
		out, merr := json.Marshal(res)
		if merr != nil {
			t.Fatalf("%s: reply does not marshal: %v", raw, merr)
		}
		e.noLeak(t, string(raw), scrub(string(out)))
		for full, want := range protected {
			if got, err := os.ReadFile(full); err != nil || string(got) != string(want) {
				t.Fatalf("%s: changed %s", raw, full)
			}
		}
	})
}
