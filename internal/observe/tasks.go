package observe

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warden-run/warden/internal/principal"
)

// TaskEvent is one step of an MCP task's life: started, cancel requested,
// ended (with its final status).
type TaskEvent struct {
	// Event is TaskStarted, TaskCancel or TaskEnded.
	Event string
	ID    string
	Tool  string
	// Status is the task's status after the event ("working" when
	// started; the terminal status when ended).
	Status string
	// Reason is the status message of an ended task.
	Reason string
}

// The events of TaskEvent.
const (
	TaskStarted = "task_start"
	TaskCancel  = "task_cancel"
	TaskEnded   = "task_end"
)

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
		m.reg.MustRegister(t.started, t.ended, t.cancelled, t.running)
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
			Target: e.ID, Outcome: e.Status, Reason: clip(e.Reason, maxReason),
		}
		h.audit.write(l)
	}
}
