// Package pathguard is the path gate behind warden.fs (and the LSP
// capability): it parses a guest's path, checks it against the deny-list and
// the tool's grants, and resolves its real path so that symlinks cannot
// launder a path past either check.
//
// The gate works in two steps. Check is purely lexical and touches no file,
// so its answer, and the wording of a denial, is the same whether or not the
// path exists. Resolve then follows symlinks and applies the same deny-list
// and grants to the real path, with the same messages. All file access then
// goes through an os.Root opened on the target's root, which the kernel-level
// containment of os.Root backs up.
//
// What a path means depends on the operating system (drive letters, device
// names and streams on Windows, names that differ only in case or
// normalization form on macOS): Rules holds those semantics as pure
// functions of strings, the host's by default, so that every OS's rules are
// tested on every machine.
package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/warden-run/warden/tool"
)

// ProjectRoot is the name of the project root. Paths without a root prefix
// are in it; "project:src" names it explicitly.
const ProjectRoot = "project"

// Limits on path syntax, enforced before any system call.
const (
	MaxPathBytes      = 4096
	MaxComponentBytes = 255
)

// Access is the kind of grant an operation needs.
type Access int

const (
	Read Access = iota
	Write
)

func (a Access) key() string {
	if a == Write {
		return "write"
	}
	return "read"
}

// Config is what the guard is built from.
type Config struct {
	// ProjectDir is the project root (config project.root).
	ProjectDir string
	// Roots are the extra named roots (config project.roots): name to
	// directory, relative directories taken from ProjectDir.
	Roots map[string]string
	// Deny holds the user's deny patterns (config security.deny).
	Deny []string
	// Home is the directory "~" stands for in deny patterns.
	Home string
	// Own are warden's own files, denied before everything else.
	Own []OwnFile
	// Rules are the path semantics paths are judged by; the zero value is
	// the host's (Host). Under another OS's rules nothing is looked up on
	// disk: roots are taken as written (see Rules).
	Rules Rules
}

// Guard is an immutable, compiled Config. It is safe for concurrent use.
type Guard struct {
	roots []*Root // project root first, then extra roots by name
	rules []Rule
	sys   Rules
}

// Root is one directory tree that guests may be granted.
type Root struct {
	// Name is ProjectRoot or the extra root's configured name.
	Name string
	// Dir is the directory as configured, absolute and clean.
	Dir string
	// Real is Dir with symlinks evaluated.
	Real string
}

var rootName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// New compiles cfg. Every root must exist and be a directory.
func New(cfg Config) (*Guard, error) {
	if cfg.ProjectDir == "" {
		return nil, errors.New("project root: empty")
	}
	var errs []error
	g := &Guard{sys: cfg.Rules.resolved()}
	addRoot := func(name, dir string) {
		if !g.sys.native() {
			// Another machine's paths: lexically only.
			if !g.sys.isAbs(dir) {
				dir = g.sys.join(cfg.ProjectDir, dir)
			}
			clean, _, w := g.sys.cleanAbs(dir)
			if w != nil {
				errs = append(errs, fmt.Errorf("root %s (%s): %s", name, dir, w.msg))
				return
			}
			g.roots = append(g.roots, &Root{Name: name, Dir: clean, Real: clean})
			return
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cfg.ProjectDir, dir)
		}
		dir = filepath.Clean(dir)
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			var fi os.FileInfo
			if fi, err = os.Stat(real); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("root %s (%s): %w", name, dir, err))
			return
		}
		g.roots = append(g.roots, &Root{Name: name, Dir: g.sys.canonical(dir), Real: g.sys.canonical(real)})
	}
	addRoot(ProjectRoot, cfg.ProjectDir)
	names := make([]string, 0, len(cfg.Roots))
	for name := range cfg.Roots {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !rootName.MatchString(name) || name == ProjectRoot {
			errs = append(errs, fmt.Errorf("root name %q: must match %s and not be %q", name, rootName, ProjectRoot))
			continue
		}
		if len(name) == 1 && g.sys.windows() {
			errs = append(errs, fmt.Errorf("root name %q: one letter names a drive on Windows (%s:\\); use a longer name", name, name))
			continue
		}
		addRoot(name, cfg.Roots[name])
	}
	rules, err := compileRules(g.sys, cfg.Home, cfg.Own, cfg.Deny)
	if err != nil {
		errs = append(errs, err)
	}
	g.rules = rules
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

