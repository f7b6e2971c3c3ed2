package env

import (
	"fmt"
	"strings"
)

// ValidateKey reports why key cannot name an environment value in a grant
// (config tools.grants.<tool>.env) or a tool's request, or nil when it can:
// 1-128 bytes of A-Z a-z 0-9 _, not starting with a digit.
func ValidateKey(key string) error {
	if !validKey(key) {
		return fmt.Errorf("%q is not a key (1-128 of A-Z a-z 0-9 _, not starting with a digit)", key)
	}
	return nil
}

// foldKey is the one spelling of an env key that grants, requests and
// env.values meet in: upper case. Keys are config keys (viper lower-cases
// env.values' keys), so "home", "Home" and "HOME" are one key, whichever
// side spells it which way; keys are ASCII (validKey).
func foldKey(key string) string { return strings.ToUpper(key) }
