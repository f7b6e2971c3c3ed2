package config

import (
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/limits"
)

// TestTaskSupportFor: tools.tasks resolves as tools.gates does: the exact
// name (ignoring case), else the longest matching pattern; no entry, no
// word (the descriptor decides).
func TestTaskSupportFor(t *testing.T) {
	c, err := Load(writeConfig(t, `
tools:
  tasks:
    "build_*": required
    build_quick: forbidden
    Scan: optional
`))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"build_all":   "required:build_*",
		"BUILD_QUICK": "forbidden:build_quick",
		"scan":        "optional:scan",
		"other":       ":",
	} {
		s, key, _ := c.TaskSupportFor(name)
		if got := s + ":" + key; got != want {
			t.Errorf("TaskSupportFor(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestTaskBudget: a task's deadline and fuel come from the tool's own
// tools.limits entry, else its module's, else tools.defaults, else the
// built-in defaults, each saying where it comes from; the interactive
// timeout and fuel play no part.
func TestTaskBudget(t *testing.T) {
	c, err := Load(writeConfig(t, `
tools:
  defaults: {timeout: 5s, fuel: 1000, task_timeout: 2h}
  limits:
    mod: {task_fuel: 9000, task_timeout: 1h}
    own: {task_timeout: 3h, timeout: 1s}
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, module string
		want         TaskBudget
	}{
		{"own", "mod", TaskBudget{Timeout: 3 * time.Hour, Fuel: 9000,
			TimeoutKey: "tools.limits.own.task_timeout", FuelKey: "tools.limits.own.task_fuel", FuelFrom: "tools.limits.mod.task_fuel"}},
		{"other", "mod", TaskBudget{Timeout: time.Hour, Fuel: 9000,
			TimeoutKey: "tools.limits.other.task_timeout", TimeoutFrom: "tools.limits.mod.task_timeout",
			FuelKey: "tools.limits.other.task_fuel", FuelFrom: "tools.limits.mod.task_fuel"}},
		{"mod", "mod", TaskBudget{Timeout: time.Hour, Fuel: 9000,
			TimeoutKey: "tools.limits.mod.task_timeout", FuelKey: "tools.limits.mod.task_fuel"}},
		{"lone", "lone", TaskBudget{Timeout: 2 * time.Hour, Fuel: limits.DefaultTaskFuel,
			TimeoutKey: "tools.limits.lone.task_timeout", TimeoutFrom: "tools.defaults.task_timeout",
			FuelKey: "tools.limits.lone.task_fuel", FuelDefault: true}},
	} {
		if got := c.TaskBudget(tc.tool, tc.module); got != tc.want {
			t.Errorf("TaskBudget(%s, %s) = %+v\nwant %+v", tc.tool, tc.module, got, tc.want)
		}
	}
	d, err := Load(writeConfig(t, "tools: {}"))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.TaskBudget("x", "x"); got.Timeout != limits.DefaultTaskTimeout || !got.TimeoutDefault || got.Fuel != limits.DefaultTaskFuel || !got.FuelDefault {
		t.Errorf("defaults: %+v", got)
	}
}

// TestTasksRefusedWithTheKey: a value tools.tasks does not know, a
// pattern that names no tool, and a task budget past its maximum (which
// no config passes) are refused, each naming its key.
func TestTasksRefusedWithTheKey(t *testing.T) {
	for body, want := range map[string]string{
		"tools: {tasks: {x: sometimes}}":                     `tools.tasks.x: must be required, optional or forbidden, got "sometimes"`,
		`tools: {tasks: {"[x": optional}}`:                   `tools.tasks.[x: "[x" is not a tool name or pattern`,
		`tools: {tasks: {"[A-z]": optional}}`:                `tools.tasks.[A-z]: "[A-z]" is not a tool name or pattern`,
		"tools: {defaults: {task_timeout: 25h}}":             "tools.defaults.task_timeout: at most 24h0m0s (a task's longest run), got 25h0m0s",
		"tools: {limits: {x: {task_timeout: -1s}}}":          "tools.limits.x.task_timeout: must not be negative, got -1s",
		"tools: {limits: {x: {task_fuel: 172800000000001}}}": "tools.limits.x.task_fuel: at most 172800000000000 (about a day of guest work), got 172800000000001",
		"tools: {defaults: {task_fuel: -5}}":                 "tools.defaults.task_fuel: must not be negative, got -5",
	} {
		_, err := Load(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	if _, err := Load(writeConfig(t, "tools: {defaults: {task_timeout: 24h, task_fuel: 172800000000000}, tasks: {x: required}}")); err != nil {
		t.Errorf("the maxima themselves: %v", err)
	}
}
