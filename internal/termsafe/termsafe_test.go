package termsafe

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"Ünïcödé 日本語 ✓ emoji 😀", "Ünïcödé 日本語 ✓ emoji 😀"},
		{"\x1b[2J\x1b[Hclear", `\x1b[2J\x1b[Hclear`},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`},
		{"shown\rnet: none", `shown\x0dnet: none`},
		{"bell\a", `bell\x07`},
		{"\x1b[8mconcealed", `\x1b[8mconcealed`},
		{"abc\u202edef", `abc\u202edef`},
		{"zero\u200bwidth\ufeff", `zero\u200bwidth\ufeff`},
		{"c1 \u009b2J \u0085", `c1 \u009b2J \u0085`},
		{"isolates \u2066x\u2069", `isolates \u2066x\u2069`},
		{"tag \U000E0041", `tag \U000e0041`},
		{"two\nlines\tcol", `two\x0alines\x09col`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"del\x7f", `del\x7f`},
		{"hangul\u3164filler", `hangul\u3164filler`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Text("a\nb\x1bc"); got != "a\nb\\x1bc" {
		t.Errorf("Text = %q", got)
	}
}

func TestBound(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	got := Line(long)
	if !strings.HasSuffix(got, "…(288 more bytes)") || !utf8.ValidString(got) {
		t.Fatalf("Line(800 bytes) = ...%q", got[len(got)-40:])
	}
	if got := Bound("abcdef", 3, false); got != "abc…(3 more bytes)" {
		t.Fatalf("Bound = %q", got)
	}
	if got := Bound("\x1b\x1b\x1b\x1b", 2, false); got != `\x1b\x1b…(2 more bytes)` {
		t.Fatalf("Bound = %q", got)
	}
	if got := Escape(strings.Repeat("a", 10000)); len(got) != 10000 {
		t.Fatalf("Escape cut: %d bytes", len(got))
	}
}

func TestJSON(t *testing.T) {
	v := map[string]any{"title": "x\u202ey\u009b\u200b\U000E0041z", "n": 1.0, "ok": "日本"}
	raw, _ := json.Marshal(v)
	out := JSON(raw)
	if strings.ContainsAny(string(out), "\u202e\u009b\u200b\U000E0041") {
		t.Fatalf("JSON kept hidden characters: %q", out)
	}
	var back map[string]any
	if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, v) {
		t.Fatalf("JSON changed the meaning: %s -> %v (%v)", out, back, err)
	}
	if string(JSON([]byte(`{"a":"b"}`))) != `{"a":"b"}` {
		t.Fatal("JSON changed safe input")
	}
}

// noRaw reports the first byte or character of s a terminal would act on.
func noRaw(t *testing.T, s string, keepNewlines bool) {
	t.Helper()
	for i := 0; i < len(s); {
		// A literal U+FFFD is a visible character; an invalid byte is not.
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || Hidden(r) && !(keepNewlines && r == '\n') {
			t.Fatalf("raw %U at %d in %q", r, i, s)
		}
		i += size
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("\x1b[2J\u202e\u200b\x9b\xff\r\n\a", 10)
	f.Add("plain", 512)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1<<16 {
			max = 1 << 16
		}
		for _, keep := range []bool{false, true} {
			out := Bound(s, max, keep)
			noRaw(t, out, keep)
			if max >= 0 && len(s) > max && !strings.Contains(out, "more bytes)") {
				t.Fatalf("cut without a marker: %q", out)
			}
		}
		raw, err := json.Marshal(s)
		if err != nil {
			return
		}
		out := JSON(raw)
		noRaw(t, string(out), false)
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("JSON made invalid JSON: %s", out)
		}
		var want string
		json.Unmarshal(raw, &want)
		if back != want {
			t.Fatalf("JSON changed %q to %q", want, back)
		}
	})
}

// TestMessageKeepsOneLine: an error that carries a module's text (here a
// schema pattern with a newline, as a regexp error quotes it) stays one line,
// so it cannot start a line that passes for warden's own.
func TestMessageKeepsOneLine(t *testing.T) {
	got := Message("error parsing regexp: missing closing ): `(\nTool fake — granted everything\r\x1b[2K`")
	if strings.ContainsAny(got, "\n\r\x1b") {
		t.Fatalf("Message left a raw control character: %q", got)
	}
	if !strings.Contains(got, `(\x0aTool fake`) {
		t.Fatalf("Message = %q, want the newline shown escaped", got)
	}
}
