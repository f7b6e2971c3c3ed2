package lsp

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/warden-run/warden/internal/limits"
)

// Language says how to run the language server of one language.
type Language struct {
	// Command is the server executable, looked up in PATH unless it contains
	// a slash. The server must speak LSP over stdin and stdout.
	Command string
	// Args are passed to Command. "${root}" in them is replaced by the
	// project root.
	Args []string
	// Extensions are the file extensions this language claims, with the dot
	// (".go"). A request naming a path but no language picks the language
	// by extension.
	Extensions []string
	// LanguageID is the LSP languageId sent in didOpen; the language's name
	// when empty.
	LanguageID string
	// LanguageIDs overrides LanguageID for some extensions: tsserver parses
	// a .tsx file opened as "typescript" without JSX.
	LanguageIDs map[string]string
	// Env is added to warden's own environment when the server starts
	// ("KEY=value").
	Env []string
	// InitializationOptions is sent as-is in the initialize request, with
	// "${root}" in its strings replaced by the project root.
	InitializationOptions json.RawMessage
	// Install is the command that installs the server, quoted in the error
	// a query gets when Command is not installed.
	Install string
	// Probe, when set, are arguments Command must run with successfully
	// for the server to count as installed: a rustup proxy on PATH whose
	// toolchain lacks the component fails "--version".
	Probe []string
	// WaitForProject makes a server's first query wait (within the
	// request's deadline) until the server has diagnosed the file queried,
	// or for a workspace symbol query the first file of the language in
	// the project, which it opens: both servers answer from a partial
	// project while they load it (typescript-language-server's syntax
	// server answers references in one file only, and searches only the
	// projects of open files; pyright finds no workspace symbols until it
	// has found the project's files), and both have loaded it once they
	// publish the file's diagnostics.
	WaitForProject bool
}

// DefaultLanguages returns the languages warden knows without any config,
// each run the way its users run it (docs/lsp-tools.md): go (gopls),
// python (pyright), typescript and javascript (typescript-language-server,
// with the project's typescript package when it has one, else the one
// installed beside the server), c and cpp (clangd, with the project's
// compile_commands.json when it has one, else fallback flags), rust
// (rust-analyzer).
//
// ".h" is c's: it is the only header extension C has, while C++ projects
// also have .hpp and .hh; clangd parses a header by the flags of the files
// that include it whichever server opened it, and a tool granted only cpp
// is served .h files by its cpp server (both run clangd).
func DefaultLanguages() map[string]Language {
	ts := func(id string, exts ...string) Language {
		return Language{
			Command:    "typescript-language-server",
			Args:       []string{"--stdio"},
			Extensions: exts,
			LanguageID: id,
			LanguageIDs: map[string]string{
				".tsx": "typescriptreact", ".jsx": "javascriptreact",
			},
			Install:        "npm i -g typescript-language-server typescript@5",
			WaitForProject: true,
		}
	}
	clangd := func(id string, exts ...string) Language {
		return Language{
			Command:    "clangd",
			Extensions: exts,
			LanguageID: id,
			// Without a compile_commands.json (clangd looks for one in the
			// file's directory and its parents, and their build/), files
			// are parsed with these flags: the project's own headers are
			// found from the root and from include/.
			InitializationOptions: json.RawMessage(`{"fallbackFlags":["-I${root}","-I${root}/include"]}`),
			Install:               "apt install clangd",
		}
	}
	return map[string]Language{
		"go": {
			Command:    "gopls",
			Extensions: []string{".go"},
			// Workspace symbols of dependencies would all be dropped anyway
			// (they live outside the project root), so don't make gopls
			// search them.
			InitializationOptions: json.RawMessage(`{"symbolScope":"workspace"}`),
			Install:               "go install golang.org/x/tools/gopls@latest",
		},
		"python": {
			Command:    "pyright-langserver",
			Args:       []string{"--stdio"},
			Extensions: []string{".py", ".pyi"},
			Install:    "npm i -g pyright",

			WaitForProject: true,
		},
		"typescript": ts("typescript", ".ts", ".tsx", ".mts", ".cts"),
		"javascript": ts("javascript", ".js", ".jsx", ".mjs", ".cjs"),
		"c":          clangd("c", ".c", ".h"),
		"cpp":        clangd("cpp", ".cc", ".cpp", ".cxx", ".hpp", ".hh"),
		"rust": {
			Command:    "rust-analyzer",
			Extensions: []string{".rs"},
			Install:    "rustup component add rust-analyzer",
			// rustup installs a rust-analyzer proxy on PATH that fails
			// until the component is added.
			Probe: []string{"--version"},
		},
	}
}

