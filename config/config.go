// Package config reads warden's config.yaml (with viper), validates it,
// reporting every problem where it is written (config.yaml:3, the key path,
// what is wrong), and keeps it current as the file changes.
//
// Every scalar key can be overridden from the environment: WARDEN_ followed
// by the key path in upper case with underscores, e.g. WARDEN_SERVER_TOKEN or
// WARDEN_TOOLS_DEFAULTS_TIMEOUT.
package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/warden-run/warden/internal/backendurl"
	"github.com/warden-run/warden/internal/capsyntax"
	"github.com/warden-run/warden/internal/configkey"
	"github.com/warden-run/warden/internal/download"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/userdirs"
	"github.com/warden-run/warden/tool"
)

// Config is the whole of config.yaml.
type Config struct {
	Project  Project           `mapstructure:"project"`
	Tools    Tools             `mapstructure:"tools"`
	Security Security          `mapstructure:"security"`
	Server   Server            `mapstructure:"server"`
	LSP      LSP               `mapstructure:"lsp"`
	Net      Net               `mapstructure:"net"`
	Env      Env               `mapstructure:"env"`
	Secrets  map[string]Secret `mapstructure:"secrets"`
	Memory   Memory            `mapstructure:"memory"`
	Tasks    Tasks             `mapstructure:"tasks"`
	Log      Log               `mapstructure:"log"`
	// Access is per-person policy on a team server (config/access.go).
	Access Access `mapstructure:"access"`
	// Approvals says where the questions a client cannot show wait for a
	// person (config/approvals.go).
	Approvals Approvals `mapstructure:"approvals"`

	// File is the config file this was read from ("" when none), and Dir the
	// directory relative paths in it are resolved against.
	File string `mapstructure:"-"`
	Dir  string `mapstructure:"-"`
	// Blank reports that File held no YAML value at all: nothing, or only
	// whitespace and comments (see Live.Reload). `{}` is not blank.
	Blank bool `mapstructure:"-"`

	// signaturePatterns maps each security.signatures pattern, in the
	// lower case viper gives every key, to the pattern as File writes it
	// (see signaturePatternsAsWritten).
	signaturePatterns map[string]string
	// src is File's text as loaded, to say on which line a refused key is
	// written (locator); nil when there is no file.
	src []byte
	// shown is File as the user named it, as messages name it
	// (config.yaml:3), also on reload.
	shown string
}

// Project locates the files tools may be granted.
type Project struct {
	// Root is the project root (default: the config file's directory).
	Root string `mapstructure:"root"`
	// Roots are extra named roots; grants address them as "name:path".
	Roots map[string]string `mapstructure:"roots"`
}

// Tools says where modules live and what each may use.
type Tools struct {
	Dir      string `mapstructure:"dir"`
	CacheDir string `mapstructure:"cache_dir"`
	// CacheMax bounds the compile cache in CacheDir (cache.go).
	CacheMax ByteSize `mapstructure:"cache_max"`
	// Tiering is "auto" (a module not yet in the compile cache answers
	// from wazero's interpreter while it compiles in the background) or
	// "off" (loads wait for the compiler).
	Tiering  string            `mapstructure:"tiering"`
	Defaults Limits            `mapstructure:"defaults"`
	Limits   map[string]Limits `mapstructure:"limits"`
	Grants   map[string]Grant  `mapstructure:"grants"`
	// Pins maps a module name to the sha256 approved at install.
	Pins map[string]string `mapstructure:"pins"`
	// Sources records where a module installed from a registry or a URL
	// came from, so that config.yaml is a lockfile (`warden sync`).
	Sources map[string]Source `mapstructure:"sources"`
	// Descriptors locks, per module, the digest of each tool's descriptor
	// as a person reviewed it at install (descriptorcheck.Digest: name,
	// title, description, schemas, annotations): a module whose tools
	// describe themselves otherwise at load is refused until reviewed
	// again. Written by `warden install`/`update`; a module without an
	// entry (installed before the lock existed) is not checked.
	Descriptors map[string]map[string]string `mapstructure:"descriptors"`
	// Fetch bounds downloads from registries and URLs.
	Fetch Fetch `mapstructure:"fetch"`
	// Gates decide, per tool name or pattern, whether a call runs: block,
	// confirm (ask the person first) or result (a fixed answer).
	Gates map[string]Gate `mapstructure:"gates"`
	// Scopes lists, per tool name or pattern, the OAuth scopes a token
	// must grant for a tools/call of the tool (server.oauth): all of them.
	// Exact names and patterns resolve as Gates do.
	Scopes map[string][]string `mapstructure:"scopes"`
	// Expose and Hide choose the tools clients see, by name pattern
	// (path.Match syntax): a tool is served when it matches Expose (or
	// Expose is empty) and does not match Hide.
	Expose []string `mapstructure:"expose"`
	Hide   []string `mapstructure:"hide"`
	// Tasks overrides, per tool name or pattern, whether a tool may
	// (optional), must (required) or must not (forbidden) run as an MCP
	// task, whatever its descriptor says (docs/tasks.md). Exact names and
	// patterns resolve as Gates do.
	Tasks map[string]string `mapstructure:"tasks"`
}

// Gate is what happens before a call of the tools it applies to runs.
type Gate struct {
	// Action is "block", "confirm", "result" or "allow" (no gate, e.g. to
	// exempt one tool from a pattern or from the destructive default).
	Action string `mapstructure:"action"`
	// Message is shown to the person (confirm) or returned (block).
	Message string `mapstructure:"message"`
	// Result is the text a "result" gate returns instead of running.
	Result string `mapstructure:"result"`
}

