package config

import (
	"strings"

	"github.com/warden-run/warden/internal/backendurl"
)

// Values of approvals.via: where a question goes that the client cannot
// show (no elicitation).
const (
	// ApprovalsAuto puts it to the console when one runs in this process
	// (server.console, `warden console`), else refuses as before.
	ApprovalsAuto = "auto"
	// ApprovalsConsole always puts it to the broker, for a console that
	// runs elsewhere against the same backend (another replica, a
	// separate `warden console`).
	ApprovalsConsole = "console"
	// ApprovalsElicitation never does: a client without elicitation is
	// refused.
	ApprovalsElicitation = "elicitation"
)

// Values of approvals.on_backend_error.
const (
	// ApprovalsRefuse refuses the call when the shared backend cannot take
	// or answer its question (fails closed).
	ApprovalsRefuse = "refuse"
	// ApprovalsLocal puts the question to this process's console instead.
	ApprovalsLocal = "local"
)

// Approvals says where the questions wait that a call puts to a person
// when its client cannot show them: a gate's confirmation, a permission
// prompt (docs/asking.md). They wait, for tools.defaults.client_wait at
// most, until a person answers in the console.
type Approvals struct {
	// Via is auto, console or elicitation (the Approvals* constants).
	Via string `mapstructure:"via"`
	// Backend is where questions wait: "local" (this process only) or a
	// postgres:// URL shared by replicas; empty follows memory.backend. The
	// URL holds a password: set it from the environment
	// (WARDEN_APPROVALS_BACKEND). Read at start.
	Backend string `mapstructure:"backend"`
	// MaxPending bounds the questions waiting at once, across replicas on
	// PostgreSQL. Read at start.
	MaxPending int `mapstructure:"max_pending"`
	// MaxPendingPerCaller bounds those of one caller (principal), so that
	// one caller cannot fill max_pending for client_wait. Read at start.
	MaxPendingPerCaller int `mapstructure:"max_pending_per_caller"`
	// OnBackendError is refuse or local (the constants above).
	OnBackendError string `mapstructure:"on_backend_error"`
}

// ApprovalsBackend is the backend questions wait in: approvals.backend,
// else memory.backend's database, else "local".
func (c *Config) ApprovalsBackend() string {
	switch b := c.Approvals.Backend; {
	case b != "":
		return b
	case c.Memory.Backend != "" && c.Memory.Backend != "file":
		return c.Memory.Backend
	}
	return ApprovalsLocal
}

// ApprovalsVia is approvals.via, in lower case.
func (c *Config) ApprovalsVia() string { return strings.ToLower(c.Approvals.Via) }

// ApprovalsFallBackLocal reports whether a question the shared backend
// cannot take waits on this process instead of refusing the call
// (approvals.on_backend_error: local).
func (c *Config) ApprovalsFallBackLocal() bool {
	return strings.ToLower(c.Approvals.OnBackendError) == ApprovalsLocal
}

func (c *Config) validateApprovals(fail func(key, format string, args ...any)) {
	switch strings.ToLower(c.Approvals.Via) {
	case ApprovalsAuto, ApprovalsConsole, ApprovalsElicitation:
	default:
		fail("approvals.via", "must be auto, console or elicitation, got %q", c.Approvals.Via)
	}
	switch strings.ToLower(c.Approvals.OnBackendError) {
	case ApprovalsRefuse, ApprovalsLocal:
	default:
		fail("approvals.on_backend_error", "must be refuse or local, got %q", c.Approvals.OnBackendError)
	}
	if b := c.Approvals.Backend; b != "" && b != ApprovalsLocal {
		if b == "file" || !strings.HasPrefix(b, "postgres://") && !strings.HasPrefix(b, "postgresql://") {
			fail("approvals.backend", `must be "local" or a postgres:// URL`)
		} else if err := backendurl.Check(b); err != nil {
			fail("approvals.backend", "%v", err) // never the value: it may hold a password
		}
	}
	if n := c.Approvals.MaxPending; n < 1 || n > 10000 {
		fail("approvals.max_pending", "must be between 1 and 10000, got %d", n)
	}
	if n := c.Approvals.MaxPendingPerCaller; n < 1 || n > 10000 {
		fail("approvals.max_pending_per_caller", "must be between 1 and 10000, got %d", n)
	}
}