// Config configures a Manager. Zero durations take the defaults below.
type Config struct {
	// Languages maps a language name (the name tools are granted, as in
	// `lsp: [go]`) to its server, on top of DefaultLanguages. An entry
	// named like a default language overrides it field by field: empty
	// fields keep the default's, so {"go": {Command: "/opt/gopls"}} only
	// swaps the binary. A default language that shares an extension with a
	// configured one is dropped.
	Languages map[string]Language

	// IdleTimeout stops a server nobody has queried for this long (default
	// 10 minutes). Negative keeps servers until Close.
	IdleTimeout time.Duration
	// StartTimeout bounds starting a server and its initialize handshake
	// (default 60 s).
	StartTimeout time.Duration
	// RequestTimeout bounds each request to a running server (default 30 s);
	// the call's own context may end it sooner.
	RequestTimeout time.Duration
	// ShutdownGrace is how long a stopping server gets for shutdown and exit
	// before its process group is killed (default 2 s).
	ShutdownGrace time.Duration
	// DiagnosticsWait bounds how long a diagnostics query waits for the
	// server to publish diagnostics of the document's current version
	// (default 3 s).
	DiagnosticsWait time.Duration

	// MaxFailures crashes or failed starts within FailureWindow open the
	// circuit breaker of a server (defaults 5 and 60 s): queries are then
	// refused for BreakerCooldown (default 60 s) instead of restarting it.
	MaxFailures     int
	FailureWindow   time.Duration
	BreakerCooldown time.Duration

	// Logger receives server lifecycle events and the servers' stderr at
	// debug level. Nil discards them.
	Logger *slog.Logger

	// now is the clock; tests replace it to drive the breaker.
	now func() time.Time
}

const (
	defaultIdleTimeout     = limits.DefaultLSPIdleTTL
	defaultStartTimeout    = 60 * time.Second
	defaultRequestTimeout  = limits.DefaultLSPTimeout
	defaultShutdownGrace   = 2 * time.Second
	defaultDiagnosticsWait = 3 * time.Second
	defaultMaxFailures     = 5
	defaultFailureWindow   = 60 * time.Second
	defaultBreakerCooldown = 60 * time.Second
)