// Limits are one module's bounds with human units ("30s", "128MiB"); the
// runtime takes them as limits.Module (ModuleLimits) converted where the
// runtime is driven.
type Limits struct {
	Timeout      time.Duration `mapstructure:"timeout"`
	Memory       ByteSize      `mapstructure:"memory"`
	MaxOutput    ByteSize      `mapstructure:"max_output"`
	Fuel         int64         `mapstructure:"fuel"`
	LoadBudget   time.Duration `mapstructure:"load_budget"`
	Isolation    string        `mapstructure:"isolation"`
	MaxInstances int           `mapstructure:"max_instances"`
	// LogBytes and LogLines bound what one call may log; CompileBudget
	// bounds compiling a module at load.
	LogBytes      ByteSize      `mapstructure:"log_bytes"`
	LogLines      int           `mapstructure:"log_lines"`
	CompileBudget time.Duration `mapstructure:"compile_budget"`
	// IdleTTL and Preload are read under tools.defaults only: a module
	// unused for IdleTTL releases its instances and compiled code (0 =
	// never), and Preload compiles every module in the background at start
	// instead of on its first call.
	IdleTTL time.Duration `mapstructure:"idle_ttl"`
	Preload bool          `mapstructure:"preload"`
	// ClientWait bounds how long a call waits for the client (and the
	// person behind it) to answer an elicitation, sampling or roots
	// request; the call's own deadline and fuel do not run meanwhile.
	ClientWait time.Duration `mapstructure:"client_wait"`
	// MaxInFlight, Rate and Burst are read per tool only (tools.limits.<tool>):
	// how many of the tool's calls run at once (default: its module's
	// max_instances), and a token bucket for its calls ("10/s", burst 20)
	// that replaces server.rate_limit.per_tool for it.
	MaxInFlight int    `mapstructure:"max_in_flight"`
	Rate        string `mapstructure:"rate"`
	Burst       int    `mapstructure:"burst"`
	// TaskTimeout and TaskFuel are the deadline and fuel of a call that
	// runs as an MCP task, in place of Timeout and Fuel (tools.defaults,
	// then the module's entry, then the tool's; see TaskBudget).
	TaskTimeout time.Duration `mapstructure:"task_timeout"`
	TaskFuel    int64         `mapstructure:"task_fuel"`
}

// Grant is what one tool may use. Nothing is granted unless listed.
type Grant struct {
	// Module is the module the grant belongs to: it applies only while the
	// tool is served by the module of exactly this name. Empty means the
	// module named like the tool (its key under tools.grants).
	Module       string   `mapstructure:"module"`
	FS           FSGrant  `mapstructure:"fs"`
	Memory       string   `mapstructure:"memory"`
	MemoryTopics []string `mapstructure:"memory_topics"`
	LSP          []string `mapstructure:"lsp"`
	Net          []string `mapstructure:"net"`
	Env          []string `mapstructure:"env"`
	// Client lists what the tool may ask of the MCP client: elicit,
	// sample, roots (tool.ClientFeatures).
	Client []string `mapstructure:"client"`
	// Config is the tool's own key/value configuration, any key, as an
	// Extism plugin's author wrote it (`api-key`, `base-url`): each value
	// is {value: literal} or {from_env: HOST_VAR}. Only this tool reads it.
	Config map[string]EnvValue `mapstructure:"config"`
}

// FSGrant lists paths relative to a root.
type FSGrant struct {
	Read  []string `mapstructure:"read"`
	Write []string `mapstructure:"write"`
}

// Security holds rules that override every grant.
type Security struct {
	// Deny lists extra path patterns no tool may touch, on top of the
	// built-in deny-list.
	Deny []string `mapstructure:"deny"`
	// Confirm is "on" (the default: a destructive tool holding a write,
	// net or env grant asks the person before each call unless a gate says
	// otherwise) or "off".
	Confirm string `mapstructure:"confirm"`
	// Prompts is "on" (the default: a call denied a capability its tool
	// requested asks the person, when the client can be asked) or "off".
	Prompts string `mapstructure:"prompts"`
	// Signatures maps a source pattern (REGISTRY/REPO, a prefix ending in
	// /*, or *) to whom its modules must be signed by.
	Signatures map[string]SignaturePolicy `mapstructure:"signatures"`
	// SignatureMode is what happens to a source no Signatures pattern
	// names: require (the default: refused), warn or off.
	SignatureMode string `mapstructure:"signature_mode"`
	// DescriptorChecks is what tool-poisoning findings in a module's
	// descriptors do (internal/descriptorcheck): auto (the default: confirm
	// for a module from a registry or a URL, warn for a local file, warn
	// at load), warn, confirm (an explicit yes at install) or refuse (at
	// install and at load).
	DescriptorChecks string `mapstructure:"descriptor_checks"`
	// TrustedRoot is a Sigstore trusted_root.json for keyless signatures;
	// empty means fetching it from a TUF repository (TUFURL). When set it
	// wins over TUFURL and TUFRoot: nothing is fetched.
	TrustedRoot string `mapstructure:"trusted_root"`
	// TUFURL is the TUF repository trusted_root.json is fetched from: a
	// mirror, or a private Sigstore deployment's. Empty means Sigstore's
	// public-good repository. https://, or http:// for a loopback host.
	TUFURL string `mapstructure:"tuf_url"`
	// TUFRoot is the initial TUF root.json (the trust anchor) of TUFURL's
	// repository. Empty means sigstore-go's embedded public-good root;
	// setting it needs TUFURL.
	TUFRoot string `mapstructure:"tuf_root"`
}

// Server configures `warden serve`.
type Server struct {
	HTTP        string        `mapstructure:"http"`
	Token       string        `mapstructure:"token"`
	PageSize    int           `mapstructure:"page_size"`
	MaxInFlight int           `mapstructure:"max_in_flight"`
	QueueWait   time.Duration `mapstructure:"queue_wait"`
	// MaxInFlightPerClient is one client's share of MaxInFlight (0: three
	// quarters of it); MaxQueued and MaxQueuedPerClient bound the calls
	// waiting for a slot (0: 1024 and 256).
	MaxInFlightPerClient int `mapstructure:"max_in_flight_per_client"`
	MaxQueued            int `mapstructure:"max_queued"`
	MaxQueuedPerClient   int `mapstructure:"max_queued_per_client"`
	// RateLimit bounds how often each client and each tool may be called.
	RateLimit RateLimits `mapstructure:"rate_limit"`
	// ListWait bounds how long a tools/list waits for modules still loading
	// in the background before it answers with what is loaded.
	ListWait time.Duration `mapstructure:"list_wait"`
	// MaxMessage bounds one inbound MCP message: a stdio line or an HTTP body.
	MaxMessage ByteSize `mapstructure:"max_message"`
	// HeaderTimeout, BodyTimeout and IdleTimeout bound how long an HTTP
	// client may take to send a request's headers, its body, and how long
	// an idle keep-alive connection stays open.
	HeaderTimeout time.Duration `mapstructure:"header_timeout"`
	BodyTimeout   time.Duration `mapstructure:"body_timeout"`
	IdleTimeout   time.Duration `mapstructure:"idle_timeout"`
	// MaxConnections caps the open HTTP connections.
	MaxConnections int `mapstructure:"max_connections"`
	// MaxInstanceMemory bounds the linear memory of all tool instances
	// together (runtime.Options.MaxInstanceMemory). Read at start.
	MaxInstanceMemory ByteSize `mapstructure:"max_instance_memory"`
	// StateKey keys the HMAC of input-required requestState (and so lets
	// replicas accept each other's); empty means a random key per process.
	StateKey string `mapstructure:"state_key"`
	// Resources configures what the server offers as MCP resources
	// besides the modules' own.
	Resources ServerResources `mapstructure:"resources"`
	// Metrics serves Prometheus /metrics on the serve --http address.
	Metrics bool `mapstructure:"metrics"`
	// MetricsAddr serves /metrics on an address of its own (also for stdio).
	MetricsAddr string `mapstructure:"metrics_addr"`
	// Tracing exports OpenTelemetry traces.
	Tracing Tracing `mapstructure:"tracing"`
	// OAuth makes HTTP mode an OAuth 2.1 resource server: clients present
	// JWT access tokens from the issuers listed (instead of Token).
	OAuth OAuth `mapstructure:"oauth"`
	// Icons are the server's icons: sent in initialize's serverInfo and
	// on the server card (config/discovery.go).
	Icons []Icon `mapstructure:"icons"`
	// Discovery serves the MCP Server Card and AI Catalog
	// (config/discovery.go).
	Discovery Discovery `mapstructure:"discovery"`
	// Console serves the web console under /console/ of serve --http;
	// ConsoleLogin is its OpenID Connect login (config/console.go).
	Console      bool         `mapstructure:"console"`
	ConsoleLogin ConsoleLogin `mapstructure:"console_login"`
}

