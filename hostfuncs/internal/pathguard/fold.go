package pathguard

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// fold is the one spelling deny rules and the paths they are matched
// against meet in: Unicode canonical caseless form (NFD of the full case
// fold of the NFD), which for ASCII is plain lower case. Deny rules ignore
// case because a file system may: macOS, Windows, and Linux directories
// with casefold (ext4, f2fs) open ".SSH" as ".ssh". Those file systems also
// ignore the Unicode normalization form (é as one code point or two) and
// fold fully, not only to lower case: on ext4 casefold "id_rſa", with the
// long s U+017F, opens "id_rsa". strings.ToLower folds neither, so a
// spelling the file system takes for a denied name slipped past the rule.
// Folding more than a given file system does only denies more.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	// A Caser keeps state: one per call, never shared.
	return norm.NFD.String(cases.Fold().String(norm.NFD.String(s)))
}
