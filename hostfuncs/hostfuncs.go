// Package hostfuncs holds what every host capability shares. Each capability
// lives in its own subpackage (fs, memory, lsp, net, env) and is served to
// guests as the import warden.<Name> described in docs/abi.md.
//
// A capability has exactly one permission gate: Serve checks call.Grants
// before it touches anything, and nothing else in the capability is reachable
// from a guest.
package hostfuncs

import (
	"context"
	"errors"
	"time"

	"github.com/warden-run/warden/tool"
)

// Call identifies the guest call that a host request belongs to. The runtime
// builds one per call from the live config, so grants changed in config.yaml
// apply from the next call on.
type Call struct {
	// Tool is the name of the tool being called.
	Tool string
	// Module is the module serving it.
	Module string
	// Grants is what config grants this tool; nothing else is allowed.
	Grants tool.Capabilities
	// Observer receives the call's log lines and progress; never nil.
	Observer tool.Observer
	// Requested is what the tool's descriptor asks for: a denial of one of
	// these may be put to the person (a permission prompt).
	Requested tool.Capabilities
	// Client is the MCP client behind the call, nil when none can be
	// asked (see tool.Client).
	Client tool.Client
	// Hold stops the call's deadline while the call waits for the client
	// (a person answering), until the returned release is called, or
	// until the call has been held for wait (tools.defaults.client_wait)
	// in all, over every wait of the call: past that the deadline runs on,
	// so that no guest outlives its timeout by asking again and again.
	// Never nil when Client is not.
	Hold func(wait time.Duration) (release func())
	// Prompted records the permission prompts put to the person during
	// the call, so that each need is asked about once per call.
	Prompted map[tool.Need]bool
	// Config is the tool's own key/value configuration
	// (tools.grants.<tool>.config), keyed in lower case: what an Extism
	// plugin reads with config_get. Nil when config gives it none.
	Config map[string]SecretValue
	// Secrets is every entry of config's secrets as the tool sees it
	// (bound to it or not), by configkey.Fold of its name: what
	// warden.env serves and names in refusals. Shared by the calls of
	// one config load: never modified.
	Secrets map[string]Secret
}

// Capability serves the requests of one warden.<Name> import.
type Capability interface {
	// Name is the import's field name in the "warden" module, e.g. "fs".
	Name() string
	// Serve handles one JSON request from the guest. The result is encoded
	// as {"result": ...}; an error as {"error": {"kind", "message"}}, with
	// its kind taken from a *tool.Error (tool.KindInternal otherwise).
	// Serve must honour ctx: it is cancelled when the call ends.
	Serve(ctx context.Context, call *Call, request []byte) (any, error)
}

// ErrClientWait is the cause (context.Cause) of a wait for the MCP client's
// answers that ran past tools.defaults.client_wait: every such timer sets
// it, so that a task's runner tells it from the call's own deadline (its
// task budget, context.DeadlineExceeded), after which the call is over.
var ErrClientWait = errors.New("no answer within tools.defaults.client_wait")