// OAuth configures `warden serve --http` as an OAuth 2.1 resource server
// (docs/auth.md). It is read at start.
type OAuth struct {
	// Resource is this server's canonical URL, as clients reach it (e.g.
	// https://warden.example.com/mcp): what tokens' audience must contain
	// and what the protected resource metadata names.
	Resource string `mapstructure:"resource"`
	// Issuers are the authorization servers whose tokens are accepted.
	Issuers []OAuthIssuer `mapstructure:"issuers"`
	// Scopes are required of every request to /mcp, whatever it asks.
	Scopes []string `mapstructure:"scopes"`
	// ClockSkew is the tolerance on a token's exp, nbf and iat.
	ClockSkew time.Duration `mapstructure:"clock_skew"`
	// JWKSRefreshMin is the least time between two fetches of an issuer's
	// keys (a token naming an unknown key fetches them again, at most this
	// often).
	JWKSRefreshMin time.Duration `mapstructure:"jwks_refresh_min"`
	// GroupsClaim names the token claim listing the subject's groups (a
	// string or an array of strings), which access.roles match.
	GroupsClaim string `mapstructure:"groups_claim"`
	// RequireGroupsClaim refuses a token that does not carry the groups
	// claim (or says its groups are elsewhere, as Entra ID's overage
	// does). nil: on whenever some access.roles entry lists groups, see
	// Config.RequireGroupsClaim.
	RequireGroupsClaim *bool `mapstructure:"require_groups_claim"`
}

// OAuthIssuer is one trusted authorization server.
type OAuthIssuer struct {
	// Issuer is the issuer identifier, exactly as tokens' iss claim says.
	Issuer string `mapstructure:"issuer"`
	// JWKSURL is where its signing keys (a JWK Set) are fetched: https://,
	// or http:// for a loopback host.
	JWKSURL string `mapstructure:"jwks_url"`
}

// Enabled reports whether any server.oauth key that turns OAuth on is set.
func (o OAuth) Enabled() bool {
	return o.Resource != "" || len(o.Issuers) > 0 || len(o.Scopes) > 0
}

// RateLimits are the server's token buckets; an empty rate means none.
type RateLimits struct {
	PerClient RateLimit `mapstructure:"per_client"`
	PerTool   RateLimit `mapstructure:"per_tool"`
	// OnBackendError is what a call meets when the buckets are kept in
	// PostgreSQL (memory.backend) and the database cannot be reached:
	// "refuse" (the default: fail closed) or "local" (this process's own
	// buckets, as without PostgreSQL).
	OnBackendError string `mapstructure:"on_backend_error"`
}

// RateLimit is a token bucket: Rate calls per unit ("10/s", "600/m",
// "2/h"), up to Burst at once (0: one second's worth, at least 1).
type RateLimit struct {
	Rate  string `mapstructure:"rate"`
	Burst int    `mapstructure:"burst"`
}

// Bucket is a rate limit as the MCP server takes it: Rate calls per second
// on average, up to Burst at once; Setting is the config key that sets it,
// for refusals. It is data: the server's own type is built from it where
// the server is configured.
type Bucket struct {
	Rate    float64
	Burst   int
	Setting string
}

// Bucket returns the limit as the server takes it, nil when there is none;
// setting names its config key in refusals. Validate has checked it.
func (r RateLimit) Bucket(setting string) *Bucket {
	perSecond, err := limits.ParseRate(r.Rate)
	if err != nil || perSecond == 0 {
		return nil
	}
	burst := r.Burst
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSecond)))
	}
	return &Bucket{Rate: perSecond, Burst: burst, Setting: setting}
}

// Bounds of a rate limit. A bucket's period (1/rate) and its refill time
// (burst/rate) become time.Durations and PostgreSQL intervals
// (internal/ratestore), and the default burst an int: past these bounds
// they overflow, and the limit would not be the one written.
const (
	minRatePerSecond = 1.0 / 3600 // one call an hour
	maxRatePerSecond = 1e6
	maxBurst         = 1_000_000
)

func (r RateLimit) validate(key string, fail func(key, format string, args ...any)) {
	perSecond, err := limits.ParseRate(r.Rate)
	switch {
	case err != nil:
		fail(key+".rate", "%v", err)
	case perSecond != 0 && perSecond < minRatePerSecond:
		fail(key+".rate", "%q is less than one call an hour (1/h), the least rate a bucket takes: write 1/h or more, or 0 for no limit", r.Rate)
	case perSecond > maxRatePerSecond:
		fail(key+".rate", "%q is more than %g calls a second, the most a bucket takes", r.Rate, float64(maxRatePerSecond))
	}
	switch {
	case r.Burst < 0:
		fail(key+".burst", "must not be negative, got %d", r.Burst)
	case r.Burst > maxBurst:
		fail(key+".burst", "must be at most %d, got %d", maxBurst, r.Burst)
	}
}

// ToolRate returns a tool's own rate limit (tools.limits.<tool>.rate), nil
// when it has none.
func (c *Config) ToolRate(name string) *Bucket {
	key := ToolKey(name)
	l := c.Tools.Limits[key]
	if l.Rate == "" {
		return nil // the common case, asked on every call: build no setting name
	}
	return RateLimit{Rate: l.Rate, Burst: l.Burst}.Bucket("tools.limits." + key + ".rate")
}

