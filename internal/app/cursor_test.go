package app

import (
	"encoding/base64"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	s := newCursorSigner()
	sealed := s.seal("symbols", `{"offset":50}`)
	state, err := s.open("symbols", sealed)
	if err != nil || state != `{"offset":50}` {
		t.Fatalf("open = %q, %v", state, err)
	}
	if _, err := s.open("references", sealed); err == nil {
		t.Fatal("a cursor opened for another tool")
	}
	if _, err := newCursorSigner().open("symbols", sealed); err == nil {
		t.Fatal("a cursor opened under another process's key")
	}
	raw, _ := base64.RawURLEncoding.DecodeString(sealed)
	raw[len(raw)-1] ^= 1
	if _, err := s.open("symbols", base64.RawURLEncoding.EncodeToString(raw)); err == nil {
		t.Fatal("an altered cursor opened")
	}
}

// FuzzCursorOpen: no input but a sealed cursor opens, and none panics.
func FuzzCursorOpen(f *testing.F) {
	s := newCursorSigner()
	f.Add("symbols", s.seal("symbols", "state"))
	f.Add("symbols", "")
	f.Add("x", "!!!not base64")
	f.Add("x", base64.RawURLEncoding.EncodeToString(make([]byte, 40)))
	f.Fuzz(func(t *testing.T, toolName, cursor string) {
		state, err := s.open(toolName, cursor)
		if err != nil {
			return
		}
		if s.seal(toolName, state) != cursor {
			t.Fatalf("opened %q for %q, which this signer did not seal", cursor, toolName)
		}
	})
}
