package sigverify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/warden-run/warden/internal/termsafe"
)

// Mode says what to do about signatures for a source.
type Mode string

const (
	// Require: install only what verifies against a policy; a source with
	// no policy cannot be installed.
	Require Mode = "require"
	// Warn: verify when there is a policy; install anyway, with a warning,
	// when there is none or verification fails.
	Warn Mode = "warn"
	// Off: do not verify.
	Off Mode = "off"
)

// ParseMode reads a mode; the empty string is Require, the default.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Require:
		return Require, nil
	case Warn, Off:
		return Mode(s), nil
	}
	return "", fmt.Errorf("%w: signature mode %q: want require, warn or off", ErrBadPolicy, termsafe.Line(s))
}

// Rule gives the policy for the sources a pattern names. A pattern is a
// repository (ghcr.io/acme/tool), a repository prefix followed by /*
// (ghcr.io/acme/* names every repository below ghcr.io/acme, at any depth),
// or * alone (every source). Mode empty means Require.
type Rule struct {
	Pattern string
	Mode    Mode
	Policy  Policy
}

// Matcher picks the rule for a source: the rule whose pattern matches and is
// the longest wins, so ghcr.io/acme/tool overrides ghcr.io/acme/*, which
// overrides *. Sources no rule names get Default, with no policy.
type Matcher struct {
	rules []Rule
	// urlPatterns are the rules' patterns as MatchURL compares them.
	urlPatterns []string
	Default     Mode
}

// Decision is what Match chose for a source.
type Decision struct {
	Mode Mode
	// Policy is the matching rule's policy; nil when no rule matched.
	Policy *Policy
	// Pattern is the matching rule's pattern; empty when no rule matched.
	Pattern string
}

// NewMatcher checks the rules and the default mode ("" is require). Patterns
// are compared case-insensitively (OCI repository names are lower case and
// registry host names case-insensitive); two rules may not have the same
// pattern.
func NewMatcher(rules []Rule, def Mode) (*Matcher, error) {
	d, err := ParseMode(string(def))
	if err != nil {
		return nil, err
	}
	m := &Matcher{Default: d}
	seen := map[string]bool{}
	for _, r := range rules {
		p := strings.ToLower(r.Pattern)
		if err := checkPattern(p); err != nil {
			return nil, err
		}
		if seen[p] {
			return nil, fmt.Errorf("%w: pattern %q appears twice", ErrBadPolicy, termsafe.Line(r.Pattern))
		}
		seen[p] = true
		mode, err := ParseMode(string(r.Mode))
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", termsafe.Line(r.Pattern), err)
		}
		m.rules = append(m.rules, Rule{Pattern: p, Mode: mode, Policy: r.Policy})
		m.urlPatterns = append(m.urlPatterns, urlPattern(r.Pattern))
	}
	return m, nil
}

// urlPattern is pattern p as MatchURL compares it: the host in lower case
// (host names ignore case), the path as written (URL paths do not).
func urlPattern(p string) string {
	host, path, ok := strings.Cut(p, "/")
	if !ok {
		return strings.ToLower(p)
	}
	return strings.ToLower(host) + "/" + path
}

func checkPattern(p string) error {
	if p == "*" {
		return nil
	}
	base := strings.TrimSuffix(p, "/*")
	switch {
	case p == "":
		return fmt.Errorf("%w: empty source pattern", ErrBadPolicy)
	case strings.ContainsAny(base, "*?[]@ \t\r\n"):
		shown := strconv.Quote(termsafe.Line(p))
		if strings.Contains(p, "@") {
			// Not shown: user:password@ is how credentials are written.
			// (download.ShowHost would do, but download's tests import this
			// package.)
			shown = "(not shown: it has an @, so it may carry credentials)"
		}
		return fmt.Errorf("%w: source pattern %s: only a final /* (or * alone) is a wildcard, and a pattern names repositories, not tags or digests", ErrBadPolicy, shown)
	case base == "" || strings.HasPrefix(base, "/") || strings.HasSuffix(base, "/") || strings.Contains(base, "//"):
		return fmt.Errorf("%w: source pattern %q has an empty path segment", ErrBadPolicy, termsafe.Line(p))
	case strings.Contains(base[strings.LastIndexByte(base, '/')+1:], ":") && strings.Contains(base, "/"):
		return fmt.Errorf("%w: source pattern %q: a pattern names repositories, not tags", ErrBadPolicy, termsafe.Line(p))
	}
	return nil
}

// Repository returns the repository part of an OCI reference, lower-cased:
// ghcr.io/acme/tool:1.0 and ghcr.io/acme/tool@sha256:… give ghcr.io/acme/tool.
// A port in the registry host (localhost:5000/tool) is kept.
func Repository(ref string) string {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndexByte(ref, ':'); i > strings.LastIndexByte(ref, '/') && strings.Contains(ref, "/") {
		ref = ref[:i]
	}
	return strings.ToLower(ref)
}

// Match returns the decision for the source ref (a reference with or without
// tag or digest). It is a pure function of the matcher and ref.
func (m *Matcher) Match(ref string) Decision { return m.decide(Repository(ref), nil) }

// MatchURL returns the decision for a download URL by its key, the
// canonical URL's host (lower case) and path (download.MatchKey:
// example.com/releases/v1/tool.wasm). Unlike Match it strips no tag or
// digest (a path may hold : and @, and /trusted/tool.wasm@x is not
// /trusted/tool.wasm), and it compares the path with each pattern's path
// as written, case-sensitively: a server may serve /Trusted/ and /trusted/
// to different people.
func (m *Matcher) MatchURL(key string) Decision {
	return m.decide(key, func(i int) string { return m.urlPatterns[i] })
}

// decide picks the most specific rule whose pattern (pattern(i) for rule
// i; nil is the rule's lower-cased pattern) matches source.
func (m *Matcher) decide(source string, pattern func(int) string) Decision {
	best := -1
	for i, r := range m.rules {
		p := r.Pattern
		if pattern != nil {
			p = pattern(i)
		}
		if !patternMatches(p, source) {
			continue
		}
		if best < 0 || longer(r.Pattern, m.rules[best].Pattern) {
			best = i
		}
	}
	if best < 0 {
		return Decision{Mode: m.Default}
	}
	r := m.rules[best]
	p := r.Policy
	return Decision{Mode: r.Mode, Policy: &p, Pattern: r.Pattern}
}

// longer orders patterns by specificity: a longer literal part wins, and at
// equal length an exact repository beats a prefix (ghcr.io/acme beats
// ghcr.io/acme/*, whose literal part is the same).
func longer(a, b string) bool {
	la, lb := literal(a), literal(b)
	if len(la) != len(lb) {
		return len(la) > len(lb)
	}
	return !strings.HasSuffix(a, "*") && strings.HasSuffix(b, "*")
}

func literal(p string) string { return strings.TrimSuffix(strings.TrimSuffix(p, "*"), "/") }

func patternMatches(pattern, repo string) bool {
	if pattern == "*" {
		return repo != ""
	}
	if prefix, ok := strings.CutSuffix(pattern, "/*"); ok {
		return strings.HasPrefix(repo, prefix+"/") && len(repo) > len(prefix)+1
	}
	return repo == pattern
}
