package runtime

import (
	"fmt"
	"time"

	"github.com/warden-run/warden/internal/limits"
)

// Isolation says which calls may observe state another call left behind.
type Isolation string

const (
	// IsolationSession (the default) keeps one instance per client session:
	// calls of the same MCP session may see each other's state, as they
	// would with any long-running MCP server, and no other session ever
	// does. A call with no session (stateless HTTP) gets IsolationCall.
	IsolationSession Isolation = limits.IsolationSession
	// IsolationCall starts every call from the module's state right after
	// _initialize: nothing one call leaves in memory or globals is visible
	// to any later call.
	IsolationCall Isolation = limits.IsolationCall
	// IsolationShared lets every call reuse pooled instances as they are. Only
	// for tools that keep caches they mean to share across clients.
	IsolationShared Isolation = limits.IsolationShared
)

// Limits bound what one module's calls may use. The zero value of each field
// means its default.
type Limits struct {
	// Timeout is the deadline of one call (default 30 s). A descriptor's
	// timeoutMs may lower it, never raise it.
	Timeout time.Duration
	// Memory caps the guest's linear memory in bytes (default 128 MiB).
	Memory uint64
	// MaxOutput caps the response JSON of one call in bytes (default 1 MiB).
	MaxOutput int
	// Fuel is the fuel budget of one call (default DefaultFuel).
	Fuel int64
	// LoadBudget bounds the start function, _initialize and describe at
	// load (default 10 s).
	LoadBudget time.Duration
	// Isolation is the state model (default IsolationSession).
	Isolation Isolation
	// MaxInstances caps the instances alive at once (default 8).
	MaxInstances int
	// CaptureBytes caps what is kept of a call's stdout and of its stderr
	// (default 64 KiB each).
	CaptureBytes int
	// LogBytes and LogLines cap what one call may log through warden.log
	// (or an Extism plugin's log functions): lines past either are dropped,
	// and one note per call counts them (defaults 1 MiB, 1000 lines).
	LogBytes int
	LogLines int
	// CompileBudget bounds compiling the module at load (default 60 s).
	CompileBudget time.Duration

	// FuelSetting and TimeoutSetting name the settings that raise Fuel and
	// Timeout for this module, for the out_of_fuel and timeout failures to
	// say what to change. The runtime knows no config: whoever maps config
	// to Limits fills them in (internal/runlimits). Empty, the failures
	// name no setting.
	FuelSetting, TimeoutSetting Setting
}

// Setting names a config setting behind a limit, for messages.
type Setting struct {
	// Key is the setting that raises the limit for this module alone, as
	// config spells it: "tools.limits.spin.fuel".
	Key string
	// From says where the value in force comes from when Key does not set
	// it: another setting ("tools.defaults.fuel"), or "" with Default set
	// for the built-in default. Empty with Default false: Key sets it.
	From    string
	Default bool
}

// hint is the advice a failure at the limit now ends with: which setting
// to raise and where its value comes from; "" when s names none.
func (s Setting) hint(now string) string {
	if s.Key == "" {
		return ""
	}
	switch {
	case s.Default:
		return fmt.Sprintf("; raise %s (now the default %s)", s.Key, now)
	case s.From != "":
		return fmt.Sprintf("; raise %s (now %s, from %s)", s.Key, now, s.From)
	}
	return fmt.Sprintf("; raise %s (now %s)", s.Key, now)
}

// Defaults of Limits. Their one home is internal/limits, which config's
// defaults (tools.defaults) are also taken from.
const (
	DefaultTimeout       = limits.DefaultTimeout
	DefaultMemory        = limits.DefaultMemory
	DefaultMaxOutput     = limits.DefaultMaxOutput
	DefaultLoadBudget    = limits.DefaultLoadBudget
	DefaultMaxInstances  = limits.DefaultMaxInstances
	DefaultCaptureBytes  = limits.DefaultCaptureBytes
	DefaultLogBytes      = limits.DefaultLogBytes
	DefaultLogLines      = limits.DefaultLogLines
	DefaultCompileBudget = limits.DefaultCompileBudget
	// DefaultFuel is about ten seconds of guest work on this generation of
	// hardware: no honest tool notices it, a runaway loop hits it.
	DefaultFuel = limits.DefaultFuel
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.MaxOutput == 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.Fuel == 0 {
		l.Fuel = DefaultFuel
	}
	if l.LoadBudget == 0 {
		l.LoadBudget = DefaultLoadBudget
	}
	if l.Isolation == "" {
		l.Isolation = IsolationSession
	}
	if l.MaxInstances == 0 {
		l.MaxInstances = DefaultMaxInstances
	}
	if l.CaptureBytes == 0 {
		l.CaptureBytes = DefaultCaptureBytes
	}
	if l.LogBytes == 0 {
		l.LogBytes = DefaultLogBytes
	}
	if l.LogLines == 0 {
		l.LogLines = DefaultLogLines
	}
	if l.CompileBudget == 0 {
		l.CompileBudget = DefaultCompileBudget
	}
	return l
}

// Validate reports the first out-of-range field, naming it: the rule
// config.yaml's tools.defaults and tools.limits are checked with.
func (l Limits) Validate() error {
	return limits.Module{
		Timeout:       l.Timeout,
		Memory:        l.Memory,
		MaxOutput:     l.MaxOutput,
		Fuel:          l.Fuel,
		LoadBudget:    l.LoadBudget,
		Isolation:     string(l.Isolation),
		MaxInstances:  l.MaxInstances,
		CaptureBytes:  l.CaptureBytes,
		LogBytes:      l.LogBytes,
		LogLines:      l.LogLines,
		CompileBudget: l.CompileBudget,
	}.Validate()
}
