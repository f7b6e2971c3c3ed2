package env

import (
	"strings"

	"github.com/warden-run/warden/internal/capsyntax"
)

// WardenPrefix starts the environment variables that configure warden
// itself (capsyntax.WardenPrefix).
const WardenPrefix = capsyntax.WardenPrefix

// IsWardenKey reports whether key names warden's own configuration
// (WardenPrefix, compared ignoring case).
func IsWardenKey(key string) bool { return capsyntax.IsWardenKey(key) }

// ValidateKey reports why key cannot name an environment value in a grant
// (config tools.grants.<tool>.env) or a tool's request, or nil when it can
// (capsyntax.ValidateEnvKey: config checks grants with the same grammar).
func ValidateKey(key string) error { return capsyntax.ValidateEnvKey(key) }

// foldKey is the one spelling of an env key that grants, requests and
// env.values meet in: upper case. Keys are config keys (viper lower-cases
// env.values' keys), so "home", "Home" and "HOME" are one key, whichever
// side spells it which way; keys are ASCII (validKey).
func foldKey(key string) string { return strings.ToUpper(key) }

// Covers reports whether a grant of the env key grant gives the key
// request: the same key in foldKey's spelling, as the gate compares them
// (internal/capset asks it for reviews, prompts and diffs).
func Covers(grant, request string) bool { return foldKey(grant) == foldKey(request) }
