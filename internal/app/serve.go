package app

import (
	"time"

	"github.com/warden-run/warden/mcpserver"
)

// ServerOptions returns opts with every hook of the MCP server's contract
// (mcpserver.Options) wired to the app: what the server asks of the app
// besides the tools it lists and calls (App implements mcpserver.Tools).
// It sets the fields it names, leaving the rest of opts (transport bounds,
// logger, observability hooks) as the caller set them. This is the one
// place the app is plugged into the server: a capability the server gains
// is a field of mcpserver.Options, wired here.
func (a *App) ServerOptions(opts mcpserver.Options) mcpserver.Options {
	opts.RateLimit = a.serverRateLimits
	opts.RateStore = a.rateStore()
	opts.SpentStates = a.spentStates()
	opts.ClientWait = func() time.Duration { return a.Policy().ClientWait() }
	opts.CallLimits = a.toolCallLimits
	opts.OwnerLimits = a.ownerLimits
	opts.Scopes = a
	opts.Features = a
	opts.FeatureRouter = a
	opts.Loader = a.catalog
	opts.LoadsEnded = a.catalog.LoadsEnded
	opts.StartupLoaded = a.catalog.StartupLoaded
	opts.LoadErrors = a.loadErrors
	opts.Refused = a.refused
	opts.Stats = a.stats
	opts.EndSession = a.endSession
	if a.taskRunner != nil {
		opts.Tasks = a.taskRunner
	}
	return opts
}
