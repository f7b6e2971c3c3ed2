package lsptool

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/tool"
)

// fakeHost serves warden.fs reads from a map of files.
type fakeHost struct {
	files map[string]string
	reads int
}

func (h *fakeHost) Log(warden.Level, string) {}
func (h *fakeHost) Progress(tool.Progress)   {}
func (h *fakeHost) Capability(name string, req []byte) []byte {
	var r struct{ Op, Path string }
	json.Unmarshal(req, &r)
	content, ok := h.files[r.Path]
	if name != "fs" || r.Op != "read" || !ok {
		return []byte(`{"error":{"kind":"not_found","message":"no such file"}}`)
	}
	h.reads++
	reply := map[string]any{"path": r.Path, "content": content}
	if !utf8.ValidString(content) { // as warden.fs does
		reply["content"], reply["encoding"] = base64.StdEncoding.EncodeToString([]byte(content)), "base64"
	}
	b, _ := json.Marshal(map[string]any{"result": reply})
	return b
}

func kindOf(err error) tool.Kind { return tool.KindOf(err) }

func TestResolveColumn(t *testing.T) {
	h := &fakeHost{files: map[string]string{"a.go": "package a\nvar Grüße, Ü, xÜ, Ü2, Ü = 1, 2, 3, 4, 5\n\tn += Hot() + hot + Hotter()\n"}}
	src := NewSources(warden.NewContext("c", "", h))
	for _, c := range []struct {
		line, column int
		name         string
		want         int
		kind         tool.Kind
	}{
		{2, 9, "", 9, ""},        // a column wins, unchecked
		{2, 0, "Grüße", 5, ""},   // bytes, 1-based
		{2, 0, "Ü", 14, ""},      // after a 7-byte name
		{3, 0, "Hot", 7, ""},     // tab counts one byte
		{3, 0, "Hotter", 21, ""}, // not the prefix of a longer word
		{3, 0, "ot", 0, tool.KindInvalidArguments},
		{2, 0, "", 0, tool.KindInvalidArguments},
		{4, 0, "x", 0, tool.KindInvalidArguments}, // the empty last line
		{9, 0, "x", 0, tool.KindInvalidArguments},
	} {
		got, err := ResolveColumn(src, "a.go", c.line, c.column, c.name)
		if got != c.want || kindOf(err) != c.kind {
			t.Errorf("ResolveColumn(%d, %d, %q) = %d, %v; want %d, kind %q", c.line, c.column, c.name, got, err, c.want, c.kind)
		}
	}
	// Ü at 14 is the first whole word: xÜ and Ü2 are skipped on the way to the last.
	if h.reads != 1 {
		t.Fatalf("a.go read %d times, want once per call", h.reads)
	}
	if _, err := ResolveColumn(src, "missing.go", 1, 0, "x"); kindOf(err) != tool.KindNotFound {
		t.Fatalf("missing file: %v", err)
	}
	if got := src.Line("a.go", 3); got != "n += Hot() + hot + Hotter()" {
		t.Fatalf("Line = %q", got)
	}
	if got := Clip("Grüße", 5); got != "Grü…" { // ß would end past byte 5
		t.Fatalf("Clip = %q", got)
	}
}

