package csdktest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TestLongrunMatchesTheGoLongrun: the C example of docs/tasks.md
// (examples/longrun.c) declares task support through wd_tool.task_support,
// and does what the Go one (tools-wasm/longrun) does: the same checksum of
// the same work, the same progress reports, the same schemas.
func TestLongrunMatchesTheGoLongrun(t *testing.T) {
	t.Parallel()
	c := newWorld(t, []string{"longrun"}, "", "")
	goDir := t.TempDir()
	wasm, err := os.ReadFile(testwasm.BuildGoFile(t, "../../../tools-wasm/longrun"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(goDir, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(goDir, "tools", "longrun.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	g := serveWorld(t, goDir, "", "")

	descriptor := func(w *world, name string) tool.Descriptor {
		for _, d := range w.app.List() {
			if d.Name == name {
				return d
			}
		}
		t.Fatalf("%s is not listed", name)
		return tool.Descriptor{}
	}
	cd, gd := descriptor(c, "longrun_c"), descriptor(g, "longrun")
	if cd.TaskSupport() != tool.TaskOptional || gd.TaskSupport() != tool.TaskOptional {
		t.Errorf("task support: C %q, Go %q; want optional", cd.TaskSupport(), gd.TaskSupport())
	}
	for _, pair := range [][2]json.RawMessage{{cd.InputSchema, gd.InputSchema}, {cd.OutputSchema, gd.OutputSchema}} {
		if a, b := compact(t, pair[0]), compact(t, pair[1]); a != b {
			t.Errorf("schemas differ:\nC  %s\nGo %s", a, b)
		}
	}
	args := `{"iterations":5,"every":2,"rounds":100}`
	ct, cs, cobs := c.ok("longrun_c", args)
	gt, gs, gobs := g.ok("longrun", args)
	if want := "ran 5 iterations; checksum a33e8df59c68656f"; ct != want || gt != want {
		t.Errorf("text: C %q, Go %q, want %q", ct, gt, want)
	}
	if cs != gs {
		t.Errorf("structuredContent: C %s, Go %s", cs, gs)
	}
	reports := func(o *observer) string {
		var out []string
		for _, p := range o.progress {
			out = append(out, fmt.Sprintf("%g/%g %s", p.Progress, p.Total, p.Message))
		}
		return strings.Join(out, "; ")
	}
	if want := "2/5 iteration 2 of 5; 4/5 iteration 4 of 5; 5/5 iteration 5 of 5"; reports(cobs) != want || reports(gobs) != want {
		t.Errorf("progress: C %q, Go %q, want %q", reports(cobs), reports(gobs), want)
	}
}

// TestLongrunAsATask: a call of the C example (tool longrun_c of module
// longrun) that runs as an MCP task runs under the task budget (here the
// tool's task_fuel), not the interactive one (the module's fuel), which
// stops an interactive call first.
func TestLongrunAsATask(t *testing.T) {
	t.Parallel()
	w := newWorld(t, []string{"longrun"}, "", "  limits:\n    longrun: {fuel: 1000000}\n    longrun_c: {task_fuel: 3000000}\n")
	call := func(task bool) *tool.Result {
		res, err := w.app.Call(context.Background(), mcpserver.Call{Pass: mcpserver.LocalPass(), Name: "longrun_c",
			Arguments: json.RawMessage(`{"iterations":1000000000}`), Observer: &observer{}, Task: task})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for task, want := range map[bool]string{
		false: "longrun_c ran out of fuel after 1000000 units; raise tools.limits.longrun.fuel (now 1000000)",
		true:  "longrun_c ran out of fuel after 3000000 units; raise tools.limits.longrun_c.task_fuel (now 3000000)",
	} {
		if res := call(task); !res.IsError || res.Error.Kind != tool.KindOutOfFuel || res.Error.Message != want {
			t.Errorf("task %v: %v, want out_of_fuel: %s", task, res.Error, want)
		}
	}
}