// Roots returns the guard's roots, the project root first.
func (g *Guard) Roots() []*Root { return slices.Clone(g.roots) }

// Target is a path inside a root that passed the lexical gate.
type Target struct {
	Root *Root
	// Rel is clean, slash-separated and relative to the root; "." is the
	// root itself.
	Rel string
}

// Path is the target in the form guests use: "src/a.go" in the project
// root, "notes:todo.md" in an extra root.
func (t Target) Path() string {
	if t.Root.Name == ProjectRoot {
		return t.Rel
	}
	return t.Root.Name + ":" + t.Rel
}

// Join returns the target for name inside t.
func (t Target) Join(name string) Target {
	return Target{Root: t.Root, Rel: path.Join(t.Rel, name)}
}

// abs is the target's lexical host path under the root's real directory.
func (t Target) abs(dir string) string {
	if t.Rel == "." {
		return dir
	}
	return dir + "/" + t.Rel
}

// HostPath is the host path of the target, with the root's symlinks evaluated.
func (t Target) HostPath() string { return t.abs(t.Root.Real) }

func invalid(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindInvalidArguments, format, args...)
}

func denied(format string, args ...any) *tool.Error {
	return tool.Errorf(tool.KindDenied, format, args...)
}

// checkSyntax rejects what no file name can hold before anything else looks
// at the path; components are split at r's separators.
func (r Rules) checkSyntax(p string) *tool.Error {
	if len(p) > MaxPathBytes {
		return invalid("path is %d bytes long; the limit is %d", len(p), MaxPathBytes)
	}
	if strings.IndexByte(p, 0) >= 0 {
		return invalid("path %q contains a NUL byte", p)
	}
	for rest := r.slash(p); rest != ""; {
		comp, tail, _ := strings.Cut(rest, "/")
		if len(comp) > MaxComponentBytes {
			return invalid("path component %.40q... is %d bytes long; the limit is %d", comp, len(comp), MaxComponentBytes)
		}
		rest = tail
	}
	return nil
}

// Parse turns a guest path into a target without touching the file system.
// op names the operation in messages.
func (g *Guard) Parse(op, p string) (Target, error) {
	t, notes, err := g.parse(op, p)
	if err != nil {
		return Target{}, err
	}
	return g.checkNames(op, p, t, notes)
}

// parse is Parse without checkNames: the target and the components of its
// path that Windows would not open as files.
func (g *Guard) parse(op, p string) (Target, []note, error) {
	if err := g.sys.checkSyntax(p); err != nil {
		return Target{}, nil, err
	}
	root := g.roots[0]
	rest := p
	if name, tail, ok := g.sys.rootPrefix(p); ok {
		r := g.root(name)
		if r == nil {
			return Target{}, nil, invalid("%s %q: unknown root %q (roots: %s); write \"./%s\" for a file of that name in the project root",
				op, p, name, strings.Join(g.rootNames(), ", "), p)
		}
		// Inside a named root "/" means the root itself.
		root, rest = r, tail
	} else if g.sys.isAbs(p) {
		// Lexically only: Parse touches no file.
		abs, notes, w := g.sys.cleanAbs(p)
		if w != nil {
			return Target{}, nil, w.err(op, p)
		}
		if t, ok := g.locate(abs); ok {
			return t, notes, nil
		}
		if rule := g.matchAbs(fold(abs)); rule != nil {
			return Target{}, nil, denyRule(op, p, rule)
		}
		if err := g.refuseNames(op, p, abs, notes); err != nil {
			return Target{}, nil, err
		}
		return Target{}, nil, denied("%s %q: outside every root (roots: %s); add its directory to project.roots to grant it",
			op, p, strings.Join(g.rootNames(), ", "))
	}
	rel, notes, w := g.sys.cleanRel(rest)
	if w != nil {
		return Target{}, nil, w.err(op, p)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return Target{}, nil, denied("%s %q: outside root %q; paths may not leave their root", op, p, root.Name)
	}
	return Target{Root: root, Rel: rel}, notes, nil
}

func (w *why) err(op, p string) *tool.Error {
	if w.denied {
		return denied("%s %q: %s", op, p, w.msg)
	}
	return invalid("%s %q: %s", op, p, w.msg)
}