// ToolMaxInFlight returns a tool's own bound on its calls at once
// (tools.limits.<tool>.max_in_flight), 0 when it has none.
func (c *Config) ToolMaxInFlight(name string) int {
	return c.Tools.Limits[ToolKey(name)].MaxInFlight
}

// ServerResources configures the resources warden serves itself.
type ServerResources struct {
	// Memory serves the project memory's topics as memory://<topic>.
	Memory bool `mapstructure:"memory"`
}

// LSP configures the language servers behind the lsp capability.
type LSP struct {
	Languages map[string]Language `mapstructure:"languages"`
	IdleTTL   time.Duration       `mapstructure:"idle_ttl"`
	Timeout   time.Duration       `mapstructure:"timeout"`
}

// Language is one language server.
type Language struct {
	Command    string   `mapstructure:"command"`
	Args       []string `mapstructure:"args"`
	Extensions []string `mapstructure:"extensions"`
}

// Net bounds the net capability.
type Net struct {
	MaxResponse ByteSize      `mapstructure:"max_response"`
	Timeout     time.Duration `mapstructure:"timeout"`
}

// Env holds values tools may be granted by key.
type Env struct {
	Values map[string]EnvValue `mapstructure:"values"`
}

// EnvValue is a literal Value or the host variable FromEnv.
type EnvValue struct {
	Value   string `mapstructure:"value"`
	FromEnv string `mapstructure:"from_env"`
}

// Memory bounds the project memory store and says where it lives.
type Memory struct {
	MaxValue ByteSize `mapstructure:"max_value"`
	// Backend is "file" (the project's .warden/memories) or a postgres://
	// URL. The URL holds a password: set it from the environment
	// (WARDEN_MEMORY_BACKEND). Read at start.
	Backend  string         `mapstructure:"backend"`
	Postgres MemoryPostgres `mapstructure:"postgres"`
}

// MemoryPostgres bounds the PostgreSQL memory backend. Read at start.
type MemoryPostgres struct {
	MaxConns     int           `mapstructure:"max_conns"`
	QueryTimeout time.Duration `mapstructure:"query_timeout"`
}

// MinStateKeyBytes is the shortest server.state_key accepted, decoded.
const MinStateKeyBytes = 32

// StateKeyBytes decodes server.state_key (hex or base64); nil when unset, which
// means a random key per process.
func (s Server) StateKeyBytes() ([]byte, error) {
	k := strings.TrimSpace(s.StateKey)
	if k == "" {
		return nil, nil
	}
	var key []byte
	if b, err := hex.DecodeString(k); err == nil {
		key = b
	} else {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(k); err == nil {
				key = b
				break
			}
		}
		if key == nil {
			return nil, errors.New("must be hex or base64 (generate one with: openssl rand -base64 32)")
		}
	}
	if len(key) < MinStateKeyBytes {
		return nil, fmt.Errorf("must be at least %d bytes once decoded, got %d (generate one with: openssl rand -base64 32)", MinStateKeyBytes, len(key))
	}
	return key, nil
}

// StateKeys derives, from server.state_key, the HMAC keys of continuation
// cursors and of requestState: separate keys, so that one kind of token can
// never pass for the other. Both are nil when the key is unset.
func (s Server) StateKeys() (cursor, requestState []byte, err error) {
	key, err := s.StateKeyBytes()
	if key == nil || err != nil {
		return nil, nil, err
	}
	derive := func(label string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(label))
		return h.Sum(nil)
	}
	return derive("warden cursor v1"), derive("warden requestState v1"), nil
}

// Log configures warden's own log (always on stderr).
type Log struct {
	Level string `mapstructure:"level"`
	// Audit is the audit log file (JSON lines); empty turns it off.
	Audit string `mapstructure:"audit"`
	// AuditMaxSize rotates the audit log before it passes this size.
	AuditMaxSize ByteSize `mapstructure:"audit_max_size"`
	// AuditKeep is how many rotated audit files are kept.
	AuditKeep int `mapstructure:"audit_keep"`
	// AuditArguments records calls' arguments (bounded) in the audit log.
	AuditArguments bool `mapstructure:"audit_arguments"`
}

// Tracing configures OpenTelemetry traces (server.tracing).
type Tracing struct {
	// Endpoint is the OTLP/HTTP collector URL; empty turns tracing off.
	Endpoint string `mapstructure:"endpoint"`
	// SampleRatio is the fraction of calls traced without a sampled parent.
	SampleRatio float64 `mapstructure:"sample_ratio"`
}

// ByteSize is a size written "128MiB", "1 MB" or a plain byte count.
type ByteSize uint64

// String renders s in IEC units.
func (s ByteSize) String() string { return humanize.IBytes(uint64(s)) }

// ParseByteSize reads a size as config.yaml writes it: "128MiB", "1 MB"
// or a plain byte count.
func ParseByteSize(v string) (ByteSize, error) {
	n, err := humanize.ParseBytes(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size (write e.g. 128MiB)", v)
	}
	return ByteSize(n), nil
}

