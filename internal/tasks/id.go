package tasks

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/warden-run/warden/internal/principal"
)

// idBytes is the randomness of a task id: 128 bits, so that an id is
// never guessed, and the id alone (which a client holds) names one task.
const idBytes = 16

// IDLen is the length of every task id.
const IDLen = 2 * idBytes

// ErrBadID is ParseID's error: the text is not a task id warden makes.
var ErrBadID = errors.New("not a task id")

// NewID returns a fresh task id: 128 random bits as 32 lowercase hex
// digits. Hex, not base64: the file store names a file by the id, and a
// file system that ignores case must not merge two ids.
func NewID() string {
	var b [idBytes]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return hex.EncodeToString(b[:])
}

// ParseID returns s when it is an id NewID could have made, and ErrBadID
// otherwise. An id comes from a client: nothing else reaches a store, a
// file name or a log line.
func ParseID(s string) (string, error) {
	if len(s) != IDLen {
		return "", ErrBadID
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", ErrBadID
		}
	}
	return s, nil
}

// PeerHTTP is the peer of an HTTP request served without authentication
// (loopback only) that has no MCP session: see HTTPPeer.
const PeerHTTP = "http"

// maxSessionID bounds the session id HTTPPeer puts in an owner key.
const maxSessionID = 256

// HTTPPeer is the peer to pass OwnerOf for an HTTP request served without
// authentication (loopback only), given its Mcp-Session-Id header:
//
//   - a request of an MCP session (2025-11-25 streamable HTTP) is its
//     session's: "http:<session id>". The server chose the id at
//     initialize, at random, and told it only that client, so each
//     session's tasks are its own, as a stdio client's are.
//   - a request without a session (the stateless 2026-07-28 transport), or
//     with a header that is no session id (empty, longer than 256 bytes,
//     or holding anything but visible ASCII, as the transport's spec
//     defines one), is PeerHTTP's. Such clients are indistinguishable:
//     their owner key is UnlistedOwner, whose tasks only their id (128
//     random bits, returned only to the client that created the task)
//     reaches; List answers that owner nothing.
//
// The protocol calls OwnerOf(principal.Local, HTTPPeer(r.Header.Get(
// "Mcp-Session-Id"))) for such a request; an authenticated request's peer
// does not matter.
func HTTPPeer(sessionID string) string {
	if sessionID == "" || len(sessionID) > maxSessionID {
		return PeerHTTP
	}
	for i := range len(sessionID) {
		if c := sessionID[i]; c < 0x21 || c > 0x7e {
			return PeerHTTP
		}
	}
	return PeerHTTP + ":" + sessionID
}

// UnlistedOwner is the owner key of every unauthenticated HTTP request
// without a session (see HTTPPeer): a Store's List answers it nothing, so
// that no such client learns another's task ids or results.
const UnlistedOwner = "local:" + PeerHTTP

// listable reports whether List answers owner: UnlistedOwner and an owner
// Create refuses (not text) list nothing.
func listable(owner string) bool { return owner != UnlistedOwner && textField(owner) }

// OwnerOf returns the owner key of the tasks p creates: the key a Store
// files them under and answers them to. Two principals never share a key:
//
//   - an OAuth token's issuer and subject, as
//     "oauth:<len(issuer)>:<issuer>:<subject>" (the length, not a separator,
//     ends the issuer, so no subject can pose as another issuer's);
//   - the static bearer token's holder, as "token" (one token, one holder);
//   - a local caller, as "local:<peer>".
//
// peer matters only for a local caller. It names the connection's other
// end as long as the server can tell it: a stdio server has exactly one
// client, the process that started it, so its peer is a value fixed for
// the server process's life (a NewID made at start) and a task belongs to
// that process's client only; tasks of an earlier stdio process stay
// readable to the operator (`warden tasks`), not to the next client. HTTP
// without authentication is served on loopback only; its peer is
// HTTPPeer's: the request's MCP session, or for a request without one
// PeerHTTP, whose tasks only their ids reach (UnlistedOwner).
func OwnerOf(p principal.Principal, peer string) string {
	switch p.Via {
	case principal.ViaToken:
		return "token"
	case principal.ViaLocal:
		return "local:" + peer
	case principal.ViaOAuth:
		return "oauth:" + strconv.Itoa(len(p.Issuer)) + ":" + p.Issuer + ":" + p.Subject
	}
	// No other way exists today; one added later gets keys of its own.
	return "via:" + strconv.Itoa(len(p.Via)) + ":" + p.Via + ":" + strconv.Itoa(len(p.Issuer)) + ":" + p.Issuer + ":" + p.Subject
}

// ErrBadCursor is a List cursor that no List returned.
var ErrBadCursor = errors.New("invalid task list cursor")

// cursorVersion starts every cursor, so that a later format can tell its
// own cursors from these.
const cursorVersion = "t1"

// maxCursor bounds the cursor text parseCursor looks at.
const maxCursor = 128

// maxCursorTime is the latest Created a cursor may name.
var maxCursorTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)

// position is where a page ends: the last task listed, in List's order
// (Created, then ID).
type position struct {
	created time.Time
	id      string
}

// after reports whether t comes after p in List's order.
func (p position) after(t *Task) bool {
	return t.Created.After(p.created) || t.Created.Equal(p.created) && t.ID > p.id
}

// encodeCursor is the opaque cursor of the page after t. Both stores
// write and read the same cursor, so that a page listed by one replica
// continues on another.
func encodeCursor(t *Task) string {
	raw := cursorVersion + "." + strconv.FormatInt(t.Created.UnixMicro(), 10) + "." + t.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// parseCursor reads a cursor encodeCursor made; any other text is
// ErrBadCursor. It comes from a client.
func parseCursor(s string) (position, error) {
	if len(s) > maxCursor {
		return position{}, ErrBadCursor
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil {
		return position{}, ErrBadCursor
	}
	version, rest, ok := strings.Cut(string(raw), ".")
	micros, id, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || version != cursorVersion {
		return position{}, ErrBadCursor
	}
	us, err := strconv.ParseInt(micros, 10, 64)
	// A task is created after 1970 and before 10000, as both stores keep
	// times (PostgreSQL's timestamptz ends in 294276).
	if err != nil || us < 0 || us > maxCursorTime.UnixMicro() {
		return position{}, ErrBadCursor
	}
	if _, err := ParseID(id); err != nil {
		return position{}, ErrBadCursor
	}
	p := position{created: time.UnixMicro(us).UTC(), id: id}
	// The decoder skips line breaks: only the cursor List wrote is one.
	if encodeCursor(&Task{ID: p.id, Created: p.created}) != s {
		return position{}, ErrBadCursor
	}
	return p, nil
}
