package fs

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/warden-run/warden/hostfuncs/internal/pathguard"
	"github.com/warden-run/warden/tool"
)

// errStop ends a walk early; the walk's reply is then truncated.
var errStop = errors.New("stop walking")

// walk visits the entries under base (a path in the guest form) that the
// tool may read: only granted subtrees are entered, deny-listed entries are
// skipped with everything beneath them, and a symlink is reported only when
// its real path passes the gate (it is never descended into). fn receives
// each entry's target; it returns errStop to end the walk. The walk visits
// at most MaxWalkEntries entries; truncated says it stopped early.
func (o *opCall) walk(op, base string, fn func(root *os.Root, t pathguard.Target, d iofs.DirEntry) error) (truncated bool, err error) {
	g := o.st.guard
	grants := o.grants(pathguard.Read)
	bt, err := g.Parse(op, base)
	if err != nil {
		return false, err
	}
	if rule := g.Denied(bt); rule != nil {
		_, err := g.Check(op, pathguard.Read, o.call.Tool, grants, base)
		return false, err
	}
	starts := walkStarts(g, grants, bt)
	if len(starts) == 0 {
		// Nothing under base is granted: the same denial as reading base.
		_, err := g.Check(op, pathguard.Read, o.call.Tool, grants, base)
		if err == nil {
			err = tool.Errorf(tool.KindInternal, "%s %q: granted but no walk start", op, base)
		}
		return false, err
	}
	root, err := os.OpenRoot(bt.Root.Real)
	if err != nil {
		return false, tool.Errorf(tool.KindFailed, "%s %q: root %q is not available: %v", op, base, bt.Root.Name, unwrapPath(err))
	}
	defer root.Close()
	fsys := root.FS()
	visited := 0
	for _, start := range starts {
		st := pathguard.Target{Root: bt.Root, Rel: start}
		if g.Denied(st) != nil {
			continue
		}
		// The start may itself be a symlink: it must resolve to a readable place.
		if _, err := g.Resolve(op, pathguard.Read, o.call.Tool, grants, st, true); err != nil {
			continue
		}
		err := iofs.WalkDir(fsys, start, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				// An unreadable directory or a start that does not exist
				// yields nothing; the rest of the walk goes on.
				return nil
			}
			if visited++; visited > o.st.limits.MaxWalkEntries {
				truncated = true
				return errStop
			}
			if visited%256 == 0 {
				if err := o.cancelled(); err != nil {
					return err
				}
			}
			t := pathguard.Target{Root: bt.Root, Rel: p}
			if p != start && g.Denied(t) != nil {
				if d.IsDir() {
					return iofs.SkipDir
				}
				return nil
			}
			if d.Type()&iofs.ModeSymlink != 0 {
				if _, err := g.Resolve(op, pathguard.Read, o.call.Tool, grants, t, true); err != nil {
					return nil
				}
			}
			return fn(root, t, d)
		})
		if errors.Is(err, errStop) {
			return true, nil
		}
		if err != nil {
			return truncated, err
		}
	}
	return truncated, nil
}

