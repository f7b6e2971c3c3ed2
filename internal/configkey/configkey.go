// Package configkey is the one fold of a name into a config.yaml key.
//
// viper lower-cases every map key it reads, so tools.grants.Danger,
// tools.limits.DANGER and tools.pins.danger are one key, "danger". Every
// place that looks a tool, module or config key name up in config, writes
// it back, names it in a message, or keeps names unique for that reason
// folds it with Fold, and nothing else: a second spelling of the fold
// would let a policy written one way miss the tool it names. The package
// imports nothing of warden's, so config, runtime, hostfuncs and the app
// all share it without importing each other. Folds that are not about
// config names (host names, URL schemes, header names, answers typed at a
// prompt) keep their own.
package configkey

import "strings"

// Fold returns name as config.yaml's keys spell it: lower case, as viper
// folds them. Tool and module names are ASCII (tool.ValidName), so this
// is also the key under which tool names are unique.
func Fold(name string) string { return strings.ToLower(name) }

// EnvPrefix starts the environment variables that set config keys: viper
// reads WARDEN_<KEY PATH> as a key (WARDEN_SERVER_TOKEN is server.token).
// No tool is ever granted or handed a variable with it, in any case.
const EnvPrefix = "WARDEN_"

// IsEnv reports whether the environment variable name is one of warden's
// own: EnvPrefix, compared ignoring case.
func IsEnv(name string) bool {
	return len(name) >= len(EnvPrefix) && strings.EqualFold(name[:len(EnvPrefix)], EnvPrefix)
}
