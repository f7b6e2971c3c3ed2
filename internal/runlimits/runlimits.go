// Package runlimits is where config's limits, which are plain data, become
// the runtime's and the MCP server's types. config imports neither
// runtime nor mcpserver (RATIONALE.md, "config is data: what it may
// import"), so the conversion lives here, beside neither, for every
// package that loads modules (the app, the installer, the CLI) or
// configures the server.
package runlimits

import (
	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
)

// Module returns the runtime limits of the module named module under cfg:
// tools.defaults, then the module's own tools.limits entry.
func Module(cfg *config.Config, module string) runtime.Limits {
	return runtimeLimits(cfg.ModuleLimits(module))
}

// runtimeLimits is l as the runtime takes it, field for field.
func runtimeLimits(l limits.Module) runtime.Limits {
	return runtime.Limits{
		Timeout:       l.Timeout,
		Memory:        l.Memory,
		MaxOutput:     l.MaxOutput,
		Fuel:          l.Fuel,
		LoadBudget:    l.LoadBudget,
		Isolation:     runtime.Isolation(l.Isolation),
		MaxInstances:  l.MaxInstances,
		CaptureBytes:  l.CaptureBytes,
		LogBytes:      l.LogBytes,
		LogLines:      l.LogLines,
		CompileBudget: l.CompileBudget,
	}
}

// Rate is b as the MCP server takes it; nil (no limit) stays nil.
func Rate(b *config.Bucket) *mcpserver.RateLimit {
	if b == nil {
		return nil
	}
	return &mcpserver.RateLimit{Rate: b.Rate, Burst: b.Burst, Setting: b.Setting}
}
