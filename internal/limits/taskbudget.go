package limits

import "time"

// Task budgets: the deadline and fuel of one tool call that runs as an MCP
// task (tools.defaults.task_timeout and task_fuel, tools.limits.<tool>.…),
// in place of the interactive DefaultTimeout and DefaultFuel. A task is
// worth starting only for work longer than a person waits for, so the
// defaults are generous; the maxima are what no config may pass, so that a
// task record (kept until its TTL) never waits on a guest for longer than
// a day.
const (
	DefaultTaskTimeout = 30 * time.Minute
	// DefaultTaskFuel is about thirty minutes of guest work, at the rate
	// DefaultFuel assumes (2e9 units a second).
	DefaultTaskFuel = 3_600_000_000_000
	MaxTaskTimeout  = 24 * time.Hour
	// MaxTaskFuel is about a day of guest work at the same rate.
	MaxTaskFuel = 172_800_000_000_000
)
