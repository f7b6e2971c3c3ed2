package pathguard

import (
	"strings"
)

// ValidateGrantSyntax checks a path as a grant or a tool's request for one
// (Descriptor.Capabilities.FS) before any root is known, under the host's
// rules (Host.ValidateGrantSyntax).
func ValidateGrantSyntax(p string) error { return Host.ValidateGrantSyntax(p) }

// ValidateGrantSyntax checks a path as a grant or a tool's request for one
// before any root is known: what Parse refuses whatever the roots are. It
// may name a root ("notes:drafts"), whose existence only config can tell.
func (r Rules) ValidateGrantSyntax(p string) error {
	r = r.resolved()
	if p == "" {
		return invalid("path is empty")
	}
	if err := r.checkSyntax(p); err != nil {
		return err
	}
	rest := p
	if _, tail, ok := r.rootPrefix(p); ok {
		rest = tail
	} else if r.isAbs(p) {
		// Inside a root or not is config's question.
		if _, _, w := r.cleanAbs(p); w != nil {
			return w.err("path", p)
		}
		return nil
	}
	rel, _, w := r.cleanRel(rest)
	if w != nil {
		return w.err("path", p)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return denied("path %q leaves its root; paths may not", p)
	}
	return nil
}
