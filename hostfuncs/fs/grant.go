package fs

import "github.com/warden-run/warden/hostfuncs/internal/pathguard"

// ValidateGrantSyntax reports why p cannot be an fs grant or a tool's
// request for one, judged before config's roots are known: not empty, no
// NUL, within the length limits, and not leaving its root with "..".
func ValidateGrantSyntax(p string) error { return pathguard.ValidateGrantSyntax(p) }
