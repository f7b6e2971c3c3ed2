package lsp

import (
	"go.lsp.dev/protocol"

	"github.com/warden-run/warden/hostfuncs/lsp/lspwire"
)

// Target names one language server: a configured language serving one
// project root. The Manager runs at most one server per Target.
type Target struct {
	// Language is a key of Config.Languages, e.g. "go".
	Language string
	// Root is the absolute project root; paths in requests and results are
	// relative to it.
	Root string
}

// The reply shapes live in lspwire, shared with guest tools.
type (
	Position   = lspwire.Position
	Location   = lspwire.Location
	Symbol     = lspwire.Symbol
	Hover      = lspwire.Hover
	Diagnostic = lspwire.Diagnostic
)

var symbolKinds = [...]string{
	protocol.SymbolKindFile:          "file",
	protocol.SymbolKindModule:        "module",
	protocol.SymbolKindNamespace:     "namespace",
	protocol.SymbolKindPackage:       "package",
	protocol.SymbolKindClass:         "class",
	protocol.SymbolKindMethod:        "method",
	protocol.SymbolKindProperty:      "property",
	protocol.SymbolKindField:         "field",
	protocol.SymbolKindConstructor:   "constructor",
	protocol.SymbolKindEnum:          "enum",
	protocol.SymbolKindInterface:     "interface",
	protocol.SymbolKindFunction:      "function",
	protocol.SymbolKindVariable:      "variable",
	protocol.SymbolKindConstant:      "constant",
	protocol.SymbolKindString:        "string",
	protocol.SymbolKindNumber:        "number",
	protocol.SymbolKindBoolean:       "boolean",
	protocol.SymbolKindArray:         "array",
	protocol.SymbolKindObject:        "object",
	protocol.SymbolKindKey:           "key",
	protocol.SymbolKindNull:          "null",
	protocol.SymbolKindEnumMember:    "enumMember",
	protocol.SymbolKindStruct:        "struct",
	protocol.SymbolKindEvent:         "event",
	protocol.SymbolKindOperator:      "operator",
	protocol.SymbolKindTypeParameter: "typeParameter",
}

func symbolKindName(k protocol.SymbolKind) string {
	if int(k) < len(symbolKinds) && symbolKinds[k] != "" {
		return symbolKinds[k]
	}
	return "unknown"
}

func severityName(s protocol.DiagnosticSeverity) string {
	switch s {
	case protocol.DiagnosticSeverityError:
		return "error"
	case protocol.DiagnosticSeverityWarning:
		return "warning"
	case protocol.DiagnosticSeverityInformation:
		return "information"
	case protocol.DiagnosticSeverityHint:
		return "hint"
	}
	return ""
}
