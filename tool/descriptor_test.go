package tool

import (
	"encoding/json"
	"testing"
)

// TestValidateTaskSupport: execution.taskSupport takes the three values
// MCP defines, or none (forbidden); any other is refused naming the field
// and what it may be.
func TestValidateTaskSupport(t *testing.T) {
	for _, c := range []struct {
		execution *Execution
		support   string
		err       string
	}{
		{nil, TaskForbidden, ""},
		{&Execution{}, TaskForbidden, ""},
		{&Execution{TaskSupport: TaskForbidden}, TaskForbidden, ""},
		{&Execution{TaskSupport: TaskOptional}, TaskOptional, ""},
		{&Execution{TaskSupport: TaskRequired}, TaskRequired, ""},
		{&Execution{TaskSupport: "Optional"}, "Optional",
			`execution.taskSupport "Optional": must be "forbidden", "optional" or "required" (or absent, which means "forbidden")`},
	} {
		d := Descriptor{Name: "t", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`), Execution: c.execution}
		err := d.Validate()
		if got := errString(err); got != c.err {
			t.Errorf("%+v: Validate = %q, want %q", c.execution, got, c.err)
		}
		if d.TaskSupport() != c.support {
			t.Errorf("%+v: TaskSupport = %q, want %q", c.execution, d.TaskSupport(), c.support)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
