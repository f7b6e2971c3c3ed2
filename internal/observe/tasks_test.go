package observe

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/principal"
)

// TestTaskEvents: a task's start, cancel request and end are audit lines
// naming the principal, the tool and the task, and move the warden_tasks_*
// series: started by tool, ended by status, cancel requests, running.
func TestTaskEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	a, err := OpenAudit(AuditOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(Sources{})
	h := New(Options{Audit: a, Metrics: m, Now: fixedClock}).(TaskRecorder)
	ctx := principal.With(context.Background(), principal.Principal{Subject: "alice", Via: principal.ViaOAuth})
	h.Task(ctx, TaskEvent{Event: TaskStarted, ID: "t1", Tool: "build", Status: "working"})
	h.Task(ctx, TaskEvent{Event: TaskStarted, ID: "t2", Tool: "build", Status: "working"})
	h.Task(ctx, TaskEvent{Event: TaskCancel, ID: "t1", Tool: "build", Status: "working"})
	h.Task(ctx, TaskEvent{Event: TaskEnded, ID: "t1", Tool: "build", Status: "cancelled", Reason: "cancelled on request"})
	h.Task(ctx, TaskEvent{Event: TaskStatus, ID: "t2", Tool: "build", From: "working", Status: "input_required", Requests: "elicitation/create=1"})
	h.Task(ctx, TaskEvent{Event: TaskStatus, ID: "t2", Tool: "build", From: "input_required", Status: "working", Reason: "answered"})
	h.Task(ctx, TaskEvent{Event: TaskStatus, ID: "t2", Tool: "build", From: "working", Status: "input_required", Requests: "roots/list=1"})
	a.Close()
	lines := readLines(t, path)
	if len(lines) != 7 {
		t.Fatalf("%d audit lines", len(lines))
	}
	end := lines[3]
	if end.Who != "alice" || end.Via != "oauth" || end.Event != "task_end" || end.Tool != "build" || end.Target != "t1" ||
		end.Outcome != "cancelled" || end.Reason != "cancelled on request" || end.Method != "tools/call" {
		t.Errorf("task end line %+v", end)
	}
	if st := lines[4]; st.Event != "task_status" || st.Target != "t2" || st.From != "working" || st.Outcome != "input_required" ||
		st.Requests != "elicitation/create=1" || st.Reason != "" || st.Who != "alice" {
		t.Errorf("task status line %+v", st)
	}
	if st := lines[5]; st.Event != "task_status" || st.From != "input_required" || st.Outcome != "working" || st.Reason != "answered" {
		t.Errorf("task status line %+v", st)
	}
	for series, want := range map[string]float64{
		`warden_tasks_started_total{tool="build"}`:                   2,
		`warden_tasks_ended_total{status="cancelled"}`:               1,
		`warden_tasks_cancel_requests_total`:                         1,
		`warden_tasks_running`:                                       1,
		`warden_tasks_status_changes_total{status="input_required"}`: 2,
		`warden_tasks_status_changes_total{status="working"}`:        1,
		`warden_tasks_waiting_input`:                                 1,
	} {
		if got, ok := gathered(t, m)[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
}

// gathered is every series of m by name and labels, as the text format
// writes them.
func gathered(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			name := f.GetName()
			if len(mt.GetLabel()) > 0 {
				var labels []string
				for _, l := range mt.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case mt.Counter != nil:
				out[name] = mt.GetCounter().GetValue()
			case mt.Gauge != nil:
				out[name] = mt.GetGauge().GetValue()
			}
		}
	}
	return out
}
