// Package lspwire holds the JSON shapes of warden.lsp replies (docs/abi.md,
// "warden.lsp operations"). The host capability (hostfuncs/lsp) produces
// them and guest tools (tools-wasm/internal/lsptool) decode them; keeping
// them in one dependency-free package keeps both sides of the wire in step
// and out of each other's imports.
package lspwire

// Position is a place in a file. Both numbers are 1-based; Column counts
// bytes of the line's UTF-8 text (as the Go compiler does), whatever
// encoding the server speaks.
type Position struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Location is a range in a project file.
type Location struct {
	// Path is slash-separated and relative to the project root.
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"endLine"`
	EndColumn int    `json:"endColumn"`
}

// Symbol is a document or workspace symbol.
type Symbol struct {
	Name string `json:"name"`
	// Kind is the LSP symbol kind in lower camel case: "function",
	// "method", "struct", "field", "variable", "constant", ...
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
	// Container is the enclosing symbol's name (workspace symbols only,
	// when the server says).
	Container string `json:"container,omitempty"`
	// Path is set on workspace symbols only; document symbols are all in
	// the queried file.
	Path string `json:"path,omitempty"`
	// Line and Column locate the symbol's name: pass them to definition,
	// references or hover. 0 when the server gave no position.
	Line   int `json:"line,omitempty"`
	Column int `json:"column,omitempty"`
	// StartLine is where the symbol's whole range starts, when that is not
	// Line (a doc comment, a grouped declaration). EndLine is where it ends.
	StartLine int      `json:"startLine,omitempty"`
	EndLine   int      `json:"endLine,omitempty"`
	Children  []Symbol `json:"children,omitempty"`
}

// Hover is what a server shows when the cursor rests on a position.
type Hover struct {
	Text string `json:"text"`
	// Format is "plaintext" or "markdown".
	Format string `json:"format"`
	// Range is the hovered span, when the server says.
	Range *Location `json:"range,omitempty"`
}

// Diagnostic is an error, warning or hint a server published for a file.
type Diagnostic struct {
	Location
	// Severity is "error", "warning", "information" or "hint".
	Severity string `json:"severity,omitempty"`
	Message  string `json:"message"`
	Source   string `json:"source,omitempty"`
	Code     string `json:"code,omitempty"`
	// Related are locations the message refers to.
	Related []Location `json:"related,omitempty"`
}

// Language is one language a tool may ask about (the languages op): a
// name its grant lists and the file extensions its server takes.
type Language struct {
	Name       string   `json:"name"`
	Extensions []string `json:"extensions"`
}
