package app

import (
	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/runtime"
)

// This file is where config's data becomes the runtime's and the MCP
// server's types: config imports neither (RATIONALE.md, "config is data:
// what it may import"), so the conversion lives with the code that drives
// both.

// RuntimeLimits returns the runtime limits of the module named module under
// cfg: tools.defaults, then the module's own tools.limits entry.
func RuntimeLimits(cfg *config.Config, module string) runtime.Limits {
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

// serverRate is b as the MCP server takes it; nil (no limit) stays nil.
func serverRate(b *config.Bucket) *mcpserver.RateLimit {
	if b == nil {
		return nil
	}
	return &mcpserver.RateLimit{Rate: b.Rate, Burst: b.Burst, Setting: b.Setting}
}
