package lsp

import (
	"encoding/json"
	"fmt"
	"log/slog"
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
	// Args are passed to Command.
	Args []string
	// Extensions are the file extensions this language claims, with the dot
	// (".go"). A request naming a path but no language picks the language
	// by extension.
	Extensions []string
	// LanguageID is the LSP languageId sent in didOpen; the language's name
	// when empty.
	LanguageID string
	// Env is added to warden's own environment when the server starts
	// ("KEY=value").
	Env []string
	// InitializationOptions is sent as-is in the initialize request.
	InitializationOptions json.RawMessage
}

// DefaultLanguages returns the languages warden knows without any config:
// "go", served by gopls from PATH.
func DefaultLanguages() map[string]Language {
	return map[string]Language{
		"go": {
			Command:    "gopls",
			Extensions: []string{".go"},
			// Workspace symbols of dependencies would all be dropped anyway
			// (they live outside the project root), so don't make gopls
			// search them.
			InitializationOptions: json.RawMessage(`{"symbolScope":"workspace"}`),
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
