package runtime

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/warden-run/warden/hostfuncs/env"
	"github.com/warden-run/warden/hostfuncs/fs"
	"github.com/warden-run/warden/hostfuncs/lsp"
	"github.com/warden-run/warden/hostfuncs/memory"
	"github.com/warden-run/warden/hostfuncs/net"
	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/tool"
)

// maxRequested bounds the entries of one requested capability list: a
// review a person reads must stay readable.
const maxRequested = 64

// validateRequested checks what a descriptor requests (Capabilities)
// against the grammar config uses for the same grants: each capability's
// own validator (fs paths, net host patterns, env keys, lsp languages,
// memory topics), so that a request can always be granted as written and a
// malformed one is refused at load, naming the field and the value. A
// request holding a character termsafe would escape (a control, a bidi
// override, a zero-width character) is refused too: no grammar admits
// one, and a person must be able to read every request as it is.
//
// It lives in the runtime rather than in tool.Descriptor.Validate because
// the grammars live in the capability packages, which import tool.
func validateRequested(c *tool.Capabilities) error {
	var errs []error
	check := func(field string, values []string, grammar func(string) error) {
		if len(values) > maxRequested {
			errs = append(errs, fmt.Errorf("capabilities.%s: %d entries, over the limit of %d", field, len(values), maxRequested))
			return
		}
		for i, v := range values {
			var err error
			if at, r := firstHidden(v); at >= 0 {
				err = fmt.Errorf("contains the control or invisible character %U at byte %d", r, at)
			} else {
				err = grammar(v)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("capabilities.%s[%d] %s: %w", field, i, termsafe.Line(strconv.Quote(v)), err))
			}
		}
	}
	check("fs.read", c.FS.Read, requestedPath)
	check("fs.write", c.FS.Write, requestedPath)
	check("memoryTopics", c.MemoryTopics, memory.ValidateTopic)
	check("net", c.Net, net.ValidateGrant)
	check("client", c.Client, tool.ValidateClientFeature)
	check("env", c.Env, env.ValidateKey)
	check("lsp", c.LSP, lsp.ValidateLanguage)
	return errors.Join(errs...)
}

// requestedPath is the fs grant grammar for a requested path, less what the
// suggested `warden grant TOOL fs.read=a,b` line would read differently
// from the review: a comma (it separates values there, so "docs,." would
// show as one path and grant the whole project) and surrounding blanks.
func requestedPath(p string) error {
	switch {
	case strings.Contains(p, ","):
		return errors.New("contains a comma, which `warden grant` reads as a separator between paths")
	case strings.TrimSpace(p) != p:
		return errors.New("begins or ends with a blank")
	}
	return fs.ValidateGrantSyntax(p)
}

// firstHidden finds the first character of s that must not reach a
// terminal as it is (invalid UTF-8 shows as U+FFFD), or returns -1.
func firstHidden(s string) (int, rune) {
	for i, r := range s {
		if termsafe.Hidden(r) || r == utf8.RuneError {
			return i, r
		}
	}
	return -1, 0
}
