package fs

import "github.com/warden-run/warden/hostfuncs/internal/pathguard"

// ValidateGrantSyntax reports why p cannot be an fs grant or a tool's
// request for one, judged before config's roots are known: not empty, no
// NUL, within the length limits, and not leaving its root with "..".
func ValidateGrantSyntax(p string) error { return pathguard.ValidateGrantSyntax(p) }

// Covers reports whether the grant path grant covers the path request
// lexically: the same root, and grant is request or one of its parents
// ("." covers the whole project root, "notes:" the whole root notes). It is
// the fs half of "does grant set A cover request B" (internal/capset).
func Covers(grant, request string) bool { return pathguard.Covers(grant, request) }

// SuggestGrant is the grant a denial of path p names beside its config
// key: p's top-level entry in its root ("data" for "data/todo.txt",
// "notes:drafts" for "notes:drafts/a.md").
func SuggestGrant(p string) string { return pathguard.SuggestGrant(p) }
