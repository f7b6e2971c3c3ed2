package lsp

import "github.com/warden-run/warden/internal/capsyntax"

// ValidateLanguage reports why name cannot name a language in a grant
// (config tools.grants.<tool>.lsp) or a tool's request, or nil when it can:
// 1-64 of A-Z a-z 0-9 _ . + - (capsyntax.ValidateLanguage, which config
// checks grants with).
func ValidateLanguage(name string) error { return capsyntax.ValidateLanguage(name) }
