// Package backendurl is the syntax of the memory.backend setting: "file" or
// a postgres:// URL. It imports no warden package but termsafe, so that
// config checks the value it reads, and hostfuncs/memory and
// internal/approvals the value they open and name in messages, with one
// rule.
package backendurl

import (
	"errors"
	"strings"

	"github.com/warden-run/warden/internal/termsafe"
)

// Check reports whether s is a memory.backend value warden accepts:
// "file" (or empty), or a postgres:// URL whose only @ ends its
// user:password. Its errors never quote s, which may hold a password.
//
// pgx (like libpq) ends the userinfo at the first @ before the first /: a
// password holding a / (postgres://u:pa/ss@host/db) is read as host u,
// port pa, database ss@host/db, and the database name is in pgx's
// connection errors. A second @ puts the password's rest in the host name
// the same way. Both are refused here rather than shown later.
func Check(s string) error {
	if s == "" || s == "file" {
		return nil
	}
	rest, ok := strings.CutPrefix(s, "postgres://")
	if !ok {
		rest, ok = strings.CutPrefix(s, "postgresql://")
	}
	if !ok {
		return errors.New(`must be "file" or a postgres:// URL`)
	}
	at, slash := strings.IndexByte(rest, '@'), strings.IndexByte(rest, '/')
	if strings.Count(rest, "@") > 1 || at > slash && slash >= 0 {
		return errors.New("the postgres:// URL has an @ outside its user:password@ part (not shown: it may hold the password); " +
			"percent-encode a / or @ in the password as %2F or %40, and an @ elsewhere as %40")
	}
	return nil
}

// ID is a backend URL without its password or options:
// postgres://USER@HOST/DATABASE, escaped by termsafe, for messages and
// logs. It splits raw as pgx does (the userinfo ends at the first @ before
// the first /), not as net/url does, which reads postgres://u:1234?@host/db
// as host u, port 1234 (the password). raw has passed Check.
func ID(raw string) string {
	rest, ok := strings.CutPrefix(raw, "postgres://")
	if !ok {
		rest, _ = strings.CutPrefix(raw, "postgresql://")
	}
	id := "postgres://"
	if at := strings.IndexAny(rest, "@/"); at >= 0 && rest[at] == '@' {
		user, _, _ := strings.Cut(rest[:at], ":")
		if user != "" {
			id += user + "@"
		}
		rest = rest[at+1:]
	}
	rest, _, _ = strings.Cut(rest, "?") // after the userinfo: a password may hold a ?
	return termsafe.Line(id + rest)
}