// defaults are the values a key has when config.yaml does not set it. They
// double as the list of keys the environment may override. A bound the
// runtime or the MCP server also applies to a zero option is taken from
// internal/limits, its one home, not written again here.
var defaults = map[string]any{
	"project::root":                         "",
	"tools::dir":                            "bin/tools",
	"tools::cache_dir":                      "",
	"tools::cache_max":                      limits.DefaultCacheMax,
	"tools::tiering":                        "auto",
	"tools::defaults::timeout":              limits.DefaultTimeout,
	"tools::defaults::memory":               limits.DefaultMemory,
	"tools::defaults::max_output":           limits.DefaultMaxOutput,
	"tools::defaults::fuel":                 limits.DefaultFuel,
	"tools::defaults::load_budget":          limits.DefaultLoadBudget,
	"tools::defaults::isolation":            limits.DefaultIsolation,
	"tools::defaults::max_instances":        limits.DefaultMaxInstances,
	"tools::defaults::log_bytes":            limits.DefaultLogBytes,
	"tools::defaults::log_lines":            limits.DefaultLogLines,
	"tools::defaults::compile_budget":       limits.DefaultCompileBudget,
	"tools::defaults::idle_ttl":             "10m",
	"tools::defaults::preload":              false,
	"tools::defaults::client_wait":          limits.DefaultClientWait,
	"tools::defaults::task_timeout":         limits.DefaultTaskTimeout,
	"tools::defaults::task_fuel":            limits.DefaultTaskFuel,
	"tools::expose":                         []string{},
	"tools::hide":                           []string{},
	"security::confirm":                     "on",
	"security::prompts":                     "on",
	"security::signature_mode":              "require",
	"security::descriptor_checks":           "auto",
	"security::trusted_root":                "",
	"security::tuf_url":                     "",
	"security::tuf_root":                    "",
	"tools::fetch::max_size":                limits.DefaultFetchMaxSize,
	"tools::fetch::timeout":                 limits.DefaultFetchTimeout,
	"tools::fetch::redirect_hosts":          []string{},
	"server::state_key":                     "",
	"server::http":                          "127.0.0.1:7331",
	"server::token":                         "",
	"server::page_size":                     limits.DefaultPageSize,
	"server::max_in_flight":                 32,
	"server::queue_wait":                    limits.DefaultQueueWait,
	"server::list_wait":                     limits.DefaultListWait,
	"server::max_message":                   limits.DefaultMaxMessage,
	"server::header_timeout":                limits.DefaultHeaderTimeout,
	"server::body_timeout":                  limits.DefaultBodyTimeout,
	"server::idle_timeout":                  limits.DefaultIdleTimeout,
	"server::max_connections":               limits.DefaultMaxConnections,
	"server::max_instance_memory":           limits.DefaultMaxInstanceMemory,
	"server::resources::memory":             false,
	"server::oauth::resource":               "",
	"server::console":                       false,
	"server::console_login::issuer":         "",
	"server::console_login::client_id":      "",
	"server::console_login::client_secret":  "",
	"server::console_login::redirect_url":   "",
	"server::console_login::groups_claim":   "groups",
	"server::console_login::admins":         []string{},
	"server::console_login::admin_subjects": []string{},
	"server::console_login::admin_groups":   []string{},
	"server::oauth::clock_skew":             "60s",
	"server::oauth::jwks_refresh_min":       limits.DefaultJWKSRefreshMin,
	"server::oauth::groups_claim":           "groups",
	"server::rate_limit::on_backend_error":  OnBackendErrorRefuse,
	"access::widen":                         false,
	"server::discovery::enabled":            false,
	"server::discovery::name":               "io.github.warden-run/warden",
	"server::discovery::title":              "warden",
	"server::discovery::description":        "MCP tools in a WebAssembly sandbox, each with only the grants config gives it",
	"server::discovery::website_url":        "",
	"server::discovery::url":                "",
	"lsp::idle_ttl":                         limits.DefaultLSPIdleTTL,
	"lsp::timeout":                          limits.DefaultLSPTimeout,
	"net::max_response":                     limits.DefaultNetMaxResponse,
	"net::timeout":                          limits.DefaultNetTimeout,
	"memory::max_value":                     limits.DefaultMemoryMaxValue,
	"memory::backend":                       "file",
	"memory::postgres::max_conns":           limits.DefaultPostgresMaxConns,
	"memory::postgres::query_timeout":       limits.DefaultPostgresQueryTimeout,
	"tasks::backend":                        "",
	"tasks::max_per_client":                 limits.DefaultTasksMaxPerClient,
	"tasks::max_total":                      limits.DefaultTasksMaxTotal,
	"tasks::max_records_per_client":         limits.DefaultTasksMaxRecordsPerClient,
	"tasks::max_records":                    limits.DefaultTasksMaxRecords,
	"tasks::max_result":                     0,
	"tasks::ttl":                            limits.DefaultTaskTTL,
	"tasks::max_ttl":                        limits.DefaultTaskMaxTTL,
	"tasks::poll_interval":                  limits.DefaultTaskPollInterval,
	"tasks::lease":                          limits.DefaultTaskLease,
	"log::level":                            "info",
	"log::audit":                            "",
	"log::audit_max_size":                   limits.DefaultAuditMaxSize,
	"log::audit_keep":                       5,
	"log::audit_arguments":                  false,
	"server::metrics":                       false,
	"server::metrics_addr":                  "",
	"server::tracing::endpoint":             "",
	"server::tracing::sample_ratio":         1.0,
	"server::max_in_flight_per_client":      0,
	"server::max_queued":                    0,
	"server::max_queued_per_client":         0,
	"server::rate_limit::per_client::rate":  "",
	"server::rate_limit::per_client::burst": 0,
	"server::rate_limit::per_tool::rate":    "",
	"server::rate_limit::per_tool::burst":   0,
	"approvals::via":                        ApprovalsAuto,
	"approvals::backend":                    "",
	"approvals::max_pending":                limits.DefaultApprovalsMaxPending,
	"approvals::max_pending_per_caller":     limits.DefaultApprovalsMaxPendingPerCaller,
	"approvals::on_backend_error":           ApprovalsRefuse,
}

// Load reads the config file at path. An empty path means no file: defaults
// and the environment only, relative to the working directory.
//
// Every problem is reported, one a line, in the order of the file, where
// it is written: "config.yaml:3: unknown key "tool" under the top level
// (did you mean "tools"?)", "config.yaml:7: tools.defaults.timeout: want a
// duration like "30s", got "soon"", or the WARDEN_* variable that sets it.
func Load(path string) (*Config, error) { return load(path, path) }

// load is Load naming the file shown in its messages: warden grant loads
// its edited copy under the name of the file it edits, and a reload the
// file under the name it had at start.
func load(path, shown string) (*Config, error) {
	v := viper.NewWithOptions(viper.KeyDelimiter("::"))
	for key, value := range defaults {
		v.SetDefault(key, value)
	}
	v.SetEnvPrefix("WARDEN")
	v.SetEnvKeyReplacer(strings.NewReplacer("::", "_"))
	v.AutomaticEnv()
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	blank := false
	var data []byte
	if path != "" {
		data, err = os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", shown, err)
		}
		blank = isBlankYAML(data)
		v.SetConfigFile(path)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return nil, parseError(shown, err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		path, dir = abs, filepath.Dir(abs)
	}
	// Every unknown key and every value its key does not take, with its
	// line or its variable, before the decoder, which names neither.
	found := append(checkDocument(shown, data), checkKeysAsWritten(shown, data)...)
	found = append(found, checkEnv(v.AllKeys())...)
	if err := found.err(); err != nil {
		return nil, err
	}
	var c Config
	if err := v.UnmarshalExact(&c, viper.DecodeHook(decodeHook())); err != nil {
		// What the checks above let through, which they should not.
		return nil, fmt.Errorf("config %s: %w", displayPath(shown), err)
	}
	c.File, c.Dir, c.Blank, c.src, c.shown = path, dir, blank, data, shown
	c.signaturePatterns = signaturePatternsAsWritten(data)
	c.resolvePaths()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// yamlLine matches a YAML parser's message that has a line, as viper
// wraps it.
var yamlLine = regexp.MustCompile(`(?s)^(?:While parsing config: )?yaml: line (\d+): (.*)$`)

// parseError is the error of a file that is not YAML, without the
// document text (yamlError), as FILE:LINE: when the parser gives a line.
func parseError(shown string, err error) error {
	err = yamlError(err)
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return &redactedError{msg: fmt.Sprintf("%s:%s: %s", shown, m[1], m[2]), err: err}
	}
	return fmt.Errorf("config %s: %w", shown, err)
}

