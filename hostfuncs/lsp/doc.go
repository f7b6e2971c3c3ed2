// Package lsp is warden's language-server capability, served to guests as
// the import warden.lsp (docs/abi.md): one JSON request in, one JSON reply
// out. Tools use it to ask real language servers (gopls for Go, pyright
// for Python, typescript-language-server for TypeScript and JavaScript,
// clangd for C and C++, rust-analyzer for Rust) about the project: symbols, definitions, references, hover text and diagnostics.
//
// # Manager
//
// A Manager runs the servers. Each (language, project root) gets at most
// one, started by the first query that needs it; concurrent first queries
// wait on one start. A server is started in its own process group (and, on
// Linux, with Pdeathsig so it dies with warden), initialized with
// hierarchical document symbols and UTF-8 positions offered, and stopped
// after Config.IdleTimeout without queries. Files are sent to it as queries
// need them: didOpen with the file's current content, and a full-content
// didChange when its size or modification time changed since.
//
// A server that exits unexpectedly is restarted by the next query; a query
// that was running on it is retried once on the new one. Config.MaxFailures
// crashes or failed starts within Config.FailureWindow open a circuit
// breaker: queries then fail at once with a message naming the last
// failure, for Config.BreakerCooldown, after which one start is tried.
// Every request runs under Config.RequestTimeout and the call's context; a
// request given up on is cancelled on the server ($/cancelRequest).
// Manager.Close sends shutdown and exit, and after Config.ShutdownGrace
// kills the process group.
//
// Languages are configured by name (Config.Languages): a command, its
// arguments and the file extensions it serves. DefaultLanguages are known
// without config; an entry named like one overrides it field by field. A
// server that is not installed is answered unavailable, naming the
// command that installs it (Manager.Installed), and is not counted as a
// crash. A server that loads the project in the background is waited for
// by its first query (Language.WaitForProject) and by workspace symbol
// queries that find nothing while it reports work-done progress, within
// the request's deadline.
//
// # Permission
//
// A tool needs its language in its lsp grant (`lsp: [go]`), else every
// request is denied. Every path a request names must pass the fs read gate
// (ReadGate, the fs capability's CheckRead) before anything is asked of a
// server, and fails with the fs capability's own denial; every location a
// reply would carry passes it too, and those in files the tool may not read
// are silently left out. Hover text is withheld (null) when the hovered
// symbol is defined in such a file. Locations outside the project root (the
// standard library, dependencies in the module cache) are left out of
// replies: a tool is told only about project files.
//
// # Operations
//
// Every request is an object with "op"; unknown fields are rejected.
// "path" is a project-relative, slash-separated file path ("pkg/a.go";
// "project:pkg/a.go" also works; other fs roots do not). "language" is
// optional when "path" is given (the extension picks it) or when the tool
// is granted one language; otherwise it is required. Lines and columns, in
// requests and replies, are 1-based; a column counts bytes of the line's
// UTF-8 text, as the Go compiler's do (warden converts for servers that
// count UTF-16 units). Nothing found is [] or null, not an error, though a
// server may refuse a position with an error of its own (gopls answers
// references on a keyword with "no identifier found"): that is failed,
// with the server's message.
//
// documentSymbol: {"op":"documentSymbol","path":"pkg/a.go"}. Reply:
// {"path","symbols":[{"name","kind","detail"?,"line","column","startLine"?,
// "endLine","children"?:[...]}]}. kind is the LSP symbol kind in lower
// camel case ("function", "method", "struct", "field", "variable",
// "constant", "interface", ...). line and column locate the symbol's name,
// ready for definition, references or hover; endLine is the last line of
// its whole range, startLine its first when that is not line.
//
// workspaceSymbol: {"op":"workspaceSymbol","language":"go","query":"Foo"}
// searches the project (the query may be empty; matching is the server's,
// usually fuzzy). Reply: {"symbols":[{"name","kind","container"?,"path",
// "line","column","endLine"}],"truncated"?}.
//
// definition: {"op":"definition","path":"pkg/a.go","line":12,"column":5}.
// Reply: {"locations":[{"path","line","column","endLine","endColumn"}]}:
// the range of the defining name.
//
// references: {"op":"references","path":"pkg/a.go","line":12,"column":5,
// "includeDeclaration"?:true}. Reply: {"locations":[...],"truncated"?},
// sorted by path, line and column.
//
// hover: {"op":"hover","path":"pkg/a.go","line":12,"column":5}. Reply:
// {"hover":{"text","format":"plaintext"|"markdown","range"?:{location}}}
// or {"hover":null}.
//
// diagnostics: {"op":"diagnostics","path":"pkg/a.go"} syncs the file and
// waits up to Config.DiagnosticsWait for the server to diagnose its current
// content; {"op":"diagnostics","language":"go"} returns what the server has
// published for the whole project so far, without waiting. Reply:
// {"diagnostics":[{"path","line","column","endLine","endColumn",
// "severity":"error"|"warning"|"information"|"hint","message","source"?,
// "code"?,"related"?:[location]}],"complete","truncated"?}; complete is
// false when the wait ran out before the server published.
//
// languages: {"op":"languages"} lists the languages the tool may ask
// about, granted and configured, in grant order, without starting any
// server. Reply: {"languages":[{"name","extensions":[".py",...]}]}. A tool
// outlining a directory picks its files with it.
//
// Every list reply also says "total": how many items exist (after the fs
// gate's filtering). A list stops at MaxResults (1000) with "truncated":
// true; "offset":N in the request skips N items, so a tool fetches the
// rest page by page (hover takes no offset).
//
// Errors: denied (no lsp grant for the language, or the fs gate refuses the
// path), invalid_arguments (malformed request, a path outside the project,
// a file of another language, a line or column outside the file),
// not_found (no such file, or no server configured for the language),
// cancelled (the call ended), failed (the server failed to start, crashed,
// answered with an error, did not answer within the request timeout, or its
// circuit breaker is open; the message says which).
package lsp
