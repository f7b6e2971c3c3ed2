package guest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCause: whatever a guest writes to stderr, the quoted cause is one
// bounded line of valid UTF-8 without control characters.
func FuzzCause(f *testing.F) {
	f.Add("thread 'main' panicked at src/lib.rs:1:1:\nboom\nnote: run with `RUST_BACKTRACE=1`\n")
	f.Add("panic: x\n\ngoroutine 1 [running]:\n")
	f.Add("\x1b]0;title\x07\r\n\u202e")
	f.Fuzz(func(t *testing.T, stderr string) {
		c := Cause(stderr)
		if !utf8.ValidString(c) || strings.ContainsAny(c, "\n\r\x1b\x00\u202e") {
			t.Fatalf("Cause(%q) = %q", stderr, c)
		}
		if len(c) > maxCause*4+32 { // escapes may grow a byte to \xNN
			t.Fatalf("Cause(%q) is %d bytes", stderr, len(c))
		}
	})
}
