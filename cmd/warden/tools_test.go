package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/warden-run/warden/internal/catalog"
	"github.com/warden-run/warden/tool"
)

// TestToolsJSONGolden pins the JSON of `warden tools -o json`, which
// scripts read (docs/config.md, "Output for scripts"): a field renamed or
// removed, or an empty list printed as null, fails here. Fields may be
// added: then add them to testdata/tools.json too.
func TestToolsJSONGolden(t *testing.T) {
	sum := "9b1c04d2aa31e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495"
	list := toolList{
		Tools: []toolRow{
			{Name: "echo", Module: "echo", SHA256: sum, TaskSupport: "forbidden"},
			{Name: "fetch", Module: "fetch", SHA256: sum,
				Requested:  tool.Capabilities{Net: []string{"*"}, Env: []string{"TOKEN"}, FS: tool.FSAccess{Read: []string{"data"}}},
				Granted:    tool.Capabilities{Env: []string{"TOKEN"}, FS: tool.FSAccess{Read: []string{"data"}}},
				NotGranted: tool.Capabilities{Net: []string{"*"}}, TaskSupport: "optional"},
			{Name: "note", Module: "note", SHA256: sum,
				Requested:   tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"notes"}},
				Granted:     tool.Capabilities{},
				NotGranted:  tool.Capabilities{Memory: tool.MemoryReadWrite, MemoryTopics: []string{"notes"}},
				TaskSupport: "required", TaskSetBy: "tools.tasks.no*"},
		},
		Failed:   []failedModule{{Module: "broken", Error: errors.New("load tools/broken.wasm: invalid module").Error()}},
		Rejected: []rejectedTool{{Name: "..", Module: "dots", Reason: `tool name ".." must be 1-128 characters`}},
		Refused: []catalog.Refusal{{Tool: "echo", Module: "aaa-evil", Modules: []string{"aaa-evil", "echo"}, ServedBy: "echo",
			Reason: "pinned module echo serves it"}},
		GrantsElsewhere: []string{"tools.grants.hover belongs to module lsp2"},
		Unusable:        []string{`linecount fs.read=/etc: read "/etc": outside the project roots`},
		ServersMissing: []serverMissing{{Tool: "symbols", Language: "python",
			Error: "the python language server is not installed (pyright-langserver is not in PATH); install it with: npm i -g pyright"}},
	}
	var got bytes.Buffer
	if err := writeJSON(&got, list); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "tools.json")
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Fatalf("warden tools -o json printed:\n%s\nwant (%s):\n%s", got.String(), golden, want)
	}

	// Nothing to list is empty lists, never null: a script iterates them.
	got.Reset()
	if err := writeJSON(&got, toolList{Tools: []toolRow{}, Failed: []failedModule{}, Rejected: []rejectedTool{}, Refused: []catalog.Refusal{}, GrantsElsewhere: []string{}, Unusable: []string{}, ServersMissing: []serverMissing{}}); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"tools\": [],\n  \"failed\": [],\n  \"rejected\": [],\n  \"refused\": [],\n  \"grantsElsewhere\": [],\n  \"unusable\": [],\n  \"serversMissing\": []\n}\n"; got.String() != want {
		t.Fatalf("empty list printed:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestPrintTasks: the table is followed by the tools that may or must run
// as MCP tasks and what decides it; tools that run none add nothing, so
// the table of a config without tasks is as it was.
func TestPrintTasks(t *testing.T) {
	var b bytes.Buffer
	printTasks(&b, []toolRow{{Name: "echo", TaskSupport: "forbidden"}})
	if b.Len() != 0 {
		t.Fatalf("printed %q for a tool that runs no task", b.String())
	}
	printTasks(&b, []toolRow{{Name: "echo", TaskSupport: "forbidden"}, {Name: "build", TaskSupport: "optional"},
		{Name: "scan", TaskSupport: "required", TaskSetBy: "tools.tasks.sc*"}, {Name: "kept", TaskSupport: "forbidden", TaskSetBy: "tools.tasks.kept"}})
	want := "\nTASKS (3; optional or required run as MCP tasks under tools.limits.<tool>.task_timeout and task_fuel):\n" +
		"  build: optional (its descriptor)\n  scan: required (tools.tasks.sc*)\n  kept: forbidden (tools.tasks.kept)\n"
	if b.String() != want {
		t.Fatalf("printed:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestRelaxCollector checks the one-shot commands' collector pace:
// oneShotGCPercent when GOGC is unset, and GOGC's own when it is set (an
// operator's choice wins).
func TestRelaxCollector(t *testing.T) {
	t.Setenv("GOGC", "50") // restored after the test, and so is the pace:
	before := debug.SetGCPercent(77)
	t.Cleanup(func() { debug.SetGCPercent(before) })

	relaxCollector()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("with GOGC set: the pace is %d, want it untouched (77)", got)
	}
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	relaxCollector()
	if got := debug.SetGCPercent(77); got != oneShotGCPercent {
		t.Errorf("with GOGC unset: the pace is %d, want %d", got, oneShotGCPercent)
	}
}
