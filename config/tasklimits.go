package config

import (
	"time"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/tool"
)

// validateTaskLimits checks tools.tasks and the task budgets of tools.defaults
// and tools.limits: each within its maximum (internal/limits), which no
// config passes.
func (c *Config) validateTaskLimits(fail func(key, format string, args ...any)) {
	for _, pattern := range sortedKeys(c.Tools.Tasks) {
		key := "tools.tasks." + pattern
		if err := checkToolPattern(pattern); err != nil {
			fail(key, "%q is not a tool name or pattern: %v", pattern, err)
		}
		if v := c.Tools.Tasks[pattern]; !tool.ValidTaskSupport(v) {
			fail(key, "must be %s, %s or %s, got %s", tool.TaskRequired, tool.TaskOptional, tool.TaskForbidden, showValue(v))
		}
	}
	check := func(at string, l Limits) {
		switch {
		case l.TaskTimeout < 0:
			fail(at+".task_timeout", "must not be negative, got %s", l.TaskTimeout)
		case l.TaskTimeout > limits.MaxTaskTimeout:
			fail(at+".task_timeout", "at most %s (a task's longest run), got %s", limits.MaxTaskTimeout, l.TaskTimeout)
		}
		switch {
		case l.TaskFuel < 0:
			fail(at+".task_fuel", "must not be negative, got %d", l.TaskFuel)
		case l.TaskFuel > limits.MaxTaskFuel:
			fail(at+".task_fuel", "at most %d (about a day of guest work), got %d", int64(limits.MaxTaskFuel), l.TaskFuel)
		}
	}
	check("tools.defaults", c.Tools.Defaults)
	for _, name := range sortedKeys(c.Tools.Limits) {
		check("tools.limits."+name, c.Tools.Limits[name])
	}
}

// TaskSupportFor returns what tools.tasks says of the tool called name:
// required, optional or forbidden, and the key it comes from (the entry of
// exactly that name, else the longest matching pattern, as GateFor). ok is
// false when no entry applies: the tool's descriptor decides.
func (c *Config) TaskSupportFor(name string) (support, key string, ok bool) {
	return lookupTool(c.Tools.Tasks, name)
}

// TaskBudget is the deadline and fuel of one call that runs as an MCP
// task, with the keys behind them: each is the tool's own tools.limits
// entry, else its module's, else tools.defaults, else the built-in default
// (internal/limits). Key is the setting that raises it for this tool
// alone; From the setting its value comes from when Key does not set it
// ("" with Default for the built-in default).
type TaskBudget struct {
	Timeout time.Duration
	Fuel    int64
	// TimeoutKey and FuelKey are tools.limits.<tool>.task_timeout and
	// task_fuel; TimeoutFrom and FuelFrom where the values come from.
	TimeoutKey, TimeoutFrom string
	FuelKey, FuelFrom       string
	TimeoutDefault          bool
	FuelDefault             bool
}

// TaskBudget returns the task budget of the tool called toolName while the
// module called module serves it.
func (c *Config) TaskBudget(toolName, module string) TaskBudget {
	tk, mk := ToolKey(toolName), ToolKey(module)
	b := TaskBudget{TimeoutKey: "tools.limits." + tk + ".task_timeout", FuelKey: "tools.limits." + tk + ".task_fuel"}
	own, ownOK := c.Tools.Limits[tk]
	mod, modOK := c.Tools.Limits[mk]
	switch d := c.Tools.Defaults; {
	case ownOK && own.TaskTimeout != 0:
		b.Timeout = own.TaskTimeout
	case modOK && mk != tk && mod.TaskTimeout != 0:
		b.Timeout, b.TimeoutFrom = mod.TaskTimeout, "tools.limits."+mk+".task_timeout"
	case d.TaskTimeout != 0 && d.TaskTimeout != limits.DefaultTaskTimeout:
		b.Timeout, b.TimeoutFrom = d.TaskTimeout, "tools.defaults.task_timeout"
	default:
		b.Timeout, b.TimeoutDefault = limits.DefaultTaskTimeout, true
	}
	switch d := c.Tools.Defaults; {
	case ownOK && own.TaskFuel != 0:
		b.Fuel = own.TaskFuel
	case modOK && mk != tk && mod.TaskFuel != 0:
		b.Fuel, b.FuelFrom = mod.TaskFuel, "tools.limits."+mk+".task_fuel"
	case d.TaskFuel != 0 && d.TaskFuel != limits.DefaultTaskFuel:
		b.Fuel, b.FuelFrom = d.TaskFuel, "tools.defaults.task_fuel"
	default:
		b.Fuel, b.FuelDefault = limits.DefaultTaskFuel, true
	}
	return b
}
