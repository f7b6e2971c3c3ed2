package termsafe

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// hostile carries what a module might put in text that reaches a log line:
// a bidi override and isolate, a CSI sequence, a C1 CSI, a zero-width
// space, a Hangul filler (printable to strconv, so slog does not quote it),
// a carriage return.
const hostile = "a\u202eb\u2066c\x1b[31md\u009be\u200bf\u3164g\rh"

// TestHandlerEscapesEveryRecord: through Handler, no part of a record (the
// message, keys, strings, errors, other values, groups, WithAttrs and
// WithGroup) reaches the text handler's output raw; each shows escaped as
// Escape shows it, and safe values print as slog prints them.
func TestHandlerEscapesEveryRecord(t *testing.T) {
	for _, json := range []bool{false, true} {
		var buf bytes.Buffer
		var inner slog.Handler = slog.NewTextHandler(&buf, nil)
		if json {
			inner = slog.NewJSONHandler(&buf, nil)
		}
		log := slog.New(NewHandler(inner)).With("with", hostile).WithGroup("grp" + hostile)
		log.Warn("msg "+hostile,
			"str", hostile,
			"err", errors.New("load x.wasm: "+hostile),
			"list", []string{hostile, "ok"},
			slog.Group("g", "inner", hostile),
			"key"+hostile, 1,
			"safe", []string{"m1", "m2"},
			"n", 42)
		out := buf.String()
		for _, r := range out {
			if Hidden(r) && r != '\n' {
				t.Fatalf("json=%v: raw %U in the log line:\n%q", json, r, out)
			}
		}
		esc := Escape(hostile)
		// The text handler prints the escape as it is, the JSON one with
		// its backslash doubled.
		want := esc
		if json {
			want = strings.ReplaceAll(esc, `\`, `\\`)
		}
		if n := strings.Count(out, want); n < 8 {
			t.Errorf("json=%v: the escaped text appears %d times, want 8 (msg, with, group, str, err, list, g.inner, key):\n%s", json, n, out)
		}
		if !json && (!strings.Contains(out, "safe=\"[m1 m2]\"") && !strings.Contains(out, "safe=[m1 m2]") || !strings.Contains(out, "n=42")) {
			t.Errorf("safe values printed otherwise than slog prints them:\n%s", out)
		}
	}
}

// FuzzHandler: whatever text is logged as a message, key, group, string,
// error or other value, the text and JSON handlers behind Handler write
// no character a terminal would act on (but the line's final newline).
func FuzzHandler(f *testing.F) {
	f.Add(hostile)
	f.Add("plain")
	f.Add("\xff\xfe\u2028\u2029\x00")
	f.Fuzz(func(t *testing.T, s string) {
		for _, json := range []bool{false, true} {
			var buf bytes.Buffer
			var inner slog.Handler = slog.NewTextHandler(&buf, nil)
			if json {
				inner = slog.NewJSONHandler(&buf, nil)
			}
			slog.New(NewHandler(inner)).With(s, s).WithGroup(s).Info(s, s, s, "err", errors.New(s), "list", []string{s}, slog.Group(s, s, s))
			noRaw(t, strings.TrimSuffix(buf.String(), "\n"), false)
		}
	})
}
