package pathguard

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"
)

// BuiltinDeny is the deny-list that is always in force, before the user's
// security.deny patterns. "~/" means the configured home directory. A
// pattern without a slash matches any path component, so a directory named
// ".env" hides its contents too.
var BuiltinDeny = []string{
	// Credentials under the home directory.
	"~/.ssh", "~/.aws", "~/.azure", "~/.gnupg",
	"~/.config/gcloud", "~/.config/gh", "~/.config/git/credentials", "~/.config/op",
	"~/.docker/config.json", "~/.netrc", "~/.npmrc", "~/.yarnrc.yml", "~/.kube/config",
	"~/.git-credentials", "~/.pypirc", "~/.cargo/credentials*", "~/.pgpass", "~/.my.cnf",
	"~/.password-store", "~/.vault-token", "~/.terraform.d/credentials.tfrc.json",
	// Shell and REPL history.
	"~/.local/share/fish/fish_history", "~/.config/fish/fish_history",
	"~/.python_history", "~/.node_repl_history", "~/.psql_history", "~/.mysql_history",
	"~/.sqlite_history", "~/.lesshst", "~/.viminfo",
	".bash_history", ".zsh_history", ".zhistory", ".sh_history", ".histfile", "fish_history",
	// System secrets and the process's own environment and memory.
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
	// cmdline too: `warden serve --token` puts the bearer token in warden's.
	"/proc/*/environ", "/proc/*/mem", "/proc/*/task/*/environ", "/proc/*/task/*/mem",
	"/proc/*/cmdline", "/proc/*/task/*/cmdline",
	// Project secrets, wherever they are.
	".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "id_ecdsa*", "id_dsa*",
}

// Rule sources, as named in denial messages.
const (
	SourceBuiltin = "built-in"
	SourceConfig  = "security.deny"
	// SourceOwn marks warden's own files (Config.Own).
	SourceOwn = "warden's own"
)

// OwnFile is one of warden's own files or directories: its config file,
// tools dir, compile cache, audit log, the memory store's lock. A tool that
// could write one could rewrite its own policy or load code of its
// choosing; one that could read the config would read its secrets. Own
// files are denied like the built-in list, to every tool, whatever config
// grants.
type OwnFile struct {
	// Pattern is an absolute host path in the syntax of deny patterns
	// ("**" crosses directories, matching ignores case): Literal quotes a
	// path for it. It denies what it matches and everything beneath.
	Pattern string
	// What names the file in denials: "config file", "tools dir".
	What string
}

// Literal quotes p, a path of this machine, so that it matches as a deny
// pattern only itself (Host.Literal).
func Literal(p string) string { return Host.Literal(p) }

