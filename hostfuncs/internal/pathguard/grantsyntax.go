package pathguard

import (
	"path"
	"strings"
)

// ValidateGrantSyntax checks a path as a grant or a tool's request for one
// (Descriptor.Capabilities.FS) before any root is known: what Parse refuses
// whatever the roots are. It may name a root ("notes:drafts"), whose
// existence only config can tell.
func ValidateGrantSyntax(p string) error {
	if p == "" {
		return invalid("path is empty")
	}
	if err := checkSyntax(p); err != nil {
		return err
	}
	rest := p
	if i := strings.IndexByte(p, ':'); i > 0 && rootName.MatchString(p[:i]) {
		rest = strings.TrimLeft(p[i+1:], "/")
	} else if strings.HasPrefix(p, "/") {
		return nil // absolute: inside a root or not is config's question
	}
	if rel := path.Clean(rest); rel == ".." || strings.HasPrefix(rel, "../") {
		return denied("path %q leaves its root; paths may not", p)
	}
	return nil
}
