package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// callAs calls name as a task (task) or interactively, as the MCP server
// does once the protocol layer has decided.
func callAs(t *testing.T, a *App, name string, task bool) (*tool.Result, error) {
	t.Helper()
	return a.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: name,
		Arguments: json.RawMessage(`{}`), Observer: nopObserver{}, Task: task})
}

// TestTaskBudgets: a call that runs as an MCP task runs under the task
// budget (tools.limits.<tool>.task_timeout and task_fuel, else its
// module's, else tools.defaults), an interactive call of the same tool
// under the interactive timeout and fuel. Which bound a call ran under is
// read from the failure at it, which names the bound and its key: fuel is
// counted, not timed, and the spin never ends, so each call ends at the
// first bound it runs under.
func TestTaskBudgets(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "spinner.wasm"), spinWAT(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limits      string
		task, inter string // the failures of a task call and of an interactive one
		taskKind    tool.Kind
	}{
		{"  limits:\n    spinner: {fuel: 3000000}\n    spin: {task_fuel: 5000000}\n",
			"spin ran out of fuel after 5000000 units; raise tools.limits.spin.task_fuel (now 5000000)",
			"spin ran out of fuel after 3000000 units; raise tools.limits.spinner.fuel (now 3000000)", tool.KindOutOfFuel},
		{"  defaults: {fuel: 2000000, task_fuel: 7000000}\n",
			"spin ran out of fuel after 7000000 units; raise tools.limits.spin.task_fuel (now 7000000, from tools.defaults.task_fuel)",
			"spin ran out of fuel after 2000000 units; raise tools.limits.spinner.fuel (now 2000000, from tools.defaults.fuel)", tool.KindOutOfFuel},
		{"  limits:\n    spinner: {fuel: 3000000, task_fuel: 6000000}\n",
			"spin ran out of fuel after 6000000 units; raise tools.limits.spin.task_fuel (now 6000000, from tools.limits.spinner.task_fuel)",
			"spin ran out of fuel after 3000000 units; raise tools.limits.spinner.fuel (now 3000000)", tool.KindOutOfFuel},
		// The interactive timeout (the tool's own, here) does not bound a
		// task; its task_timeout does, and the interactive call does not
		// get it.
		{"  limits:\n    spin: {timeout: 150ms, task_timeout: 100ms}\n",
			"spin did not finish within 100ms (while running); raise tools.limits.spin.task_timeout (now 100ms)",
			"spin did not finish within 150ms (while running); raise tools.limits.spin.timeout (now 150ms)", tool.KindTimeout},
	} {
		body := fmt.Sprintf("project:\n  root: .\ntools:\n  dir: %s\n  cache_dir: off\n  tasks: {spin: optional}\n%s", tools, c.limits)
		a, _ := startApp(t, dir, body, nil)
		if errs := a.Catalog().LoadTools(t.Context()); len(errs) != 0 {
			t.Fatal(errs)
		}
		for _, task := range []bool{true, false} {
			want, kind := c.inter, tool.Kind("")
			if task {
				want, kind = c.task, c.taskKind
			}
			res, err := callAs(t, a, "spin", task)
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Error.Message != want || (kind != "" && res.Error.Kind != kind) {
				t.Errorf("%s, task %v: got %v\nwant %s", strings.TrimSpace(c.limits), task, res.Error, want)
			}
		}
		a.Close(t.Context())
	}
}

// TestTaskSupportAtTheDoor: the effective task support (tools.tasks over
// the descriptor) decides at the door how a tool may be called: a task of
// a tool that runs none is refused, and so is an interactive call of one
// that runs only as a task; tools/list shows the effective value.
func TestTaskSupportAtTheDoor(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "spinner.wasm"), spinWAT(t), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tasks       string
		listed      *tool.Execution
		task, inter string // the refusals, "" for a call that runs (and spins out of fuel)
	}{
		{"", nil, "denied: tool spin does not run as a task (its descriptor's execution.taskSupport is forbidden): call it without a task, or set tools.tasks.spin: optional", ""},
		{"  tasks: {sp*: required}\n", &tool.Execution{TaskSupport: "required"}, "",
			"unsupported: tool spin runs only as a task (tools.tasks.sp* is required), and this call is not one: call it as a task (a client that supports MCP tasks; `warden call --task`)"},
		{"  tasks: {sp*: required, spin: forbidden}\n", nil,
			"denied: tool spin does not run as a task (tools.tasks.spin is forbidden): call it without a task, or set tools.tasks.spin: optional", ""},
	} {
		body := fmt.Sprintf("project:\n  root: .\ntools:\n  dir: %s\n  cache_dir: off\n  defaults: {fuel: 1000000, task_fuel: 1000000}\n%s", tools, c.tasks)
		a, _ := startApp(t, dir, body, nil)
		if errs := a.Catalog().LoadTools(t.Context()); len(errs) != 0 {
			t.Fatal(errs)
		}
		list := a.List()
		if len(list) != 1 || fmt.Sprint(list[0].Execution) != fmt.Sprint(c.listed) {
			t.Errorf("%q: listed %+v, want execution %+v", c.tasks, list, c.listed)
		}
		for _, task := range []bool{true, false} {
			want := c.inter
			if task {
				want = c.task
			}
			res, err := callAs(t, a, "spin", task)
			got := ""
			switch {
			case err != nil:
				got = err.Error()
			case res.IsError && res.Error.Kind != tool.KindOutOfFuel:
				got = res.Error.Error()
			}
			if got != want {
				t.Errorf("%q, task %v: got %q, want %q", c.tasks, task, got, want)
			}
		}
		a.Close(t.Context())
	}
}

// TestTasksReloadChangesTheList: a reload that changes tools.tasks tells
// the server's subscribers that the tool list changed (so tools/list and
// the protocol layer read the new execution.taskSupport), and the list
// and the door follow it; a reload that changes nothing else does not.
func TestTasksReloadChangesTheList(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "spinner.wasm"), spinWAT(t), 0o644); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf("project:\n  root: .\ntools:\n  dir: %s\n  cache_dir: off\n  defaults: {fuel: 1000000, task_fuel: 1000000}\n", tools)
	a, path := startApp(t, dir, body, nil)
	if errs := a.Catalog().LoadTools(t.Context()); len(errs) != 0 {
		t.Fatal(errs)
	}
	changed := 0
	cancel := a.Subscribe(func() { changed++ })
	defer cancel()
	reload := func(extra string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := a.live.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	reload("")
	base := changed
	reload("  tasks: {spin: optional}\n")
	if changed == base {
		t.Error("a reload that set tools.tasks did not notify")
	}
	if l := a.List(); len(l) != 1 || l[0].TaskSupport() != "optional" {
		t.Errorf("listed %+v after tools.tasks spin: optional", l)
	}
	if res, err := callAs(t, a, "spin", true); err != nil || res.Error == nil || res.Error.Kind != tool.KindOutOfFuel {
		t.Errorf("a task call after the reload: %v %v, want it run (out of fuel)", res, err)
	}
	after := changed
	reload("  tasks: {spin: optional}\n")
	if changed != after {
		t.Error("a reload that changed nothing notified")
	}
}
