package pathguard

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// folded is a pattern or a path in the two forms deny rules are matched in
// (see fold). For ASCII both are the lower-case string.
type folded struct {
	// full is the Unicode canonical caseless form: the full case fold of
	// the NFD, composed to NFC ("STRASSE" and "straße" are both "strasse").
	full string
	// simple folds rune by rune (NFC, then each rune to one case: "ſ" is
	// "s", "ß" stays "ß"), so a glob's "?" or class still takes the
	// characters the pattern's author saw as one.
	simple string
}

// fold is the one spelling deny rules and the paths they are matched
// against meet in. Deny rules ignore case because a file system may:
// macOS, Windows, and Linux directories with casefold (ext4, f2fs) open
// ".SSH" as ".ssh". Those file systems also ignore the Unicode
// normalization form (é as one code point or two) and fold fully, not only
// to lower case: on ext4 casefold "id_rſa", with the long s U+017F, opens
// "id_rsa". strings.ToLower folds neither, so a spelling the file system
// takes for a denied name slipped past the rule. A rule matches when
// either form of it matches the same form of the path: the full form
// catches every spelling a file system may equate, the simple one keeps
// "stra?e" matching "straße" as written. Folding more than a given file
// system does only denies more.
func fold(s string) folded {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		lower := strings.ToLower(s)
		return folded{lower, lower}
	}
	nfd := norm.NFD.String(s)
	return folded{
		// A Caser keeps state: one per call, never shared.
		full:   norm.NFC.String(cases.Fold().String(nfd)),
		simple: strings.Map(func(r rune) rune { return unicode.ToLower(unicode.ToUpper(r)) }, norm.NFC.String(nfd)),
	}
}

// same reports whether both forms of f are one string, so that matching
// the second would repeat the first.
func (f folded) same() bool { return f.full == f.simple }
