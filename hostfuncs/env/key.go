package env

import "fmt"

// ValidateKey reports why key cannot name an environment value in a grant
// (config tools.grants.<tool>.env) or a tool's request, or nil when it can:
// 1-128 bytes of A-Z a-z 0-9 _, not starting with a digit.
func ValidateKey(key string) error {
	if !validKey(key) {
		return fmt.Errorf("%q is not a key (1-128 of A-Z a-z 0-9 _, not starting with a digit)", key)
	}
	return nil
}
