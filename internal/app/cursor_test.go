package app

import (
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/warden-run/warden/config"
)

func TestCursorRoundTrip(t *testing.T) {
	s := newCursorSigner(nil)
	sealed := s.seal("symbols", `{"offset":50}`)
	state, err := s.open("symbols", sealed)
	if err != nil || state != `{"offset":50}` {
		t.Fatalf("open = %q, %v", state, err)
	}
	if _, err := s.open("references", sealed); err == nil {
		t.Fatal("a cursor opened for another tool")
	}
	if _, err := newCursorSigner(nil).open("symbols", sealed); err == nil {
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
	s := newCursorSigner(nil)
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

// TestCursorSharedKey: replicas configured with one server.state_key accept
// each other's cursors; a replica with another key refuses them, and the
// cursor key is not the requestState key.
func TestCursorSharedKey(t *testing.T) {
	key := config.Server{StateKey: base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))}
	cursorKey, stateKey, err := key.StateKeys()
	if err != nil || len(cursorKey) == 0 || string(cursorKey) == string(stateKey) {
		t.Fatalf("StateKeys = %x, %x, %v", cursorKey, stateKey, err)
	}
	replicaA, replicaB := newCursorSigner(cursorKey), newCursorSigner(cursorKey)
	sealed := replicaA.seal("symbols", "page 2")
	if state, err := replicaB.open("symbols", sealed); err != nil || state != "page 2" {
		t.Fatalf("replica B opening replica A's cursor: %q, %v", state, err)
	}
	other, _, _ := config.Server{StateKey: hex.EncodeToString([]byte("another key, also thirty-two bytes"))}.StateKeys()
	if _, err := newCursorSigner(other).open("symbols", sealed); err == nil {
		t.Fatal("a replica with another key opened the cursor")
	}
	if _, err := newCursorSigner(stateKey).open("symbols", sealed); err == nil {
		t.Fatal("the requestState key opened a cursor")
	}
}
