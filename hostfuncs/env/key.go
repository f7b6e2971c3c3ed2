package env

import (
	"strings"

	"github.com/warden-run/warden/internal/capsyntax"
	"github.com/warden-run/warden/internal/configkey"
)

// WardenPrefix starts the environment variables that configure warden
// itself: viper reads WARDEN_<KEY PATH> as a config key (WARDEN_SERVER_TOKEN
// is server.token). No tool is ever granted a key with it, in any case.
// config reads it from the same place (configkey.EnvPrefix).
const WardenPrefix = configkey.EnvPrefix

// IsWardenKey reports whether key names warden's own configuration
// (WardenPrefix, compared ignoring case).
func IsWardenKey(key string) bool { return configkey.IsEnv(key) }

// ValidateKey reports why key cannot name an environment value in a grant
// (config tools.grants.<tool>.env) or a tool's request, or nil when it can:
// 1-128 bytes of A-Z a-z 0-9 _, not starting with a digit, and not
// warden's own (IsWardenKey). The grammar is capsyntax.ValidateEnvKey,
// which config checks grants with.
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
