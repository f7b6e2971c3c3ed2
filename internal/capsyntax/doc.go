// Package capsyntax holds the grammar of grant values, what config grants
// the host capabilities: net grant entries and host names, env keys, LSP
// language names and memory topics. (The memory.backend URL and warden's
// own WARDEN_ prefix are internal/backendurl's and internal/configkey's.)
//
// Two sides check the same strings: config, when it loads a file or `warden
// grant` edits one, and the capabilities in hostfuncs, when a tool's
// descriptor requests something and when a call is matched against a
// grant. A grammar defined in hostfuncs made config import the
// capabilities (and everything they import); here both import one leaf
// package, so that a grant config accepts is one the capability parses,
// and config depends on no hostfuncs package. It imports nothing of warden
// but internal/download (to show a value without its user:password@) and
// internal/configkey (no env key may be warden's own).
package capsyntax