// yamlQuoted matches the document text a YAML parser's message quotes: a
// scalar that does not decode as its tag says (`…`, possibly over several
// lines, possibly holding backticks) and an alias's anchor name ('…').
var yamlQuoted = regexp.MustCompile("(?s)`.*`|anchor '.*' (referenced|value contains itself)")

// yamlError is err, a YAML parser's, without the document text it quotes.
// That text is a value, and a value may be a secret: an unquoted password
// starting with * (token: *x7…) is an alias to YAML, refused as "unknown
// anchor 'x7…' referenced". The message keeps its line number and kind.
func yamlError(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: yamlQuoted.ReplaceAllStringFunc(err.Error(), func(m string) string {
		if strings.HasPrefix(m, "anchor ") {
			return "anchor (its name is not shown; an unquoted value starting with * is an alias: quote it) " + yamlQuoted.FindStringSubmatch(m)[1]
		}
		return "(a value, not shown)"
	}), err: err}
}

// redactedError is an error whose message hides part of its cause's.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// isBlankYAML reports whether data holds no YAML value: empty, or only
// whitespace, comments and document markers. A document that does not parse
// is not blank (Load reports it).
func isBlankYAML(data []byte) bool {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return false
	}
	return v == nil
}

func displayPath(path string) string {
	if path == "" {
		return "(defaults)"
	}
	return path
}

var byteSizeType = reflect.TypeOf(ByteSize(0))

func byteSizeHook(from, to reflect.Type, data any) (any, error) {
	if to != byteSizeType {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return ParseByteSize(v)
	case int:
		if v < 0 {
			return nil, fmt.Errorf("size %d is negative", v)
		}
		return ByteSize(v), nil
	}
	return data, nil
}

// resolvePaths makes relative paths absolute against the config's directory.
func (c *Config) resolvePaths() {
	abs := func(p string) string {
		if p == "" {
			return c.Dir
		}
		if strings.HasPrefix(p, "~/") {
			if home, err := userdirs.Home(); err == nil {
				p = filepath.Join(home, p[2:])
			}
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		return filepath.Clean(p)
	}
	c.Project.Root = abs(c.Project.Root)
	for name, root := range c.Project.Roots {
		c.Project.Roots[name] = abs(root)
	}
	c.Tools.Dir = abs(c.Tools.Dir)
	if c.Log.Audit != "" {
		c.Log.Audit = abs(c.Log.Audit)
	}
	if c.Security.TrustedRoot != "" {
		c.Security.TrustedRoot = abs(c.Security.TrustedRoot)
	}
	if c.Security.TUFRoot != "" {
		c.Security.TUFRoot = abs(c.Security.TUFRoot)
	}
	for pattern, p := range c.Security.Signatures {
		if p.Key != "" {
			p.Key = abs(p.Key)
			c.Security.Signatures[pattern] = p
		}
	}
	if c.Tools.CacheDir != "" && c.Tools.CacheDir != "off" {
		c.Tools.CacheDir = abs(c.Tools.CacheDir)
	}
}

// wardenSetting returns the config section ("server.*") that the host
// variable name sets through viper's WARDEN_<KEY PATH> mapping, or "" when
// it sets none: a from_env naming WARDEN_SERVER_TOKEN would hand a tool
// server.token. Variables of other WARDEN_ names (a test's WARDEN_TEST_KEY)
// set nothing and stay usable.
func wardenSetting(name string) string {
	if !configkey.IsEnv(name) {
		return ""
	}
	rest := configkey.Fold(name[len(configkey.EnvPrefix):])
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		section := t.Field(i).Tag.Get("mapstructure")
		if section != "" && section != "-" && (rest == section || strings.HasPrefix(rest, section+"_")) {
			return section + ".*"
		}
	}
	return ""
}

