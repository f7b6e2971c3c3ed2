package observe

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warden-run/warden/internal/principal"
)

// TaskEvent is one step of an MCP task's life: started, its status
// changed, cancel requested, ended (with its final status).
type TaskEvent struct {
	// Event is TaskStarted, TaskStatus, TaskCancel or TaskEnded.
	Event string
	ID    string
	Tool  string
	// Status is the task's status after the event ("working" when
	// started; the terminal status when ended).
	Status string
	// From is the status a TaskStatus event left.
	From string
	// Requests, on a TaskStatus event entering input_required, counts
	// what the task asks by method ("elicitation/create=2,roots/list=1"):
	// never the requests' params nor their answers, which may hold the
	// person's data.
	Requests string
	// Reason is the status message of an ended task, and why a task left
	// input_required (TaskStatus).
	Reason string
}

// The events of TaskEvent.
const (
	TaskStarted = "task_start"
	// TaskStatus is a change of a running task's status other than its
	// start and end: into input_required and out of it.
	TaskStatus = "task_status"
	TaskCancel = "task_cancel"
	TaskEnded  = "task_end"
)

// inputRequired is the task status of a task waiting for its client's
// answers (tasks.InputRequired; observe does not import the task store).
const inputRequired = "input_required"

// TaskRecorder hears of task events. Hub implements it; a Recorder that
// does not is not told of tasks.
type TaskRecorder interface {
	Task(ctx context.Context, e TaskEvent)
}

// taskMetrics are the warden_tasks_* series, registered with the first
// task event so that a server that runs none shows none.
type taskMetrics struct {
	once      sync.Once
	started   *prometheus.CounterVec
	ended     *prometheus.CounterVec
	cancelled prometheus.Counter
	running   prometheus.Gauge
	changes   *prometheus.CounterVec
	waiting   prometheus.Gauge
}

func (m *Metrics) tasks() *taskMetrics {
	t := &m.taskSeries
	t.once.Do(func() {
		t.started = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_tasks_started_total", Help: "MCP tasks started, by tool.",
		}, []string{"tool"})
		t.ended = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_tasks_ended_total", Help: "MCP tasks ended on this server, by final status (completed, failed, cancelled).",
		}, []string{"status"})
		t.cancelled = prometheus.NewCounter(prometheus.CounterOpts{
			Name: "warden_tasks_cancel_requests_total", Help: "tasks/cancel requests for unfinished tasks.",
		})
		t.running = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "warden_tasks_running", Help: "MCP tasks running on this server now.",
		})
		t.changes = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_tasks_status_changes_total", Help: "Status changes of MCP tasks running on this server other than start and end, by the status entered (input_required, working).",
		}, []string{"status"})
		t.waiting = prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "warden_tasks_waiting_input", Help: "MCP tasks running on this server that are input_required now.",
		})
		m.reg.MustRegister(t.started, t.ended, t.cancelled, t.running, t.changes, t.waiting)
	})
	return t
}

// Task implements TaskRecorder: an audit line and the task metrics.
func (h *Hub) Task(ctx context.Context, e TaskEvent) {
	if h.metrics != nil {
		t := h.metrics.tasks()
		switch e.Event {
		case TaskStarted:
			t.started.WithLabelValues(e.Tool).Inc()
			t.running.Inc()
		case TaskStatus:
			t.changes.WithLabelValues(e.Status).Inc()
			// Leaving input_required counts out of the gauge even when
			// the record could not be changed (the call waits no more).
			if e.From == inputRequired {
				t.waiting.Dec()
			} else if e.Status == inputRequired {
				t.waiting.Inc()
			}
		case TaskCancel:
			t.cancelled.Inc()
		case TaskEnded:
			t.ended.WithLabelValues(e.Status).Inc()
			t.running.Dec()
		}
	}
	if h.audit != nil {
		who := principal.From(ctx)
		l := &Line{
			Time: h.now().UTC().Format(time.RFC3339Nano), Who: clip(who.Subject, maxField), Via: who.Via,
			Method: "tools/call", Tool: clip(e.Tool, maxField), Event: e.Event,
			Target: e.ID, Outcome: e.Status, From: e.From, Requests: clip(e.Requests, maxReason),
			Reason: clip(e.Reason, maxReason),
		}
		h.audit.write(l)
	}
}