// withDefaults validates c and fills in its defaults.
func (c Config) withDefaults() (Config, error) {
	merged := mergeLanguages(DefaultLanguages(), c.Languages)
	seen := map[string]string{}
	langs := make(map[string]Language, len(merged))
	for name, l := range merged {
		if name == "" || strings.ContainsAny(name, " \t\n/") {
			return c, fmt.Errorf("lsp: language name %q: must be a non-empty word", name)
		}
		if l.Command == "" {
			return c, fmt.Errorf("lsp: language %s: command is empty", name)
		}
		if len(l.Extensions) == 0 {
			return c, fmt.Errorf("lsp: language %s: no file extensions", name)
		}
		exts := make([]string, len(l.Extensions))
		for i, ext := range l.Extensions {
			if !strings.HasPrefix(ext, ".") || len(ext) < 2 || strings.Contains(ext, "/") {
				return c, fmt.Errorf("lsp: language %s: extension %q must look like \".go\"", name, ext)
			}
			if other, dup := seen[ext]; dup {
				return c, fmt.Errorf("lsp: extension %s is claimed by both %s and %s", ext, other, name)
			}
			seen[ext] = name
			exts[i] = ext
		}
		l.Extensions = exts
		l.Args = slices.Clone(l.Args)
		l.Env = slices.Clone(l.Env)
		l.Probe = slices.Clone(l.Probe)
		l.LanguageIDs = maps.Clone(l.LanguageIDs)
		if l.LanguageID == "" {
			l.LanguageID = name
		}
		if len(l.InitializationOptions) > 0 && !json.Valid(l.InitializationOptions) {
			return c, fmt.Errorf("lsp: language %s: initializationOptions is not valid JSON", name)
		}
		langs[name] = l
	}
	c.Languages = langs
	setDefault(&c.IdleTimeout, defaultIdleTimeout)
	setDefault(&c.StartTimeout, defaultStartTimeout)
	setDefault(&c.RequestTimeout, defaultRequestTimeout)
	setDefault(&c.ShutdownGrace, defaultShutdownGrace)
	setDefault(&c.DiagnosticsWait, defaultDiagnosticsWait)
	setDefault(&c.FailureWindow, defaultFailureWindow)
	setDefault(&c.BreakerCooldown, defaultBreakerCooldown)
	if c.MaxFailures <= 0 {
		c.MaxFailures = defaultMaxFailures
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// mergeLanguages lays configured over defaults; see Config.Languages.
func mergeLanguages(defaults, configured map[string]Language) map[string]Language {
	out := make(map[string]Language, len(defaults)+len(configured))
	claimed := map[string]bool{}
	for name, l := range configured {
		if def, ok := defaults[name]; ok {
			if l.Command == "" {
				l.Command = def.Command
				if l.Args == nil {
					l.Args = def.Args
				}
				// How to install and check the default's binary says
				// nothing about another one.
				l.Install, l.Probe = def.Install, def.Probe
				// So does the default server's loading behaviour: a
				// replacement that publishes no diagnostics would make
				// every first query wait for its deadline.
				l.WaitForProject = l.WaitForProject || def.WaitForProject
			}
			if len(l.Extensions) == 0 {
				l.Extensions = def.Extensions
			}
			if l.LanguageID == "" {
				l.LanguageID = def.LanguageID
			}
			if l.InitializationOptions == nil {
				l.InitializationOptions = def.InitializationOptions
			}
			if l.LanguageIDs == nil {
				l.LanguageIDs = def.LanguageIDs
			}
		}
		out[name] = l
		for _, ext := range l.Extensions {
			claimed[ext] = true
		}
	}
	for name, def := range defaults {
		if _, ok := out[name]; ok || slices.ContainsFunc(def.Extensions, func(ext string) bool { return claimed[ext] }) {
			continue
		}
		out[name] = def
	}
	return out
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// languageFor returns the language claiming relPath's extension.
func (c *Config) languageFor(relPath string) (string, bool) {
	ext := path.Ext(relPath)
	for name, l := range c.Languages {
		if slices.Contains(l.Extensions, ext) {
			return name, true
		}
	}
	return "", false
}

// languageID is the languageId of a document of l at relPath.
func (l Language) languageID(relPath string) string {
	if id, ok := l.LanguageIDs[path.Ext(relPath)]; ok {
		return id
	}
	return l.LanguageID
}

// languageID is the languageId of relPath sent to a server of language
// name: that of the language claiming its extension, which differs from
// name's when a server takes another language's file (serves): a .js file
// sent to a typescript server is still "javascript".
func (c *Config) languageID(name, relPath string) string {
	if other, ok := c.languageFor(relPath); ok {
		name = other
	}
	return c.Languages[name].languageID(relPath)
}

// serves reports whether a server of language name takes files with
// relPath's extension: its own, or those of a language run by the same
// command (a cpp server takes c's .h, as clangd parses both).
func (c *Config) serves(name, relPath string) bool {
	l, ok := c.Languages[name]
	if !ok {
		return false
	}
	ext := path.Ext(relPath)
	if slices.Contains(l.Extensions, ext) {
		return true
	}
	other, ok := c.languageFor(relPath)
	return ok && c.Languages[other].Command == l.Command && slices.Equal(c.Languages[other].Args, l.Args)
}