// Validate reports every problem, one a line, each with its key path and
// where the key is written (config.yaml:3, or the WARDEN_* variable that
// sets it). The order is deterministic: by line in the file, then checks
// run in a fixed order, and the entries of a map are visited in their
// keys' sorted order, so one file gives one message.
func (c *Config) Validate() error {
	var errs problems
	locate := c.locator()
	fail := func(key, format string, args ...any) {
		errs = append(errs, locate(key, fmt.Sprintf(format, args...)))
	}
	if err := c.Tools.Defaults.overlay(limits.Module{}).Validate(); err != nil {
		fail("tools.defaults", "%v", err)
	}
	if d := c.Tools.Defaults; d.MaxInFlight != 0 || d.Rate != "" || d.Burst != 0 {
		fail("tools.defaults", "max_in_flight, rate and burst apply to one tool: set them under tools.limits.<tool> (or server.rate_limit.per_tool for every tool)")
	}
	if t := c.Tools.Tiering; t != "auto" && t != "off" {
		fail("tools.tiering", "must be auto or off, got %q", t)
	}
	c.Tools.validateCache(fail)
	if c.Tools.Defaults.IdleTTL < 0 {
		fail("tools.defaults.idle_ttl", "must not be negative (0 keeps modules loaded), got %s", c.Tools.Defaults.IdleTTL)
	}
	for _, name := range sortedKeys(c.Tools.Limits) {
		if !tool.ValidName(name) {
			fail("tools.limits."+name, "%q is not a module or tool name (%s)", name, tool.NameRule)
		}
		if err := c.Tools.Limits[name].overlay(limits.Module{}).Validate(); err != nil {
			fail("tools.limits."+name, "%v", err)
		}
		if l := c.Tools.Limits[name]; l.IdleTTL != 0 || l.Preload {
			fail("tools.limits."+name, "idle_ttl and preload apply to every module: set them under tools.defaults")
		}
		l := c.Tools.Limits[name]
		if l.MaxInFlight < 0 {
			fail("tools.limits."+name+".max_in_flight", "must not be negative, got %d", l.MaxInFlight)
		}
		RateLimit{Rate: l.Rate, Burst: l.Burst}.validate("tools.limits."+name, fail)
	}
	for _, name := range sortedKeys(c.Tools.Grants) {
		g := c.Tools.Grants[name]
		key := "tools.grants." + name
		if !tool.ValidName(name) {
			fail(key, "%q is not a tool name (%s)", name, tool.NameRule)
		}
		if g.Module != "" && !tool.ValidName(g.Module) {
			fail(key+".module", "%q is not a module name (%s; the module's file name without .wasm)", g.Module, tool.NameRule)
		}
		switch tool.MemoryAccess(g.Memory) {
		case tool.MemoryNone, tool.MemoryRead, tool.MemoryReadWrite:
		default:
			fail(key+".memory", "must be read or read-write, got %s", showValue(g.Memory))
		}
		for _, lang := range g.LSP {
			if _, ok := c.LSP.Languages[lang]; !ok && !slices.Contains(limits.DefaultLSPLanguages, lang) {
				fail(key+".lsp", "no language %s in lsp.languages", showValue(lang))
			}
		}
		for _, p := range append(append([]string{}, g.FS.Read...), g.FS.Write...) {
			if root, _, found := strings.Cut(p, ":"); found && len(root) > 1 && root != "project" {
				if _, ok := c.Project.Roots[root]; !ok {
					fail(key+".fs", "path %s names %s, which project.roots does not define", showValue(p), showRoot(p, root))
				}
			}
		}
		for _, host := range g.Net {
			if err := capsyntax.ValidateNetGrant(host); err != nil {
				fail(key+".net", "%v", err)
			}
		}
		for _, k := range g.Env {
			if err := checkValue("env", k); err != nil {
				fail(key+".env", "%v", err)
			}
		}
		for _, topic := range g.MemoryTopics {
			if err := checkValue("memory.topics", topic); err != nil {
				fail(key+".memory_topics", "%v", err)
			}
		}
		for _, f := range g.Client {
			if err := checkValue("client", f); err != nil {
				fail(key+".client", "%v", err)
			}
		}
	}
	c.validateGates(fail)
	c.validateApprovals(fail)
	c.validateScopes(fail)
	c.validateTaskLimits(fail)
	c.validateOAuth(fail)
	c.validateAccess(fail)
	c.validateIcons(fail)
	c.validateDiscovery(fail)
	c.validateConsole(fail)
	c.validateSources(fail)
	for _, name := range sortedKeys(c.Tools.Pins) {
		sum := c.Tools.Pins[name]
		if !tool.ValidName(name) {
			fail("tools.pins."+name, "%q is not a module name (%s)", name, tool.NameRule)
		}
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			fail("tools.pins."+name, "must be a lowercase hex sha256, got %q", sum)
		}
	}
	if c.Server.PageSize < 1 {
		fail("server.page_size", "must be at least 1, got %d", c.Server.PageSize)
	}
	if c.Server.MaxInFlight < 1 {
		fail("server.max_in_flight", "must be at least 1, got %d", c.Server.MaxInFlight)
	}
	queues := map[string]int{
		"server.max_in_flight_per_client": c.Server.MaxInFlightPerClient,
		"server.max_queued":               c.Server.MaxQueued,
		"server.max_queued_per_client":    c.Server.MaxQueuedPerClient,
	}
	for _, key := range sortedKeys(queues) {
		if n := queues[key]; n < 0 {
			fail(key, "must not be negative (0 means the default), got %d", n)
		}
	}
	c.Server.RateLimit.PerClient.validate("server.rate_limit.per_client", fail)
	c.Server.RateLimit.PerTool.validate("server.rate_limit.per_tool", fail)
	if o := c.Server.RateLimit.OnBackendError; o != OnBackendErrorRefuse && o != OnBackendErrorLocal {
		fail("server.rate_limit.on_backend_error", "must be refuse or local, got %s", showValue(o))
	}
	if c.Server.MaxMessage < 1<<10 || c.Server.MaxMessage > 1<<30 {
		fail("server.max_message", "must be between 1KiB and 1GiB, got %s", c.Server.MaxMessage)
	}
	if c.Server.ListWait < 0 {
		fail("server.list_wait", "must not be negative, got %s", c.Server.ListWait)
	}
	timeouts := map[string]time.Duration{
		"server.header_timeout": c.Server.HeaderTimeout,
		"server.body_timeout":   c.Server.BodyTimeout,
		"server.idle_timeout":   c.Server.IdleTimeout,
	}
	for _, key := range sortedKeys(timeouts) {
		if d := timeouts[key]; d <= 0 {
			fail(key, "must be positive, got %s", d)
		}
	}
	if c.Server.MaxConnections < 1 {
		fail("server.max_connections", "must be at least 1, got %d", c.Server.MaxConnections)
	}
	if c.Server.MaxInstanceMemory < 1<<20 || c.Server.MaxInstanceMemory > 1<<40 {
		fail("server.max_instance_memory", "must be between 1MiB and 1TiB, got %s", c.Server.MaxInstanceMemory)
	}
	if _, err := c.Server.StateKeyBytes(); err != nil {
		fail("server.state_key", "%v", err) // never the key itself
	}
	if c.Memory.Backend == "" {
		fail("memory.backend", `must be "file" or a postgres:// URL`)
	} else if err := backendurl.Check(c.Memory.Backend); err != nil {
		fail("memory.backend", "%v", err) // never the value: it may hold a password
	}
	if n := c.Memory.Postgres.MaxConns; n < 1 || n > 1000 {
		fail("memory.postgres.max_conns", "must be between 1 and 1000, got %d", n)
	}
	if d := c.Memory.Postgres.QueryTimeout; d <= 0 || d > 10*time.Minute {
		fail("memory.postgres.query_timeout", "must be positive and at most 10m, got %s", d)
	}
	c.validateTasks(fail)
	for _, name := range sortedKeys(c.LSP.Languages) {
		if c.LSP.Languages[name].Command == "" {
			fail("lsp.languages."+name+".command", "must not be empty")
		}
	}
	for _, name := range sortedKeys(c.Tools.Grants) {
		g := c.Tools.Grants[name]
		for _, key := range sortedKeys(g.Config) {
			v := g.Config[key]
			at := "tools.grants." + name + ".config." + key
			switch {
			case len(key) > 256 || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }):
				fail(at, "a key must be at most 256 bytes without control characters")
			case (v.Value == "") == (v.FromEnv == ""):
				fail(at, "set exactly one of value or from_env")
			case v.FromEnv != "" && strings.ContainsAny(v.FromEnv, "=\x00"):
				// Not quoted: a value pasted into the wrong field is still a secret.
				fail(at+".from_env", "is not a variable name (it contains = or NUL)")
			case wardenSetting(v.FromEnv) != "":
				fail(at+".from_env", "%s is one of warden's own %s settings (viper reads WARDEN_<KEY PATH>); a tool is never given warden's configuration",
					v.FromEnv, wardenSetting(v.FromEnv))
			}
		}
	}
	for _, name := range sortedKeys(c.Env.Values) {
		ev := c.Env.Values[name]
		switch {
		case (ev.Value == "") == (ev.FromEnv == ""):
			fail("env.values."+name, "set exactly one of value or from_env")
		case configkey.IsEnv(name):
			fail("env.values."+name, "a WARDEN_* key is warden's own configuration and can never be granted to a tool; name it otherwise")
		case wardenSetting(ev.FromEnv) != "":
			fail("env.values."+name+".from_env", "%s is one of warden's own %s settings (viper reads WARDEN_<KEY PATH>); a tool is never given warden's configuration",
				ev.FromEnv, wardenSetting(ev.FromEnv))
		}
	}
	c.validateSecrets(fail)
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "warning", "error":
	default:
		fail("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	if c.Log.AuditKeep < 0 {
		fail("log.audit_keep", "must not be negative, got %d", c.Log.AuditKeep)
	}
	if c.Log.AuditMaxSize < 4<<10 {
		fail("log.audit_max_size", "must be at least 4KiB, got %s", c.Log.AuditMaxSize)
	}
	if r := c.Server.Tracing.SampleRatio; r < 0 || r > 1 {
		fail("server.tracing.sample_ratio", "must be from 0 to 1, got %v", r)
	}
	if e := c.Server.Tracing.Endpoint; e != "" && !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
		// Shown as download.ShowURL shows it: a collector's URL may carry user:password@.
		fail("server.tracing.endpoint", "must be an http:// or https:// URL such as http://127.0.0.1:4318, got %q", download.ShowURL(e))
	}
	return errs.err()
}