// checkNames refuses a target whose path Windows would not open as the
// file it names (notes: a device, a non-default stream) or that holds an
// 8.3 short name which may stand for a denied name. The deny-list is
// checked first, so that a denied name is refused by its rule in any
// spelling (".env:x", "NUL" aside). Under other rules it returns t.
func (g *Guard) checkNames(op, p string, t Target, notes []note) (Target, error) {
	if !g.sys.windows() {
		return t, nil
	}
	if rule := g.Denied(t); rule != nil {
		return Target{}, denyRule(op, p, rule)
	}
	if err := g.refuseNames(op, p, t.Rel, notes); err != nil {
		return Target{}, err
	}
	return t, nil
}

// refuseNames is the Windows half of checkNames on a canonical path.
func (g *Guard) refuseNames(op, p, canon string, notes []note) error {
	for _, n := range notes {
		if n.device {
			return denied("%s %q: %q is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any extension); it opens a device, not a file",
				op, p, n.name)
		}
		return denied("%s %q: %q names an alternate data stream; only a file's default stream may be read or written (name it without \":stream\")",
			op, p, n.name)
	}
	if !g.sys.windows() || !strings.Contains(canon, "~") {
		return nil
	}
	for _, c := range strings.Split(canon, "/") {
		base, ext, ok := shortName(c)
		if !ok {
			continue
		}
		for i := range g.rules {
			r := &g.rules[i]
			for _, pc := range r.names {
				if !mayAbbreviate(base, ext, pc) {
					continue
				}
				if r.Source == SourceOwn {
					return denied("%s %q: %q may be the 8.3 short name of warden's own %s; name it by its long name", op, p, c, r.What)
				}
				return denied("%s %q: %q may be the 8.3 short name of a name that %s; deny rules always win over grants and also apply to the real path behind symlinks",
					op, p, c, r.Reason())
			}
		}
	}
	return nil
}

// Locate maps an absolute host path inside a root (by its configured or its
// real directory, or through symlinks that lead into one) to a target. The
// project root wins over extra roots.
func (g *Guard) Locate(abs string) (Target, bool) {
	abs, _, w := g.sys.cleanAbs(g.sys.hostPath(abs))
	if w != nil {
		return Target{}, false
	}
	if t, ok := g.locate(abs); ok {
		return t, true
	}
	// Through a symlinked directory, e.g. a symlinked $HOME.
	if real, err := resolve("/", abs, true); err == nil && real != abs {
		return g.locate(real)
	}
	return Target{}, false
}

func (g *Guard) locate(abs string) (Target, bool) {
	for _, r := range g.roots {
		for _, dir := range [2]string{r.Dir, r.Real} {
			if rel, ok := g.sys.within(dir, abs); ok {
				return Target{Root: r, Rel: rel}, true
			}
		}
	}
	return Target{}, false
}

// within returns p relative to dir when p is dir or beneath it.
func within(dir, p string) (string, bool) {
	if p == dir {
		return ".", true
	}
	if dir == "/" {
		return p[1:], strings.HasPrefix(p, "/")
	}
	if strings.HasPrefix(p, dir) && p[len(dir)] == '/' {
		return p[len(dir)+1:], true
	}
	return "", false
}

func (g *Guard) root(name string) *Root {
	for _, r := range g.roots {
		if r.Name == name {
			return r
		}
	}
	return nil
}

func (g *Guard) rootNames() []string {
	names := make([]string, len(g.roots))
	for i, r := range g.roots {
		names[i] = r.Name
	}
	return names
}

// Check is the lexical gate: it parses p and checks the deny-list, then the
// grants. It never touches the file system. tool names the calling tool in
// the hint of a denial.
func (g *Guard) Check(op string, access Access, toolName string, grants []string, p string) (Target, error) {
	t, err := g.Parse(op, p)
	if err != nil {
		return Target{}, err
	}
	if rule := g.Denied(t); rule != nil {
		return Target{}, denyRule(op, p, rule)
	}
	if !g.granted(grants, t) {
		return Target{}, tool.DeniedFor(tool.Need{Key: "fs." + access.key(), Value: t.Path()},
			"%s %q: not granted; grant it with tools.grants.%s.fs.%s: [%q]",
			op, p, toolName, access.key(), suggest(t))
	}
	return t, nil
}