func TestPagerCursor(t *testing.T) {
	type q struct{ Path string }
	items := make([]int, 23)
	for i := range items {
		items[i] = i
	}
	ctx := warden.NewContext("c", "", nil)
	args := json.RawMessage(`{"path":"a.go","detail_level":"full","limit":10}`)
	p, err := NewPager(ctx, args, q{"a.go"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	page, o, next := Page(p, items, "narrow it")
	if len(page) != 10 || o == nil || *o.NextOffset != 10 || next != `{"q":{"Path":"a.go"},"o":10,"l":10}` {
		t.Fatalf("first page: %v %+v %q", page, o, next)
	}
	// The continuation takes offset, limit and mode from the cursor, not
	// from the arguments.
	var pages [][]int
	for next != "" {
		p, err := NewPager(warden.NewContext("c", next, nil), json.RawMessage(`{"path":"a.go","offset":0,"limit":3}`), q{"a.go"}, 5)
		if err != nil {
			t.Fatal(err)
		}
		page, o, next = Page(p, items, "narrow it")
		pages = append(pages, page)
		if next == "" && (o.NextOffset != nil || o.Hint != "this is the last page") {
			t.Fatalf("last page overflow %+v", o)
		}
	}
	if len(pages) != 2 || pages[0][0] != 10 || len(pages[1]) != 3 || pages[1][2] != 22 {
		t.Fatalf("pages = %v", pages)
	}
	// Exploring: capped at maxResults, no cursor.
	p, _ = NewPager(ctx, json.RawMessage(`{}`), q{"a.go"}, 5)
	page, o, next = Page(p, items, "narrow it")
	if len(page) != 5 || o.NextOffset != nil || next != "" || !strings.HasPrefix(o.Hint, "narrow it; or use detail_level \"full\"") || !strings.HasSuffix(o.Hint, "all 23 results") {
		t.Fatalf("exploring: %v %+v %q", page, o, next)
	}
	// A cursor of another query, or of another format, is refused.
	for cursor, want := range map[string]string{
		`{"q":{"Path":"b.go"},"o":10,"l":10}`: "continues a different query",
		`{"q":{"Path":"a.go"},"o":-1,"l":10}`: "not a cursor of this tool's version",
		`{"q":{"Path":"a.go"},"o":1,"l":0}`:   "not a cursor of this tool's version",
		`[1]`:                                 "not a cursor of this tool's version",
	} {
		_, err := NewPager(warden.NewContext("c", cursor, nil), args, q{"a.go"}, 5)
		if kindOf(err) != tool.KindInvalidArguments || !strings.Contains(err.Error(), want) {
			t.Errorf("cursor %s: %v, want invalid_arguments %q", cursor, err, want)
		}
	}
}

// FuzzResolveColumn checks that any line and name either resolve to a
// column where the name really is, or fail as invalid_arguments.
func FuzzResolveColumn(f *testing.F) {
	f.Add("var Grüße, Ünit = 1, 2", "Ünit", 1)
	f.Add("\tn += Hot() + Hotter()", "Hotter", 1)
	f.Add("xx", "x", 3)
	f.Add("a\xffb", "b", 1)
	f.Fuzz(func(t *testing.T, text, name string, line int) {
		h := &fakeHost{files: map[string]string{"a.go": text}}
		src := NewSources(warden.NewContext("c", "", h))
		if line < 1 {
			line = 1
		}
		col, err := ResolveColumn(src, "a.go", line, 0, name)
		if err != nil {
			if kindOf(err) != tool.KindInvalidArguments {
				t.Fatalf("error of kind %s: %v", kindOf(err), err)
			}
			return
		}
		l := strings.Split(text, "\n")[line-1]
		if col < 1 || !strings.HasPrefix(l[col-1:], name) || name == "" {
			t.Fatalf("column %d for %q in %q", col, name, l)
		}
	})
}

// FuzzCursor checks that no cursor state makes NewPager panic or accept a
// page outside the list.
func FuzzCursor(f *testing.F) {
	f.Add(`{"q":{"Path":"a.go"},"o":10,"l":10}`)
	f.Add(`{"q":{"Path":"a.go"},"o":99999999999,"l":1}`)
	f.Add(`{"q":{"Path":"a.go"},"o":0,"l":1e9}`)
	f.Add(`{"q":null}`)
	f.Fuzz(func(t *testing.T, cursor string) {
		p, err := NewPager(warden.NewContext("c", cursor, nil), json.RawMessage(`{"path":"a.go"}`), struct{ Path string }{"a.go"}, 5)
		if err != nil {
			if kindOf(err) != tool.KindInvalidArguments {
				t.Fatalf("error of kind %s: %v", kindOf(err), err)
			}
			return
		}
		page, _, _ := Page(p, []int{1, 2, 3}, "x")
		if len(page) > 3 {
			t.Fatalf("page of %d items from 3", len(page))
		}
	})
}
