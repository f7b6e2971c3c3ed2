package pathguard

import (
	"path"
	"strings"
)

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
func Covers(grant, request string) bool {
	rRoot, r, ok := lexical(request)
	if !ok {
		return grant == request
	}
	gRoot, g, ok := lexical(grant)
	if rRoot == "/" {
		return ok && gRoot == "/" && g == r
	}
	return ok && gRoot == rRoot && contains(g, r)
}

// lexical splits a grant path as Parse does, without the configured roots:
// the root's name ("/" for an absolute path) and the clean relative path.
func lexical(p string) (root, rel string, ok bool) {
	if ValidateGrantSyntax(p) != nil {
		return "", "", false
	}
	root, rest := ProjectRoot, p
	if i := strings.IndexByte(p, ':'); i > 0 && rootName.MatchString(p[:i]) {
		root, rest = p[:i], strings.TrimLeft(p[i+1:], "/")
	} else if strings.HasPrefix(p, "/") {
		root, rest = "/", strings.TrimLeft(path.Clean(p), "/")
	}
	return root, path.Clean(rest), true
}