// Resolve is the real-path gate, run after Check: it follows the target's
// symlinks (the last one only if followLast) and applies the deny-list and
// the grants to where they lead. The messages are the ones Check gives, so
// a symlink's target is never named. It returns the real host path.
func (g *Guard) Resolve(op string, access Access, toolName string, grants []string, t Target, followLast bool) (string, error) {
	real, err := resolve(t.Root.Real, t.Rel, followLast)
	if err != nil {
		return "", tool.Errorf(tool.KindFailed, "%s %q: %v", op, t.Path(), err)
	}
	if real == t.abs(t.Root.Real) {
		// No symlink on the way: Check has judged this very path.
		return real, nil
	}
	if err := g.CheckReal(op, access, toolName, grants, t, real); err != nil {
		return "", err
	}
	return real, nil
}

// CheckReal applies the real-path half of the gate to real, a physical host
// path that t led to: it must lie in t's root, match no deny rule and be
// granted. Callers use it after Resolve on the path of what they actually
// opened, which closes the window between check and open.
func (g *Guard) CheckReal(op string, access Access, toolName string, grants []string, t Target, real string) error {
	rel, ok := g.sys.within(t.Root.Real, real)
	if !ok {
		return denied("%s %q: resolves outside root %q; symlinks may not leave their root", op, t.Path(), t.Root.Name)
	}
	rt := Target{Root: t.Root, Rel: rel}
	if rule := g.denied(rt, real); rule != nil {
		return denyRule(op, t.Path(), rule)
	}
	// A symlink's target may spell a directory by its 8.3 short name
	// ("SSH~1"), which the lexical gate never saw and GetLongPathName
	// cannot expand under a file that does not exist yet: the real path
	// meets the same short-name rule as the tool's own.
	if err := g.refuseNames(op, t.Path(), rel, nil); err != nil {
		return err
	}
	if !g.granted(grants, rt) {
		return denied("%s %q: not granted: a symlink leads outside the granted paths; grant its target with tools.grants.%s.fs.%s",
			op, t.Path(), toolName, access.key())
	}
	return nil
}

func denyRule(op, p string, r *Rule) *tool.Error {
	if r.Source == SourceOwn {
		return denied("%s %q: %s", op, p, r.Reason())
	}
	return denied("%s %q: %s; deny rules always win over grants and also apply to the real path behind symlinks",
		op, p, r.Reason())
}

// suggest is the grant that would allow t: its top-level entry.
func suggest(t Target) string { return SuggestGrant(t.Path()) }

// SuggestGrant is the grant a denial of path p (a target's Path: "data/x",
// "notes:drafts/y") suggests: its top-level entry in its root ("data",
// "notes:drafts").
func SuggestGrant(p string) string {
	prefix, rest := "", p
	if name, _, ok := Host.rootPrefix(p); ok {
		prefix, rest = name+":", p[len(name)+1:]
	}
	top, _, _ := strings.Cut(rest, "/")
	return prefix + top
}

// OwnFile returns the refusal of path p, written as a grant or a guest
// path, when it is one of warden's own files or lies within one (Config.Own),
// else nil: a grant of it would give nothing, so grant edits refuse it.
func (g *Guard) OwnFile(op, p string) error {
	var rule *Rule
	if t, _, err := g.parse(op, p); err == nil {
		rule = g.Denied(t)
	} else if g.sys.isAbs(p) {
		if abs, _, w := g.sys.cleanAbs(p); w == nil {
			rule = g.matchAbs(fold(abs))
		}
	}
	if rule != nil && rule.Source == SourceOwn {
		return denyRule(op, p, rule)
	}
	return nil
}

