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

// FuzzDescriptorTaskSupport: a descriptor a module sends, whatever its
// bytes, either fails Validate or has a task support of the three MCP
// defines: nothing else reaches the policy, the lock or tools/list.
func FuzzDescriptorTaskSupport(f *testing.F) {
	f.Add([]byte(`{"name":"t","description":"d","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`))
	f.Add([]byte(`{"name":"t","description":"d","inputSchema":{"type":"object"},"execution":{}}`))
	f.Add([]byte(`{"name":"t","description":"d","inputSchema":{"type":"object"},"execution":{"taskSupport":"Required"}}`))
	f.Add([]byte(`{"name":"t","description":"d","inputSchema":{"type":"object"},"execution":null}`))
	f.Add([]byte(`{"name":"t","description":"d","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional\u0000"}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var d Descriptor
		if json.Unmarshal(raw, &d) != nil || d.Validate() != nil {
			return
		}
		if s := d.TaskSupport(); !ValidTaskSupport(s) {
			t.Fatalf("valid descriptor %s has task support %q", raw, s)
		}
	})
}
