package app

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
)

// cursorSigner seals the continuation cursors tools hand out, so that a
// client (or another tool) cannot forge or alter one: a cursor is the
// tool's own opaque state plus an HMAC over the tool name and that state.
// The key comes from server.state_key (derived, see config.Server.StateKeys),
// so that replicas sharing it accept each other's cursors; unset, it is
// random per process and cursors do not survive a restart, which matches
// their purpose: continuing a listing now, not bookmarking it.
type cursorSigner struct{ key []byte }

// newCursorSigner signs with key, or with a random key when key is empty.
func newCursorSigner(key []byte) *cursorSigner {
	if len(key) > 0 {
		return &cursorSigner{key: append([]byte(nil), key...)}
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		panic("crypto/rand failed: " + err.Error()) // the platform is broken beyond repair
	}
	return &cursorSigner{key: key}
}

func (s *cursorSigner) mac(toolName, state string) []byte {
	h := hmac.New(sha256.New, s.key)
	h.Write([]byte(toolName))
	h.Write([]byte{0})
	h.Write([]byte(state))
	return h.Sum(nil)
}

func (s *cursorSigner) seal(toolName, state string) string {
	return base64.RawURLEncoding.EncodeToString(append(s.mac(toolName, state), state...))
}

var errBadCursor = errors.New("cursor is not one this server issued for this tool (it may be from before a restart)")

func (s *cursorSigner) open(toolName, cursor string) (string, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	if err != nil || len(raw) < sha256.Size {
		return "", errBadCursor
	}
	mac, state := raw[:sha256.Size], string(raw[sha256.Size:])
	if !hmac.Equal(mac, s.mac(toolName, state)) {
		return "", errBadCursor
	}
	return state, nil
}
