package capsyntax

import (
	"fmt"
	"regexp"
)

var languagePattern = regexp.MustCompile(`^[A-Za-z0-9_.+-]{1,64}$`)

// ValidateLanguage reports why name cannot name a language in a grant
// (config tools.grants.<tool>.lsp) or a tool's request, or nil when it can:
// 1-64 of A-Z a-z 0-9 _ . + -.
func ValidateLanguage(name string) error {
	if !languagePattern.MatchString(name) {
		return fmt.Errorf("%q is not a language name (1-64 of A-Z a-z 0-9 _ . + -)", name)
	}
	return nil
}