// Literal quotes p so that it matches as a deny pattern under r only
// itself: every glob metacharacter is escaped. Under Windows rules "\" is
// a separator in patterns, so a metacharacter is quoted by a class ("[[]")
// instead, and "*" and "?", which no Windows name holds, stay as they are.
func (r Rules) Literal(p string) string {
	r = r.resolved()
	var b strings.Builder
	if r.windows() {
		for _, c := range r.slash(p) {
			if strings.ContainsRune(`[{}`, c) {
				b.WriteString("[" + string(c) + "]")
				continue
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	for _, c := range p {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

type ruleKind int

const (
	// ruleName matches any single component of a root-relative path.
	ruleName ruleKind = iota
	// ruleRel matches a root-relative path (or an ancestor of it).
	ruleRel
	// ruleAbs matches an absolute host path (or an ancestor of it).
	ruleAbs
)

// Rule is one compiled deny pattern.
type Rule struct {
	// Pattern is the pattern as written, for messages.
	Pattern string
	// Source is SourceBuiltin, SourceConfig or SourceOwn.
	Source string
	// What names an own file (SourceOwn) in messages.
	What string
	kind ruleKind
	// variants are folded patterns (see fold): for absolute rules the expanded
	// pattern and its canonical form (symlinks in its literal prefix
	// evaluated), so that a symlinked $HOME cannot slip past.
	variants []folded
	// prefixes are the literal (meta-free) leading parts of variants, a
	// cheap filter before glob matching.
	prefixes []folded
	// names are the components of the pattern as written ("~" and bare
	// wildcards left out), for judging 8.3 short names under Windows rules.
	names []string
}

// compileRules compiles warden's own files, the built-in list and the
// user's patterns, in that order, so that a denial names the most specific
// reason. home is the directory "~" stands for.
func compileRules(sys Rules, home string, own []OwnFile, user []string) ([]Rule, error) {
	var rules []Rule
	var errs []error
	add := func(pattern, source string) {
		r, err := compileRule(sys, home, pattern, source)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", source, pattern, err))
			return
		}
		rules = append(rules, r)
	}
	for _, o := range own {
		if !sys.isAbs(o.Pattern) || o.What == "" {
			errs = append(errs, fmt.Errorf("own file %q (%s): must be an absolute path with a description", o.Pattern, o.What))
			continue
		}
		r, err := compileRule(sys, home, o.Pattern, SourceOwn)
		if err != nil {
			errs = append(errs, fmt.Errorf("own %s %q: %w", o.What, o.Pattern, err))
			continue
		}
		r.What = o.What
		rules = append(rules, r)
	}
	for _, p := range BuiltinDeny {
		add(p, SourceBuiltin)
	}
	for _, p := range user {
		add(p, SourceConfig)
	}
	return rules, errors.Join(errs...)
}

func compileRule(sys Rules, home, pattern, source string) (Rule, error) {
	r := Rule{Pattern: pattern, Source: source}
	p := strings.TrimSpace(pattern)
	if sys.windows() {
		// "\" separates, as in doublestar.PathMatch on Windows; see Literal.
		p = sys.slash(p)
	}
	for _, c := range strings.Split(strings.TrimPrefix(p, "~"), "/") {
		if strings.Trim(c, "*?.") != "" && !sys.isAbs(c+"/") {
			r.names = append(r.names, c)
		}
	}
	switch {
	case p == "" || strings.ContainsRune(p, 0):
		return r, errors.New("empty or contains NUL")
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			return r, errors.New("no home directory to expand ~ against")
		}
		if sys.native() {
			p = filepath.Join(home, strings.TrimPrefix(p, "~"))
		} else {
			p = sys.join(home, strings.TrimPrefix(p, "~"))
		}
		r.kind = ruleAbs
	case sys.isAbs(p):
		r.kind = ruleAbs
	case strings.Contains(strings.TrimSuffix(p, "/"), "/"):
		r.kind = ruleRel
	default:
		r.kind = ruleName
	}
	p = strings.TrimSuffix(p, "/")
	switch {
	case r.kind == ruleAbs:
		// The form a guest's absolute path is cleaned to (Rules.cleanAbs).
		if sys.native() {
			p = sys.hostPath(p)
		}
		p = sys.cleanPattern(p)
	case r.kind == ruleRel:
		p = path.Clean(p)
	}
	if r.kind == ruleRel {
		p = strings.TrimPrefix(p, "./")
		if p == ".." || strings.HasPrefix(p, "../") {
			return r, errors.New("relative pattern may not start with ..")
		}
	}
	if !doublestar.ValidatePattern(p) {
		return r, errors.New("not a valid glob pattern")
	}
	variants := []string{p}
	if r.kind == ruleAbs && sys.native() {
		if c := sys.hostPath(canonicalPattern(filepath.FromSlash(p))); c != p {
			variants = append(variants, c)
		}
	}
	for _, v := range variants {
		f := fold(v)
		r.variants = append(r.variants, f)
		r.prefixes = append(r.prefixes, folded{matchPrefix(f.full), matchPrefix(f.simple)})
	}
	return r, nil
}

// Reason says why the rule denies a path, for messages.
func (r *Rule) Reason() string {
	if r.Source == SourceOwn {
		return fmt.Sprintf("warden's own %s; no grant can allow a tool to read or write it", r.What)
	}
	return fmt.Sprintf("matches deny rule %q (%s)", r.Pattern, r.Source)
}

// canonicalPattern evaluates the symlinks of the longest existing literal
// prefix of an absolute pattern: with HOME=/home/u a symlink to /data/u,
// "~/.ssh" also becomes "/data/u/.ssh", which is what a real path shows.
func canonicalPattern(p string) string {
	lit := literalPrefix(p)
	// Cut back to a whole component.
	if lit != p {
		lit = filepath.Dir(lit + "x")
	}
	for cur := lit; ; cur = filepath.Dir(cur) {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			rest := strings.TrimPrefix(p, cur)
			return filepath.Clean(real + rest)
		} else if !errors.Is(err, fs.ErrNotExist) && !isNotDir(err) {
			return p
		}
		if cur == "/" || cur == "." || filepath.Dir(cur) == cur {
			return p
		}
	}
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }

// literalPrefix is the part of a pattern before its first glob
// metacharacter.
func literalPrefix(p string) string {
	if i := strings.IndexAny(p, `*?[{\`); i >= 0 {
		return p[:i]
	}
	return p
}

// matchPrefix is a prefix that every path a pattern matches starts with:
// its literal directories before the first metacharacter, without the last
// slash ("a/**" also matches "a").
func matchPrefix(p string) string {
	lit := literalPrefix(p)
	if lit == p {
		return p
	}
	if j := strings.LastIndexByte(lit, '/'); j > 0 {
		return lit[:j]
	}
	return ""
}

// matchTree reports whether subject is pattern v or lies beneath it.
func matchTree(v, prefix, subject string) bool {
	if !strings.HasPrefix(subject, prefix) {
		return false
	}
	if doublestar.MatchUnvalidated(v, subject) {
		return true
	}
	// Try every ancestor: "~/.ssh" denies "~/.ssh/id_ed25519" and "/proc/*/mem"
	// denies nothing but the mem file itself.
	for i := len(subject) - 1; i >= len(prefix); i-- {
		if subject[i] == '/' {
			if doublestar.MatchUnvalidated(v, subject[:i]) {
				return true
			}
		}
	}
	return false
}

// matchRel applies the rule to a folded, clean, root-relative path: either
// form of the rule matching the same form of the path.
func (r *Rule) matchRel(rel folded) bool {
	if rel.full == "." {
		return false
	}
	v, p := r.variants[0], r.prefixes[0]
	match := func(v, p, rel string) bool {
		switch r.kind {
		case ruleName:
			return matchComponent(v, rel)
		case ruleRel:
			return matchTree(v, p, rel)
		}
		return false
	}
	return match(v.full, p.full, rel.full) || !(v.same() && rel.same()) && match(v.simple, p.simple, rel.simple)
}

// matchComponent reports whether the name pattern v matches a component
// of rel.
func matchComponent(v, rel string) bool {
	for rest := rel; ; {
		comp, tail, more := strings.Cut(rest, "/")
		if doublestar.MatchUnvalidated(v, comp) {
			return true
		}
		if !more {
			return false
		}
		rest = tail
	}
}

// matchAbs applies the rule to a folded, clean, absolute path, as matchRel
// does.
func (r *Rule) matchAbs(abs folded) bool {
	if r.kind != ruleAbs {
		return false
	}
	for i, v := range r.variants {
		p := r.prefixes[i]
		if matchTree(v.full, p.full, abs.full) || !(v.same() && abs.same()) && matchTree(v.simple, p.simple, abs.simple) {
			return true
		}
	}
	return false
}
