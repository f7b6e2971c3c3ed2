package env

import (
	"fmt"
	"strings"
)

// ValidateKey reports why key cannot name an environment value in a grant
// (config tools.grants.<tool>.env) or a tool's request, or nil when it can:
// 1-128 bytes of A-Z a-z 0-9 _, not starting with a digit.
func ValidateKey(key string) error {
	if name, _, ok := strings.Cut(key, "="); ok {
		// KEY=VALUE pasted where a key goes: the value is likely the secret.
		return fmt.Errorf("%q is not a key: name the key alone (its value, after the =, is not shown; values go in env.values)", name+"=…")
	}
	if !validKey(key) {
		return fmt.Errorf("%q is not a key (1-128 of A-Z a-z 0-9 _, not starting with a digit)", key)
	}
	return nil
}
