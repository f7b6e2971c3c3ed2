package references

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// pagingHost answers warden.lsp references as the capability does: at most
// 1000 locations per reply from "offset" on, with the list's total and
// truncated set when more follow. fs reads get a one-line file.
type pagingHost struct {
	n        int // references that exist
	requests int
}

func (h *pagingHost) Log(warden.Level, string) {}
func (h *pagingHost) Progress(tool.Progress)   {}
func (h *pagingHost) Capability(name string, req []byte) []byte {
	var r struct {
		Op     string
		Path   string
		Offset int
	}
	json.Unmarshal(req, &r)
	if name == "fs" {
		b, _ := json.Marshal(map[string]any{"result": map[string]any{"path": r.Path, "content": "package p\nfunc Target() {}\n"}})
		return b
	}
	h.requests++
	var locs []map[string]any
	for i := r.Offset; i < h.n && len(locs) < 1000; i++ {
		// 3 files: f0.go holds half, f1.go and f2.go a quarter each.
		file := fmt.Sprintf("f%d.go", max(i%4-1, 0))
		locs = append(locs, map[string]any{"path": file, "line": 2, "column": 6, "endLine": 2, "endColumn": 12})
	}
	if locs == nil {
		locs = []map[string]any{}
	}
	b, _ := json.Marshal(map[string]any{"result": map[string]any{
		"locations": locs, "total": h.n, "truncated": r.Offset+len(locs) < h.n}})
	return b
}

type outputJSON struct {
	References []Reference      `json:"references"`
	Files      []FileCount      `json:"files"`
	Overflow   *warden.Overflow `json:"overflow"`
}

func callRefs(t *testing.T, h *pagingHost, args string) (string, outputJSON) {
	t.Helper()
	res, err := Tool{}.Call(warden.NewContext("c", "", h), json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	var out outputJSON
	if err := json.Unmarshal(res.StructuredContent, &out); err != nil {
		t.Fatal(err)
	}
	return res.Content[0].Text, out
}

// TestReferencesPastTheCapabilityCap: 1711 references (gopls on wazero
// v1.12 found that many to one function; the tool used to stop at 1000 and
// call the list complete) are all counted, per file, in the structure and
// in the text, and focused paging reaches the last one.
func TestReferencesPastTheCapabilityCap(t *testing.T) {
	h := &pagingHost{n: 1711}
	text, out := callRefs(t, h, `{"path":"a.go","line":2,"column":6}`)
	if out.Overflow == nil || out.Overflow.Total != 1711 || out.Overflow.AtLeast || out.Overflow.Shown != exploreMax {
		t.Fatalf("overflow = %+v", out.Overflow)
	}
	want := []FileCount{{"f0.go", 856}, {"f1.go", 428}, {"f2.go", 427}}
	if fmt.Sprint(out.Files) != fmt.Sprint(want) {
		t.Fatalf("files = %v, want %v", out.Files, want)
	}
	for _, line := range []string{"# references per file (3 files):", "#   f0.go: 856", "#   f2.go: 427", `"total":1711`} {
		if !strings.Contains(text, line) {
			t.Fatalf("text lacks %q:\n%s", line, text[max(0, len(text)-600):])
		}
	}
	if h.requests != 2 {
		t.Fatalf("%d lsp requests for 1711 references, want 2", h.requests)
	}
	_, last := callRefs(t, h, `{"path":"a.go","line":2,"column":6,"detail_level":"full","offset":1700,"limit":50}`)
	if len(last.References) != 11 || last.Overflow == nil || last.Overflow.NextOffset != nil || last.Overflow.Hint != "this is the last page" {
		t.Fatalf("last page: %d references, overflow %+v", len(last.References), last.Overflow)
	}
}

// TestReferencesBeyondWhatIsFetched: a list longer than MaxFetched is
// reported as at least that many, on every page, never as complete.
func TestReferencesBeyondWhatIsFetched(t *testing.T) {
	h := &pagingHost{n: 25000}
	text, out := callRefs(t, h, `{"path":"a.go","line":2,"column":6}`)
	if out.Overflow == nil || !out.Overflow.AtLeast || out.Overflow.Total != 20000 ||
		!strings.Contains(out.Overflow.Hint, "there are more than the 20000 references warden could fetch, so this list is incomplete") {
		t.Fatalf("overflow = %+v", out.Overflow)
	}
	if !strings.Contains(text, `"at_least":true`) {
		t.Fatalf("text does not say the total is a lower bound:\n%s", text[max(0, len(text)-400):])
	}
	_, last := callRefs(t, h, `{"path":"a.go","line":2,"column":6,"detail_level":"full","offset":19990,"limit":50}`)
	if last.Overflow == nil || !last.Overflow.AtLeast || strings.Contains(last.Overflow.Hint, "last page") {
		t.Fatalf("the last fetched page reads as complete: %+v", last.Overflow)
	}
}
