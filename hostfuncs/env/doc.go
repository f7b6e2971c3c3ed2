// Package env is the warden.env capability: named configuration values,
// typically secrets such as API tokens, handed to the tools granted them.
//
// Config (env.values in config.yaml) maps each key to a literal value or to
// a host environment variable, read at each request:
//
//	env:
//	  values:
//	    GITHUB_TOKEN: {from_env: GH_TOKEN}
//	    API_BASE:     {value: https://api.example.com}
//
// Secrets (config's secrets:) are keys too: each read at every get from
// its source (a file, the OS keyring, a host variable; internal/secrets),
// and readable only by the tools the entry binds, served by the module
// their grant is bound to. The capability holds no secrets of its own:
// each call carries them as its tool's policy resolved them when it was
// admitted (hostfuncs.Call.Secrets, internal/policy), as it carries its
// grants, and each get checks them against the policy in force too
// (Config.Secrets), so that a reload revokes a binding at once, even for a
// call already running. Any other tool is denied with the config line that
// would allow it. Each value read is passed to Config.Read first, for the logs to
// redact it.
//
// A tool may read only the keys listed in its grant,
// tools.grants.<tool>.env (Capabilities.Env). There is no wildcard and no
// way to read the host environment as a whole. Keys are A-Z a-z 0-9 _ and
// compared case-insensitively, because config map keys reach warden
// lower-cased.
//
// # Operations
//
//	get   {"op":"get","key":"GITHUB_TOKEN"} → {"key":"GITHUB_TOKEN","value":"..."}
//	list  {"op":"list"}                     → {"keys":["API_BASE","GITHUB_TOKEN"]}
//
// list returns the granted keys that have a value, sorted. Errors: denied
// (no env grant, or the key is not granted, whether or not it is
// configured), not_found (granted, but not configured or its host variable
// is unset), invalid_arguments (bad request).
//
// Values appear only in get replies: never in errors or logs, and a Value
// prints as [redacted] wherever it is formatted or logged.
package env
