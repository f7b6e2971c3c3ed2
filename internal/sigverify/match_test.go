package sigverify

import (
	"errors"
	"strings"
	"testing"
)

func testMatcher(t testing.TB) *Matcher {
	m, err := NewMatcher([]Rule{
		{Pattern: "*", Mode: Warn},
		{Pattern: "ghcr.io/acme/*", Policy: Policy{Identity: "acme", Issuer: "gh"}},
		{Pattern: "ghcr.io/acme/special", Policy: Policy{Identity: "special", Issuer: "gh"}},
		{Pattern: "ghcr.io/acme/legacy/*", Mode: Off},
		{Pattern: "localhost:5000/*", Policy: Policy{PublicKey: []byte("k")}},
	}, Require)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatch(t *testing.T) {
	m := testMatcher(t)
	for ref, want := range map[string]struct {
		mode    Mode
		pattern string
	}{
		"ghcr.io/acme/tool:1.0":                               {Require, "ghcr.io/acme/*"},
		"GHCR.io/Acme/Tool@sha256:" + strings.Repeat("a", 64): {Require, "ghcr.io/acme/*"},
		"ghcr.io/acme/team/tool":                              {Require, "ghcr.io/acme/*"},
		"ghcr.io/acme/special:latest":                         {Require, "ghcr.io/acme/special"},
		"ghcr.io/acme/special/sub":                            {Require, "ghcr.io/acme/*"},
		"ghcr.io/acme/legacy/old:2":                           {Off, "ghcr.io/acme/legacy/*"},
		"ghcr.io/acme":                                        {Warn, "*"},
		"ghcr.io/acmecorp/tool":                               {Warn, "*"},
		"docker.io/library/x":                                 {Warn, "*"},
		"localhost:5000/tool:3":                               {Require, "localhost:5000/*"},
	} {
		d := m.Match(ref)
		if d.Mode != want.mode || d.Pattern != want.pattern || d.Policy == nil {
			t.Errorf("Match(%q) = %+v, want mode %s pattern %s", ref, d, want.mode, want.pattern)
		}
	}
	if d := m.Match("ghcr.io/acme/special"); d.Policy.Identity != "special" {
		t.Errorf("special policy: %+v", d.Policy)
	}

	noStar, err := NewMatcher([]Rule{{Pattern: "ghcr.io/acme/*"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if d := noStar.Match("quay.io/x/y"); d.Mode != Require || d.Policy != nil || d.Pattern != "" {
		t.Errorf("unmatched: %+v", d)
	}
	exactBeatsPrefix, _ := NewMatcher([]Rule{{Pattern: "ghcr.io/acme/*", Mode: Off}, {Pattern: "ghcr.io/acme", Mode: Warn}}, Require)
	if d := exactBeatsPrefix.Match("ghcr.io/acme"); d.Mode != Warn {
		t.Errorf("exact: %+v", d)
	}
}

func TestNewMatcherErrors(t *testing.T) {
	for _, rules := range [][]Rule{
		{{Pattern: ""}},
		{{Pattern: "ghcr.io/*/tool"}},
		{{Pattern: "ghcr.io/acme*"}},
		{{Pattern: "ghcr.io/acme/tool:1.0"}},
		{{Pattern: "ghcr.io/acme/tool@sha256:aa"}},
		{{Pattern: "ghcr.io//tool"}},
		{{Pattern: "/*"}},
		{{Pattern: "ghcr.io/acme/*"}, {Pattern: "GHCR.IO/acme/*"}},
		{{Pattern: "ghcr.io/acme/*", Mode: "maybe"}},
	} {
		if _, err := NewMatcher(rules, Require); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("NewMatcher(%+v): %v, want ErrBadPolicy", rules, err)
		}
	}
	if _, err := NewMatcher(nil, "strict"); !errors.Is(err, ErrBadPolicy) {
		t.Errorf("bad default: %v", err)
	}
	for _, s := range []string{"", "require", "warn", "off"} {
		if _, err := ParseMode(s); err != nil {
			t.Errorf("ParseMode(%q): %v", s, err)
		}
	}
}

func FuzzMatch(f *testing.F) {
	for _, s := range []string{"ghcr.io/acme/tool:1", "ghcr.io/acme", "localhost:5000/a@sha256:x", "", ":", "@", "/", "a/b:c/d", "ghcr.io/acme/special/x"} {
		f.Add(s, "ghcr.io/acme/*")
	}
	f.Fuzz(func(t *testing.T, ref, pattern string) {
		m := testMatcher(t)
		d := m.Match(ref)
		if d2 := m.Match(ref); d2.Mode != d.Mode || d2.Pattern != d.Pattern {
			t.Fatalf("Match is not deterministic for %q", ref)
		}
		repo := Repository(ref)
		if d.Pattern == "" {
			if d.Mode != m.Default || d.Policy != nil {
				t.Fatalf("unmatched %q: %+v", ref, d)
			}
		} else if !patternMatches(d.Pattern, repo) {
			t.Fatalf("%q: pattern %q does not match %q", ref, d.Pattern, repo)
		}
		// No matching rule is more specific than the chosen one.
		for _, r := range m.rules {
			if patternMatches(r.Pattern, repo) && d.Pattern != "" && longer(r.Pattern, d.Pattern) {
				t.Fatalf("%q: chose %q over the more specific %q", ref, d.Pattern, r.Pattern)
			}
		}
		// A user pattern either is refused or behaves consistently.
		um, err := NewMatcher([]Rule{{Pattern: pattern, Mode: Off}}, Warn)
		if err != nil {
			if !errors.Is(err, ErrBadPolicy) {
				t.Fatalf("NewMatcher(%q): %v", pattern, err)
			}
			return
		}
		ud := um.Match(ref)
		if (ud.Pattern != "") != patternMatches(strings.ToLower(pattern), repo) {
			t.Fatalf("pattern %q ref %q: %+v", pattern, ref, ud)
		}
		if ud.Pattern == "" && ud.Mode != Warn || ud.Pattern != "" && ud.Mode != Off {
			t.Fatalf("pattern %q ref %q: %+v", pattern, ref, ud)
		}
	})
}

// TestMatchURL: a URL's key is matched as it is: no :tag or @digest is
// stripped, so a file name with one does not land on the pattern of a
// shorter path, and the path is compared case-sensitively with the
// pattern as written (its host ignoring case).
func TestMatchURL(t *testing.T) {
	m, err := NewMatcher([]Rule{
		{Pattern: "EXAMPLE.com/releases/tool.wasm", Mode: Off},
		{Pattern: "example.com/Trusted/*", Mode: Warn},
	}, Require)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]Mode{
		"example.com/releases/tool.wasm":        Off,
		"example.com/releases/Tool.wasm":        Require,
		"example.com/releases/tool.wasm:latest": Require,
		"example.com/releases/tool.wasm%40x":    Require,
		"example.com/Trusted/a/b.wasm":          Warn,
		"example.com/trusted/a/b.wasm":          Require,
		"example.com/TRUSTED/a/b.wasm":          Require,
		"example.com/Trusted":                   Require,
		"example.com/evil/tool.wasm":            Require,
	} {
		if got := m.MatchURL(key).Mode; got != want {
			t.Errorf("MatchURL(%q) = %s, want %s", key, got, want)
		}
	}
	// Match, for OCI references, strips the tag and ignores case.
	if got := m.Match("example.com/releases/tool.wasm:latest").Mode; got != Off {
		t.Errorf("Match with a tag = %s", got)
	}
	if got := m.Match("example.com/trusted/x").Mode; got != Warn {
		t.Errorf("Match in other case = %s", got)
	}
}

// TestPatternShowsNoCredential: a pattern with user:password@ is refused
// and not shown.
func TestPatternShowsNoCredential(t *testing.T) {
	for pattern, shown := range map[string]string{
		"https://u:s3cretpw@host/*": "(not shown: it has an @, so it may carry credentials)",
		"u:s3cretpw@ghcr.io/acme/*": "(not shown: it has an @, so it may carry credentials)",
		"ghcr.io/acme/*?":           `"ghcr.io/acme/*?"`,
	} {
		_, err := NewMatcher([]Rule{{Pattern: pattern}}, Require)
		if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), "source pattern "+shown) || strings.Contains(err.Error(), "s3cretpw") {
			t.Errorf("NewMatcher(%q): %v", pattern, err)
		}
	}
}
