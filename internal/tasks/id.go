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

// PeerHTTP is the peer of every HTTP request served without
// authentication (loopback only; see OwnerOf).
const PeerHTTP = "http"

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
// without authentication is served on loopback only, where every client
// is the machine's local user and may call every tool anyway: they are one
// principal, PeerHTTP, and a task's id (128 random bits) is what keeps one
// such client from another's task.
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
	if err != nil {
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