// CheckGrant judges p as a grant of access to toolName, by the gate a call
// goes through: err is the refusal every call under p would get whatever
// it asks for (outside every root, leaving its root, matching a deny rule,
// or a symlink leading out of the root, into a denied path or beyond p),
// worded as the call's; such a grant gives nothing. exists reports whether
// p names something now: a grant of a missing path works once it is
// created, but is more often a typo. CheckGrant reads the file system only
// to resolve p's symlinks, as the call gate does.
func (g *Guard) CheckGrant(access Access, toolName, p string) (exists bool, err error) {
	op := "grant fs." + access.key()
	grants := []string{p}
	t, err := g.Check(op, access, toolName, grants, p)
	if err != nil {
		return false, err
	}
	if !g.sys.native() {
		return false, nil // another machine's paths: nothing to look up here
	}
	real, err := resolve(t.Root.Real, t.Rel, true)
	if err != nil {
		return false, nil // a symlink loop, an unreadable directory: nothing to reach now
	}
	if real != t.abs(t.Root.Real) {
		if err := g.CheckReal(op, access, toolName, grants, t, real); err != nil {
			return false, err
		}
	}
	_, statErr := os.Stat(real)
	return statErr == nil, nil
}

// Denied returns the deny rule that the target's lexical path matches, or
// nil. Listings use it to omit entries.
func (g *Guard) Denied(t Target) *Rule {
	return g.denied(t, "")
}

// denied checks t's root-relative path and its host paths (under the
// configured and the real root directory, and real when set).
func (g *Guard) denied(t Target, real string) *Rule {
	rel := fold(t.Rel)
	for i := range g.rules {
		r := &g.rules[i]
		if r.kind == ruleAbs {
			continue
		}
		if r.matchRel(rel) {
			return r
		}
	}
	if rule := g.matchAbs(fold(t.abs(t.Root.Dir))); rule != nil {
		return rule
	}
	if t.Root.Real != t.Root.Dir {
		if rule := g.matchAbs(fold(t.abs(t.Root.Real))); rule != nil {
			return rule
		}
	}
	if real != "" {
		return g.matchAbs(fold(real))
	}
	return nil
}

func (g *Guard) matchAbs(abs folded) *Rule {
	for i := range g.rules {
		if g.rules[i].matchAbs(abs) {
			return &g.rules[i]
		}
	}
	return nil
}

// granted reports whether one of grants covers t. A grant is written like a
// guest path ("src", "notes:drafts", "." for the whole project root); one
// that does not parse grants nothing.
func (g *Guard) granted(grants []string, t Target) bool {
	for _, s := range grants {
		gt, err := g.Parse("grant", s)
		if err != nil || gt.Root != t.Root {
			continue
		}
		// Exact, on every OS: a volume may be case-sensitive even where
		// the default is not (APFS, NTFS directories), and there another
		// case is another file, which a grant must not reach.
		if contains(gt.Rel, t.Rel) {
			return true
		}
	}
	return false
}

// contains reports whether the clean relative path grant is rel or one of
// its parents: the one rule by which a grant path covers a path, used by
// the gate and by Covers.
func contains(grant, rel string) bool {
	return grant == "." || rel == grant || strings.HasPrefix(rel, grant) && rel[len(grant)] == '/'
}

// Granted reports whether grants cover t lexically; walkers use it to skip
// subtrees.
func (g *Guard) Granted(grants []string, t Target) bool { return g.granted(grants, t) }

// ValidateGrant reports whether s is a well-formed grant for this guard's
// roots, for config validation.
func (g *Guard) ValidateGrant(s string) error {
	_, err := g.Parse("grant", s)
	return err
}

const maxSymlinks = 40

var errSymlinkLoop = errors.New("too many levels of symbolic links")

// resolve returns the physical path that rel names under dir (itself a real
// path): symlinks are followed (the last one only if followLast), and from
// the first component that does not exist on, the rest is kept as written,
// which is what creating it would create. Unlike filepath.EvalSymlinks it
// follows dangling symlinks, since opening one with O_CREATE creates its
// target.
func resolve(dir, rel string, followLast bool) (string, error) {
	done := dir
	todo := strings.Split(rel, "/")
	missing := false
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		if missing || (len(todo) == 0 && !followLast) {
			done = next
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
				return "", err
			}
			missing = true
			done = next
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", errSymlinkLoop
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			// From the root of the target's volume ("/", "C:\").
			vol := filepath.VolumeName(target)
			done, target = vol+string(filepath.Separator), target[len(vol):]
		}
		todo = append(strings.Split(filepath.ToSlash(target), "/"), todo...)
	}
	// On Windows an existing path may still hold 8.3 short names
	// ("SECRET~1.PEM"), which the deny-list must see long.
	return filepath.ToSlash(longPath(done)), nil
}
