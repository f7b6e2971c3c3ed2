package policy

import (
	"testing"
	"time"

	"github.com/warden-run/warden/runtime"
	"github.com/warden-run/warden/tool"
)

// TestTaskSupport: tools.tasks is resolved once per config, exact names
// and patterns alike, and wins over the descriptor both ways: it may let
// a tool that says forbidden run as a task and keep one that asks for
// tasks interactive. Describe is the descriptor as clients see it; the
// descriptor itself is not changed.
func TestTaskSupport(t *testing.T) {
	p := New(load(t, `tools:
  tasks:
    forced: optional
    kept: forbidden
    "slow_*": required
`))
	optional := &tool.Execution{TaskSupport: tool.TaskOptional}
	for _, c := range []struct {
		name     string
		declared *tool.Execution
		want     string
		key      string
	}{
		{"forced", nil, tool.TaskOptional, "forced"},
		{"kept", optional, tool.TaskForbidden, "kept"},
		{"slow_build", nil, tool.TaskRequired, "slow_*"},
		{"plain", optional, tool.TaskOptional, ""},
		{"bare", nil, tool.TaskForbidden, ""},
	} {
		d := tool.Descriptor{Name: c.name, Execution: c.declared}
		tp := p.Tool(c.name)
		if got := tp.TaskSupport(&d); got != c.want || tp.TaskKey != c.key {
			t.Errorf("%s: TaskSupport %s (key %q), want %s (key %q)", c.name, got, tp.TaskKey, c.want, c.key)
		}
		listed := tp.Describe(d)
		if listed.TaskSupport() != c.want {
			t.Errorf("%s: listed as %s, want %s", c.name, listed.TaskSupport(), c.want)
		}
		if d.Execution != c.declared {
			t.Errorf("%s: Describe changed the descriptor", c.name)
		}
	}
	// A policy without tools.tasks lists every descriptor as it is.
	d := tool.Descriptor{Name: "x", Execution: optional}
	if got := New(load(t, "tools: {}\n")).Tool("x").Describe(d); got.Execution != optional {
		t.Errorf("listed %+v without tools.tasks", got.Execution)
	}
}

// TestPolicyTaskBudget: the task budget a call runs under, with the keys
// its failures name.
func TestPolicyTaskBudget(t *testing.T) {
	p := New(load(t, `tools:
  defaults: {task_fuel: 5000}
  limits:
    build: {task_timeout: 2h}
`))
	want := runtime.Budget{Timeout: 2 * time.Hour, Fuel: 5000,
		TimeoutSetting: runtime.Setting{Key: "tools.limits.build.task_timeout"},
		FuelSetting:    runtime.Setting{Key: "tools.limits.build.task_fuel", From: "tools.defaults.task_fuel"}}
	if got := p.TaskBudget(p.Tool("Build"), "builder"); got != want {
		t.Errorf("TaskBudget = %+v\nwant %+v", got, want)
	}
}
