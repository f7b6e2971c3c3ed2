package config

import (
	"fmt"
	"path"

	"github.com/warden-run/warden/internal/configkey"
)

// ToolKey is the one spelling of a tool or module name that every tools.*
// policy is matched in: lower case. Tool names are unique ignoring case
// (internal/catalog.Table) and ASCII (tool.ValidName), and viper lower-cases map
// keys but not list values, so a policy written "Danger" and a tool called
// "danger" (or "DANGER") must meet here, folded alike on both sides, or the
// policy would miss the tool it names. It is configkey.Fold, the one fold
// of a name into a config key, which the runtime and the app use too.
func ToolKey(name string) string { return configkey.Fold(name) }

// matchTool reports whether the tool-name pattern (path.Match syntax)
// matches the tool called name, both folded by ToolKey. A pattern that
// does not parse matches nothing; config validation refuses it (see
// checkToolPattern).
func matchTool(pattern, name string) bool {
	ok, _ := path.Match(ToolKey(pattern), ToolKey(name))
	return ok
}

// checkToolPattern reports why pattern cannot name tools, or nil. Beyond
// path.Match's syntax, a character class must mean the same once folded by
// ToolKey: "[Z-a]" (Z, the punctuation between, a) becomes the empty
// "[z-a]", and "[A-z]" becomes "[a-z]", losing the punctuation between the
// cases; a gate or hide written with one would silently match less than it
// says. path.Match does not refuse a reversed range either. So a range
// with an upper-case end must have two, and no range may be reversed.
// Load checks tools.gates and tools.scopes keys as the file writes them
// (checkKeysAsWritten), before viper lower-cases them; Validate sees them
// folded, where only a reversed range is left to catch.
func checkToolPattern(pattern string) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return err
	}
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '[':
			end, err := checkClass(pattern, i+1)
			if err != nil {
				return err
			}
			i = end
		}
	}
	return nil
}

// checkClass checks the ranges of the class whose body starts at p[i]
// (after its '[') and returns the index of its closing ']'.
func checkClass(p string, i int) (int, error) {
	if i < len(p) && p[i] == '^' {
		i++
	}
	for first := true; i < len(p); first = false {
		if p[i] == ']' && !first {
			return i, nil
		}
		lo, n := classChar(p, i)
		i += n
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, m := classChar(p, i+1)
			i += 1 + m
			if lo > hi {
				return 0, fmt.Errorf("range %c-%c in %q is empty", lo, hi, p)
			}
			if isUpper(lo) != isUpper(hi) {
				return 0, fmt.Errorf("range %c-%c in %q means something else ignoring case, as tool names are matched; list the characters instead", lo, hi, p)
			}
		}
	}
	return len(p), nil // unterminated: path.Match has refused it
}

// classChar is the character at p[i] in a class, escaped or not, and how
// many bytes it takes.
func classChar(p string, i int) (byte, int) {
	if p[i] == '\\' && i+1 < len(p) {
		return p[i+1], 2
	}
	return p[i], 1
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
