package pathguard

import (
	"path"
	"strings"
)

// Covers reports whether the grant path grant covers the path request under
// the host's rules (Host.Covers).
func Covers(grant, request string) bool { return Host.Covers(grant, request) }

// Covers reports whether the grant path grant covers the path request (a
// grant or a tool's request for one) without knowing the configured roots:
// both name the same root ("notes:x", the project root by default or as
// "project:x", or "/" for absolute paths), and grant is request or one of
// its parents, as the gate judges a path. It errs towards "not covered"
// where only config could tell: an absolute path is covered only by the
// same absolute path, since which roots an absolute grant reaches (all of
// those inside it, none when it lies outside them all) depends on config.
//
// A request that is not a valid grant is covered only by the identical
// string; a grant that is not valid covers nothing, as at run time.
func (r Rules) Covers(grant, request string) bool {
	r = r.resolved()
	rRoot, rel, ok := r.lexical(request)
	if !ok {
		return grant == request
	}
	gRoot, g, ok := r.lexical(grant)
	if rRoot == "/" {
		return ok && gRoot == "/" && g == rel
	}
	return ok && gRoot == rRoot && contains(g, rel)
}

// lexical splits a grant path as Parse does, without the configured roots:
// the root's name ("/" for an absolute path) and the clean relative path
// (for an absolute one, the path itself in canonical form).
func (r Rules) lexical(p string) (root, rel string, ok bool) {
	if r.ValidateGrantSyntax(p) != nil {
		return "", "", false
	}
	root, rest := ProjectRoot, p
	if name, tail, ok := r.rootPrefix(p); ok {
		root, rest = name, tail
	} else if r.isAbs(p) {
		abs, _, _ := r.cleanAbs(p)
		if !r.windows() {
			abs = path.Clean(strings.TrimLeft(abs, "/"))
		}
		return "/", abs, true
	}
	rel, _, _ = r.cleanRel(rest)
	return root, rel, true
}