// walkStarts returns the directories to walk for base: base itself when a
// grant covers it, otherwise each granted path beneath base. Nested starts
// are dropped so that nothing is visited twice.
func walkStarts(g *pathguard.Guard, grants []string, base pathguard.Target) []string {
	if g.Granted(grants, base) {
		return []string{base.Rel}
	}
	var starts []string
	for _, s := range grants {
		gt, err := g.Parse("grant", s)
		if err != nil || gt.Root != base.Root {
			continue
		}
		if base.Rel == "." || strings.HasPrefix(gt.Rel, base.Rel+"/") {
			starts = append(starts, gt.Rel)
		}
	}
	slices.Sort(starts)
	var out []string
	for _, s := range starts {
		if n := len(out); n > 0 && (s == out[n-1] || strings.HasPrefix(s, out[n-1]+"/")) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// GlobReply is the result of a glob.
type GlobReply struct {
	Matches []string `json:"matches"`
	// Truncated says the match or walk limit ended the glob early.
	Truncated bool `json:"truncated,omitempty"`
}

// splitRoot separates a "name:" root prefix from a glob pattern.
func splitRoot(p string) (prefix, rest string) {
	if i := strings.IndexByte(p, ':'); i > 0 && !strings.ContainsAny(p[:i], "*?[{\\/") {
		return p[:i+1], p[i+1:]
	}
	return "", p
}

func (o *opCall) glob() (any, error) {
	const op = "glob"
	pattern := o.req.Pattern
	if pattern == "" {
		return nil, invalid("glob: pattern is required")
	}
	if len(pattern) > pathguard.MaxPathBytes || strings.IndexByte(pattern, 0) >= 0 {
		return nil, invalid("glob %q: too long or contains a NUL byte", pattern)
	}
	prefix, pat := splitRoot(pattern)
	pat = strings.TrimPrefix(pat, "./")
	if strings.HasPrefix(pat, "/") || pat == ".." || strings.HasPrefix(pat, "../") || strings.Contains(pat, "/../") {
		return nil, invalid("glob %q: patterns are relative to a root and may not contain ..", pattern)
	}
	if !doublestar.ValidatePattern(pat) {
		return nil, invalid("glob %q: not a valid pattern", pattern)
	}
	base, _ := doublestar.SplitPattern(pat)
	limit := lower(o.req.Limit, o.st.limits.MaxGlobMatches)
	reply := &GlobReply{Matches: []string{}}
	truncated, err := o.walk(op, prefix+base, func(_ *os.Root, t pathguard.Target, _ iofs.DirEntry) error {
		if !doublestar.MatchUnvalidated(pat, t.Rel) {
			return nil
		}
		if len(reply.Matches) == limit {
			reply.Truncated = true
			return errStop
		}
		reply.Matches = append(reply.Matches, t.Path())
		return nil
	})
	if err != nil {
		return nil, err
	}
	reply.Truncated = reply.Truncated || truncated
	return reply, nil
}

// Match is one search hit.
type Match struct {
	Path string `json:"path"`
	// Line and Column are 1-based; Column counts bytes.
	Line   int64  `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

// SearchReply is the result of a search.
type SearchReply struct {
	Matches      []Match `json:"matches"`
	FilesScanned int     `json:"filesScanned"`
	BytesScanned int64   `json:"bytesScanned"`
	// Truncated says a limit (matches, files, bytes or entries walked) ended
	// the search early.
	Truncated bool `json:"truncated,omitempty"`
}

const (
	maxRegexBytes   = 1024
	maxMatchText    = 512
	maxSearchLine   = 64 << 10
	binarySniffSize = 8000
)

func (o *opCall) search() (any, error) {
	const op = "search"
	if o.req.Pattern == "" {
		return nil, invalid("search: pattern is required")
	}
	if len(o.req.Pattern) > maxRegexBytes {
		return nil, invalid("search: pattern is %d bytes; the limit is %d", len(o.req.Pattern), maxRegexBytes)
	}
	expr := o.req.Pattern
	if o.req.IgnoreCase {
		expr = "(?i)" + expr
	}
	// RE2 syntax: matching time is linear in the input, whatever the pattern.
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, invalid("search: pattern: %v", err)
	}
	if o.req.Glob != "" && !doublestar.ValidatePattern(o.req.Glob) {
		return nil, invalid("search: glob %q: not a valid pattern", o.req.Glob)
	}
	base := o.req.Path
	if base == "" {
		base = "."
	}
	lim := o.st.limits
	maxFiles := lower(o.req.MaxFiles, lim.MaxSearchFiles)
	maxMatches := lower(o.req.MaxMatches, lim.MaxSearchMatches)
	maxBytes := lower(o.req.MaxBytes, lim.MaxSearchBytes)
	reply := &SearchReply{Matches: []Match{}}
	truncated, err := o.walk(op, base, func(root *os.Root, t pathguard.Target, d iofs.DirEntry) error {
		if d.IsDir() {
			return nil
		}
		if o.req.Glob != "" && !doublestar.MatchUnvalidated(o.req.Glob, t.Rel) &&
			!doublestar.MatchUnvalidated(o.req.Glob, path.Base(t.Rel)) {
			return nil
		}
		if reply.FilesScanned == maxFiles || reply.BytesScanned >= maxBytes {
			reply.Truncated = true
			return errStop
		}
		f, _, err := openRegular(op, root, t)
		if err != nil {
			return nil // not a regular file, or gone: nothing to search
		}
		defer f.Close()
		if o.verifyOpened(op, pathguard.Read, t, f) != nil {
			return nil // swapped for something the tool may not read
		}
		reply.FilesScanned++
		return o.searchFile(f, t, re, maxMatches, maxBytes, reply)
	})
	if err != nil {
		return nil, err
	}
	reply.Truncated = reply.Truncated || truncated
	return reply, nil
}

// searchFile scans one file line by line, within the byte and match
// budgets. Files that look binary (a NUL byte early on) are skipped.
func (o *opCall) searchFile(f io.Reader, t pathguard.Target, re *regexp.Regexp, maxMatches int, maxBytes int64, reply *SearchReply) error {
	// The reader stops at the remaining budget, however long a line is.
	br := bufio.NewReaderSize(io.LimitReader(f, maxBytes-reply.BytesScanned), 64<<10)
	if head, _ := br.Peek(binarySniffSize); bytes.IndexByte(head, 0) >= 0 {
		return nil
	}
	for lineNo := int64(1); ; lineNo++ {
		if lineNo%4096 == 0 {
			if err := o.cancelled(); err != nil {
				return err
			}
		}
		line, n, _, err := readLine(br, maxSearchLine)
		reply.BytesScanned += n
		if err == io.EOF {
			if reply.BytesScanned >= maxBytes {
				reply.Truncated = true
				return errStop
			}
			return nil
		}
		if err != nil {
			return nil // a read error ends this file only
		}
		if loc := re.FindIndex(line); loc != nil {
			if len(reply.Matches) == maxMatches {
				reply.Truncated = true
				return errStop
			}
			reply.Matches = append(reply.Matches, Match{
				Path:   t.Path(),
				Line:   lineNo,
				Column: loc[0] + 1,
				Text:   matchText(line),
			})
		}
	}
}

// matchText is a line as shown in a match: without its newline, at most
// maxMatchText bytes, valid UTF-8.
func matchText(line []byte) string {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) > maxMatchText {
		line = trimPartialRune(line[:maxMatchText])
	}
	return strings.ToValidUTF8(string(line), "\uFFFD")
}