// ModuleLimits returns the limits of a module as plain data: defaults,
// then the module's own entry under tools.limits. internal/app turns them
// into the runtime's.
func (c *Config) ModuleLimits(module string) limits.Module {
	l := c.Tools.Defaults.overlay(limits.Module{})
	if own, ok := c.Tools.Limits[ToolKey(module)]; ok {
		l = own.overlay(l)
	}
	return l
}

// ToolTimeout returns a tool's own timeout from tools.limits, or 0.
func (c *Config) ToolTimeout(name string) time.Duration {
	return c.Tools.Limits[ToolKey(name)].Timeout
}

// Grants returns what the tool named toolName is granted while the module
// named module serves it. Viper folds keys to lower case, so the entry
// tools.grants.<tool> matches the tool name ignoring case; the module it is
// bound to (GrantModule) must equal module exactly. An entry bound to
// another module grants nothing: the error, a *GrantElsewhereError, says
// so and names the config line, for the refusals the tool then meets.
func (c *Config) Grants(toolName, module string) (tool.Capabilities, error) {
	key := ToolKey(toolName)
	g, ok := c.Tools.Grants[key]
	if !ok {
		return tool.Capabilities{}, nil
	}
	if bound, _, _ := c.GrantModule(toolName); bound != module {
		return tool.Capabilities{}, &GrantElsewhereError{Tool: toolName, Key: key, BoundTo: bound, ServedBy: module, Explicit: g.Module != ""}
	}
	return tool.Capabilities{
		FS:           tool.FSAccess{Read: g.FS.Read, Write: g.FS.Write},
		Memory:       tool.MemoryAccess(g.Memory),
		MemoryTopics: g.MemoryTopics,
		LSP:          g.LSP,
		Net:          g.Net,
		Env:          g.Env,
		Client:       g.Client,
	}, nil
}

// ToolConfig returns the own configuration (tools.grants.<tool>.config) of
// toolName served by module, keyed in lower case, or nil: like Grants, it
// belongs to the module the entry is bound to and to no other. The values
// are as written; internal/policy hands them to the runtime.
func (c *Config) ToolConfig(toolName, module string) map[string]EnvValue {
	g, ok := c.Tools.Grants[ToolKey(toolName)]
	if !ok || len(g.Config) == 0 {
		return nil
	}
	if bound, _, _ := c.GrantModule(toolName); bound != module {
		return nil
	}
	out := make(map[string]EnvValue, len(g.Config))
	for k, v := range g.Config {
		out[configkey.Fold(k)] = v
	}
	return out
}

// GrantModule returns the module the grant entry of toolName is bound to:
// its module field (explicit), else the entry's key, i.e. the tool name in
// lower case. ok is false when config has no entry for the tool.
func (c *Config) GrantModule(toolName string) (module string, explicit, ok bool) {
	key := ToolKey(toolName)
	g, ok := c.Tools.Grants[key]
	if !ok {
		return "", false, false
	}
	if g.Module != "" {
		return g.Module, true, true
	}
	return key, false, true
}

// GrantElsewhereError is why a tool gets nothing from a grant entry of its
// name: the entry belongs to another module.
type GrantElsewhereError struct {
	Tool     string // as the tool spells it
	Key      string // tools.grants.<Key>
	BoundTo  string // the module the entry belongs to
	ServedBy string // the module serving the tool
	Explicit bool   // BoundTo comes from the entry's module field
}

func (e *GrantElsewhereError) Error() string {
	why := "its module field"
	if !e.Explicit {
		why = "no module field: the module named like the tool"
	}
	fix := fmt.Sprintf("warden grant %s --module %s ...", e.Key, e.ServedBy)
	if !e.Explicit {
		// Most likely written before grants belonged to modules: one
		// reviewed step binds every such entry (to pinned modules only).
		fix += ", or warden migrate for every entry without a module field"
	}
	return fmt.Sprintf("tools.grants.%s is bound to module %s (%s); tool %q is served by module %s, so that entry grants it nothing "+
		"(if you reviewed %s and want it to have the grant: %s)",
		e.Key, e.BoundTo, why, e.Tool, e.ServedBy, e.ServedBy, fix)
}

// overlay overlays l's set fields on base.
func (l Limits) overlay(base limits.Module) limits.Module {
	if l.Timeout != 0 {
		base.Timeout = l.Timeout
	}
	if l.Memory != 0 {
		base.Memory = uint64(l.Memory)
	}
	if l.MaxOutput != 0 {
		base.MaxOutput = int(l.MaxOutput)
	}
	if l.Fuel != 0 {
		base.Fuel = l.Fuel
	}
	if l.LoadBudget != 0 {
		base.LoadBudget = l.LoadBudget
	}
	if l.Isolation != "" {
		base.Isolation = l.Isolation
	}
	if l.MaxInstances != 0 {
		base.MaxInstances = l.MaxInstances
	}
	if l.LogBytes != 0 {
		base.LogBytes = int(min(l.LogBytes, 1<<40))
	}
	if l.LogLines != 0 {
		base.LogLines = l.LogLines
	}
	if l.CompileBudget != 0 {
		base.CompileBudget = l.CompileBudget
	}
	return base
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
