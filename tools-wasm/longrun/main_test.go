package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/warden-run/warden/guest-sdk/go/warden"
	"github.com/warden-run/warden/internal/schema"
	"github.com/warden-run/warden/tool"
)

// checksum5x100 is the checksum of 5 iterations of 100 rounds, which the
// C example (guest-sdk/c/examples/longrun.c) must compute too.
const checksum5x100 = "a33e8df59c68656f"

// TestLongrun: the tool runs the iterations asked for, reports progress
// every `every` iterations and at the last, and says in its descriptor
// that it may run as a task.
func TestLongrun(t *testing.T) {
	host := &warden.FakeHost{}
	reg := warden.NewRegistry(longrun{})
	got := string(reg.Dispatch([]byte(`{"tool":"longrun","arguments":{"iterations":5,"every":2,"rounds":100}}`), host))
	want := `{"content":[{"type":"text","text":"ran 5 iterations; checksum ` + checksum5x100 + `"}],"structuredContent":{"iterations":5,"checksum":"` + checksum5x100 + `"}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	var reports []string
	for _, p := range host.Reports() {
		reports = append(reports, fmt.Sprintf("%g/%g %s", p.Progress, p.Total, p.Message))
	}
	if got, want := strings.Join(reports, "; "), "2/5 iteration 2 of 5; 4/5 iteration 4 of 5; 5/5 iteration 5 of 5"; got != want {
		t.Errorf("progress %s, want %s", got, want)
	}
	d := longrun{}.Descriptor()
	schemas, err := schema.CompileDescriptor(&d)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Input.Validate(map[string]any{"iterations": float64(0)}); err == nil {
		t.Error("iterations 0 passed the input schema")
	}
	if err := schemas.Input.Validate(map[string]any{"iterations": float64(3), "every": float64(1)}); err != nil {
		t.Errorf("iterations 3: %v", err)
	}
	if err := schemas.Output.Validate(map[string]any{"iterations": float64(5), "checksum": checksum5x100}); err != nil {
		t.Error(err)
	}
	if d.TaskSupport() != tool.TaskOptional {
		t.Errorf("task support %q, want optional", d.TaskSupport())
	}
	if !strings.Contains(string(reg.Describe()), `"execution":{"taskSupport":"optional"}`) {
		t.Errorf("describe does not declare task support: %s", reg.Describe())
	}
}
