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
// Its FuelSetting and TimeoutSetting name the module's own tools.limits
// keys, and where the values in force come from, for the runtime's
// out_of_fuel and timeout messages.
func Module(cfg *config.Config, module string) runtime.Limits {
	l := runtimeLimits(cfg.ModuleLimits(module))
	key := config.ToolKey(module)
	own := cfg.Tools.Limits[key]
	l.FuelSetting = setting("tools.limits."+key+".fuel", own.Fuel != 0,
		"tools.defaults.fuel", cfg.Tools.Defaults.Fuel == 0 || cfg.Tools.Defaults.Fuel == limits.DefaultFuel)
	l.TimeoutSetting = setting("tools.limits."+key+".timeout", own.Timeout != 0,
		"tools.defaults.timeout", cfg.Tools.Defaults.Timeout == 0 || cfg.Tools.Defaults.Timeout == limits.DefaultTimeout)
	return l
}

// Task returns the budget of a call of the tool called toolName, served
// by the module called module, that runs as an MCP task
// (config.Config.TaskBudget), with the settings its failures name.
func Task(cfg *config.Config, toolName, module string) runtime.Budget {
	b := cfg.TaskBudget(toolName, module)
	return runtime.Budget{
		Timeout:        b.Timeout,
		Fuel:           b.Fuel,
		TimeoutSetting: runtime.Setting{Key: b.TimeoutKey, From: b.TimeoutFrom, Default: b.TimeoutDefault},
		FuelSetting:    runtime.Setting{Key: b.FuelKey, From: b.FuelFrom, Default: b.FuelDefault},
	}
}

// setting is the runtime.Setting of key: set by key itself (own), else by
// the tools.defaults setting defaults, unless that holds the built-in
// default (builtin). A tools.defaults value equal to the built-in default
// reads as the default: config cannot tell the two apart, and the advice,
// to raise key, is the same.
func setting(key string, own bool, defaults string, builtin bool) runtime.Setting {
	switch {
	case own:
		return runtime.Setting{Key: key}
	case builtin:
		return runtime.Setting{Key: key, Default: true}
	}
	return runtime.Setting{Key: key, From: defaults}
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
