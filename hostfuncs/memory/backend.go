package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/warden-run/warden/internal/backendurl"
)

// backend stores memories. Everything about who may do what (grants, topic
// validation, deny rules, the value limit of a set, the list bound's
// filtering) stays in front of it, in Memory: a backend only stores, so the
// file store and PostgreSQL answer the same requests with the same errors.
//
// Errors a backend returns, which Memory maps onto error kinds (storeError):
// fs.ErrNotExist for a missing topic, errTooLarge for an append over the
// limit, *errRefused for a store the file backend will not act on,
// errQueryTimeout when the backend's own bound on one operation passed, and
// the call's context error when the call ended while waiting.
type backend interface {
	// get returns at most limit bytes of topic's value, truncated when
	// there was more, and when it was last written.
	get(ctx context.Context, topic string, limit int) (value []byte, truncated bool, modified time.Time, err error)
	// put replaces topic's value, or appends to it (creating it when
	// missing), atomically: concurrent appends, from this process or
	// another replica, all land. An append whose result would exceed limit
	// changes nothing and returns errTooLarge. It returns the new size.
	put(ctx context.Context, topic string, value []byte, appending bool, limit int) (size int, err error)
	// remove deletes topic and reports whether it existed.
	remove(ctx context.Context, topic string) (bool, error)
	// list returns the topics within prefix ("" for all) that filter
	// shows, sorted by topic (byte order), at most maxListed of them, and
	// counts what it left out.
	list(ctx context.Context, prefix string, filter func(topic string) verdict) (entries []Entry, truncated bool, skipped Skipped, err error)
	// id names the backend's identity for config reloads: a reload that
	// names the same one keeps it. It holds no secret.
	id() string
	// close releases what the backend holds (a connection pool).
	close()
	// redact removes what an error message must not show (host paths).
	redact(msg string) string
}

// verdict is what a listing does with one topic.
type verdict int

const (
	show   verdict = iota // listed
	hide                  // outside the caller's grant: left out silently
	denied                // matches a deny rule: left out, counted in Skipped.Denied
)

// errQueryTimeout is a backend operation that outlived its own bound
// (memory.postgres.query_timeout), not the call's deadline.
type errQueryTimeout struct{ after time.Duration }

func (e errQueryTimeout) Error() string {
	return fmt.Sprintf("the memory backend did not answer within %v (config key memory.postgres.query_timeout)", e.after)
}

// isPostgresURL reports whether a memory.backend value names PostgreSQL.
func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// CheckBackend reports whether s is a memory.backend value warden accepts
// (backendurl.Check, which config validates memory.backend with). Its
// errors never quote s, which may hold a password.
func CheckBackend(s string) error { return backendurl.Check(s) }
