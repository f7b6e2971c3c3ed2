package capsyntax

import (
	"fmt"
	"strings"

	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/download"
)

// ValidateEnvKey reports why key cannot name an environment value in a grant
// (config tools.grants.<tool>.env) or a tool's request, or nil when it can:
// 1-128 bytes of A-Z a-z 0-9 _, not starting with a digit, and not
// warden's own (configkey.IsEnv).
func ValidateEnvKey(key string) error {
	if name, _, ok := strings.Cut(key, "="); ok {
		// KEY=VALUE pasted where a key goes: the value is likely the secret.
		return fmt.Errorf("%q is not a key: name the key alone (its value, after the =, is not shown; values go in env.values)", name+"=…")
	}
	if strings.Contains(key, "@") {
		// A URL pasted where a key goes: user:password@ is not shown.
		return fmt.Errorf("%q (shown without what precedes the @) is not a key (1-128 of A-Z a-z 0-9 _, not starting with a digit)", download.ShowHost(key))
	}
	if !ValidEnvKey(key) {
		return fmt.Errorf("%q is not a key (1-128 of A-Z a-z 0-9 _, not starting with a digit)", key)
	}
	if configkey.IsEnv(key) {
		return fmt.Errorf("%q is warden's own configuration (WARDEN_* keys set warden's config, e.g. WARDEN_SERVER_TOKEN); no grant can give one to a tool", key)
	}
	return nil
}

// ValidEnvKey reports whether key is 1-128 bytes of A-Z a-z 0-9 _, not
// starting with a digit.
func ValidEnvKey(key string) bool {
	if key == "" || len(key) > 128 || '0' <= key[0] && key[0] <= '9' {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
