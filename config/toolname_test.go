package config

import (
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// spellings are the ways a client, a descriptor or a config line may spell
// one tool; tool names are unique ignoring case, so each names the same one.
func spellings(name string) []string {
	return []string{name, strings.ToLower(name), strings.ToUpper(name), strings.ToUpper(name[:1]) + strings.ToLower(name[1:])}
}

// TestToolPoliciesIgnoreCaseBothWays: every tools.* policy written in one
// case applies to the tool spelled in any other, from config.yaml (viper
// lower-cases map keys but not the hide/expose lists) and from a Config
// whose keys were never folded.
func TestToolPoliciesIgnoreCaseBothWays(t *testing.T) {
	loaded, err := Load(writeConfig(t, `
tools:
  hide: [Danger, "Sec*"]
  expose: ["D*", "S*", "dan[_]er"]
  gates:
    Danger: {action: block}
    "Dan*": {action: confirm}
  scopes:
    "DAN*": [admin]
  limits:
    Danger: {timeout: 7s, max_in_flight: 2, rate: 5/s}
  grants:
    Danger: {env: [HOME]}
`))
	if err != nil {
		t.Fatal(err)
	}
	literal := &Config{Tools: Tools{
		Hide:   []string{"Danger", "Sec*"},
		Expose: []string{"D*", "S*", "dan[_]er"},
		Gates:  map[string]Gate{"Danger": {Action: GateBlock}, "Dan*": {Action: GateConfirm}, "d*an*ger": {Action: GateAllow}},
		Scopes: map[string][]string{"DAN*": {"admin"}},
	}}
	for _, c := range []*Config{loaded, literal} {
		for _, name := range spellings("danger") {
			if c.Exposed(name) {
				t.Errorf("Exposed(%s) = true: tools.hide [Danger] does not hide it", name)
			}
			if g, key, _ := c.GateFor(name); g.Action != GateBlock || ToolKey(key) != "danger" {
				t.Errorf("GateFor(%s) = %s from %q, want block from danger", name, g.Action, key)
			}
			if s, _, ok := c.ScopesFor(name); !ok || len(s) != 1 || s[0] != "admin" {
				t.Errorf("ScopesFor(%s) = %v", name, s)
			}
		}
		for _, name := range spellings("dangerous") {
			if g, _, _ := c.GateFor(name); g.Action != GateConfirm {
				t.Errorf("GateFor(%s) = %q, want confirm from Dan*", name, g.Action)
			}
		}
		for _, name := range spellings("secrets") {
			if c.Exposed(name) {
				t.Errorf("Exposed(%s) = true: tools.hide Sec* does not hide it", name)
			}
		}
		for _, name := range spellings("Dan_er") {
			if !c.Exposed(name) {
				t.Errorf("Exposed(%s) = false", name)
			}
		}
	}
	for _, name := range spellings("danger") {
		if d := loaded.ToolTimeout(name); d.Seconds() != 7 {
			t.Errorf("ToolTimeout(%s) = %s", name, d)
		}
		if n := loaded.ToolMaxInFlight(name); n != 2 {
			t.Errorf("ToolMaxInFlight(%s) = %d", name, n)
		}
		if r := loaded.ToolRate(name); r == nil || r.Setting != "tools.limits.danger.rate" {
			t.Errorf("ToolRate(%s) = %+v", name, r)
		}
		if g, err := loaded.Grants(name, "danger"); err != nil || len(g.Env) != 1 {
			t.Errorf("Grants(%s) = %v, %v", name, g, err)
		}
	}
}

// TestToolPatternsThatCaseChangesAreRefused: a class range that folding
// to lower case empties ([Z-a] becomes [z-a]) or narrows ([A-z] loses the
// punctuation between the cases) would make a gate or hide match less than
// it says, silently: path.Match does not refuse a reversed range. Load
// refuses both, naming the key.
func TestToolPatternsThatCaseChangesAreRefused(t *testing.T) {
	for body, want := range map[string]string{
		`tools: {gates: {"dan[Z-a]er": {action: block}}}`: "tools.gates.dan[Z-a]er: \"dan[Z-a]er\" is not a tool name or pattern: range Z-a",
		`tools: {scopes: {"x[Z-_]": [admin]}}`:            "tools.scopes.x[Z-_]",
		`tools: {hide: ["dan[A-z]er"]}`:                   `tools.hide: "dan[A-z]er" is not a tool name or pattern: range A-z`,
		`tools: {expose: ["x[^0-Z]"]}`:                    "tools.expose",
		`tools: {hide: ["x[\\Z-a]"]}`:                     "tools.hide",
		`tools: {gates: {"dan[A-z]er": {action: block}}}`: `tools.gates.dan[A-z]er: "dan[A-z]er" is not a tool name or pattern: range A-z`,
		`tools: {scopes: {"[a-Z]*": [admin]}}`:            `tools.scopes.[a-Z]*`,
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	for _, ok := range []string{"dan[_]er", "[a-z]*", "[A-Z]*", "x[0-9]", "x[^a-c]", `x\[`, "x[!-/]", "[[-`]"} {
		if err := checkToolPattern(ok); err != nil {
			t.Errorf("checkToolPattern(%s) = %v", ok, err)
		}
	}
}

// FuzzToolPatternFold: two spellings of a tool get the same decision from
// every pattern, and a pattern config accepts decides alike however the
// letters of its name part are cased.
func FuzzToolPatternFold(f *testing.F) {
	for _, s := range [][2]string{{"Dan*", "danger"}, {"[A-Z]x", "Qx"}, {"dan[Z-a]er", "dan_er"}, {`\D?`, "dX"}, {"[^a-c]*", "Bee"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if !tool.ValidName(name) {
			return // no other name reaches a tool: the registry looks names up exactly
		}
		want := matchTool(pattern, name)
		for _, n := range []string{strings.ToUpper(name), strings.ToLower(name)} {
			if matchTool(pattern, n) != want {
				t.Fatalf("pattern %q: %q and %q decided apart", pattern, name, n)
			}
		}
		swapped := strings.Map(func(r rune) rune {
			switch {
			case 'a' <= r && r <= 'z':
				return r - 'a' + 'A'
			case 'A' <= r && r <= 'Z':
				return r - 'A' + 'a'
			}
			return r
		}, pattern)
		if checkToolPattern(pattern) == nil && checkToolPattern(swapped) == nil && matchTool(swapped, name) != want {
			t.Fatalf("patterns %q and %q decide %q apart", pattern, swapped, name)
		}
		c := &Config{Tools: Tools{Gates: map[string]Gate{pattern: {Action: GateBlock}}, Hide: []string{pattern}}}
		g, _, _ := c.GateFor(name)
		for _, n := range []string{strings.ToUpper(name), strings.ToLower(name)} {
			if g2, _, _ := c.GateFor(n); g2 != g || c.Exposed(n) != c.Exposed(name) {
				t.Fatalf("pattern %q: %q and %q decided apart", pattern, name, n)
			}
		}
	})
}

// TestKeysDifferingOnlyInCaseAreRefused: viper folds every key, so two
// entries spelled apart only by case are one, and it kept one and dropped
// the other silently: a block gate for "danger" beside an allow for
// "Danger" was gone. Load refuses the pair, naming both spellings.
func TestKeysDifferingOnlyInCaseAreRefused(t *testing.T) {
	for body, want := range map[string]string{
		"tools:\n  gates:\n    Danger: {action: allow}\n    danger: {action: block}\n": `tools.gates.danger: "Danger" and "danger" are one key`,
		"tools:\n  grants:\n    x: {env: [A]}\n    X: {env: [B]}\n":                    `tools.grants.x: "x" and "X" are one key`,
		"env:\n  values:\n    HOME: {value: a}\n    home: {value: b}\n":                `env.values.home: "HOME" and "home" are one key`,
		"Tools:\n  hide: [a]\ntools:\n  hide: [b]\n":                                   `tools: "Tools" and "tools" are one key`,
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	if _, err := Load(writeConfig(t, "tools:\n  gates:\n    Danger: {action: block}\n  grants:\n    danger: {}\n")); err != nil {
		t.Errorf("one spelling per key: %v", err)
	}
}
