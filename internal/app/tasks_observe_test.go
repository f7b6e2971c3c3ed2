package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/mcpserver"
)

// observedReplica is a replica whose runner reports to an audit log and
// metrics of its own; closeAudit flushes the log and returns its lines.
func observedReplica(t *testing.T, dir string, opts TaskOptions) (r *taskRunner, metrics *observe.Metrics, closeAudit func() []observe.Line) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	audit, err := observe.OpenAudit(observe.AuditOptions{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	metrics = observe.NewMetrics(observe.Sources{})
	rec := observe.New(observe.Options{Audit: audit, Metrics: metrics})
	st, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r = newTaskRunner(st, opts, discardLogger(), func() observe.Recorder { return rec })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.close(ctx)
	})
	closed := false
	t.Cleanup(func() {
		if !closed {
			audit.Close()
		}
	})
	return r, metrics, func() []observe.Line {
		closed = true
		if err := audit.Close(); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []observe.Line
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "secret-answer") || strings.Contains(sc.Text(), "Your PIN") {
				t.Errorf("an audit line holds a request's params or an answer: %s", sc.Text())
			}
			var l observe.Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
		}
		return out
	}
}

// taskSeries returns the warden_tasks_* series of m, by name and label
// values ("warden_tasks_status_changes_total/working").
func taskSeries(t *testing.T, m *observe.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "warden_tasks_") {
			continue
		}
		for _, mt := range f.Metric {
			name := f.GetName()
			for _, l := range mt.Label {
				name += "/" + l.GetValue()
			}
			if mt.Gauge != nil {
				out[name] = mt.Gauge.GetValue()
			} else if mt.Counter != nil {
				out[name] = mt.Counter.GetValue()
			}
		}
	}
	return out
}

// TestTaskStatusAudited: each change of a task into input_required and out
// of it is a task_status line of the replica running the task (from, to,
// the owner, and what is asked counted by method, never the params nor the
// answers), answered on another replica or not at all (cancelled while
// waiting), and moves warden_tasks_status_changes_total and
// warden_tasks_waiting_input; progress reports are not status changes, and
// the replica that only took the answers records none.
func TestTaskStatusAudited(t *testing.T) {
	dir := t.TempDir()
	a, aMetrics, closeA := observedReplica(t, dir, TaskOptions{Replica: "a", PollInterval: time.Millisecond})
	b, bMetrics, closeB := observedReplica(t, dir, TaskOptions{Replica: "b", PollInterval: time.Millisecond})
	pin := json.RawMessage(`{"message":"Your PIN?"}`)
	alice := principal.With(context.Background(), principal.Principal{Subject: "alice", Via: principal.ViaOAuth})
	task, err := a.Start(alice,
		mcpserver.TaskStart{Owner: "o", Tool: "asker",
			Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
				for range 3 {
					link.Status("progress") // no status change
				}
				if _, err := link.Ask(ctx, []tasks.InputRequest{
					{Key: "pin", Method: "elicitation/create", Params: pin},
					{Key: "roots", Method: "roots/list"},
					{Key: "again", Method: "elicitation/create", Params: pin},
				}); err != nil {
					return nil, err
				}
				_, err := link.Ask(ctx, []tasks.InputRequest{{Key: "more", Method: "sampling/createMessage", Params: pin}})
				return nil, err
			}})
	if err != nil {
		t.Fatal(err)
	}
	untilAsked(t, b, "o", task.ID, "pin@1")
	// The change is audited once stored: the record may show it first.
	for taskSeries(t, aMetrics)["warden_tasks_waiting_input"] != 1 {
		if got := taskSeries(t, aMetrics)["warden_tasks_status_changes_total/input_required"]; got > 1 {
			t.Fatalf("%v changes into input_required and none waiting", got)
		}
		runtime.Gosched()
	}
	secret := json.RawMessage(`{"action":"accept","content":{"pin":"secret-answer"}}`)
	if _, err := b.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{
		"pin@1": secret, "again@1": secret, "roots@1": json.RawMessage(`{"roots":[]}`)}); err != nil {
		t.Fatal(err)
	}
	untilAsked(t, b, "o", task.ID, "more@2")
	if got, err := a.Cancel(alice, "o", task.ID); err != nil || got.Status != tasks.Cancelled {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	for series, want := range map[string]float64{
		"warden_tasks_status_changes_total/input_required": 2,
		"warden_tasks_status_changes_total/working":        1,
		"warden_tasks_status_changes_total/cancelled":      1,
		"warden_tasks_waiting_input":                       0,
		"warden_tasks_running":                             0,
	} {
		if got, ok := taskSeries(t, aMetrics)[series]; !ok || got != want {
			t.Errorf("a: %s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	if got := taskSeries(t, bMetrics); len(got) != 0 {
		t.Errorf("b, which took answers only, has task series %v", got)
	}
	type line struct{ Who, Via, Event, Tool, Target, From, Outcome, Requests, Reason string }
	var got []line
	for _, l := range closeA() {
		reason := l.Reason
		if l.Event == observe.TaskEnded {
			reason = "" // the status message, pinned by the runner's own tests
		}
		got = append(got, line{l.Who, l.Via, l.Event, l.Tool, l.Target, l.From, l.Outcome, l.Requests, reason})
	}
	mk := func(event, from, to, requests, reason string) line {
		return line{"alice", "oauth", event, "asker", task.ID, from, to, requests, reason}
	}
	want := []line{
		mk("task_start", "", "working", "", ""),
		mk("task_status", "working", "input_required", "elicitation/create=2,roots/list=1", ""),
		mk("task_status", "input_required", "working", "", "answered"),
		mk("task_status", "working", "input_required", "sampling/createMessage=1", ""),
		mk("task_cancel", "", "input_required", "", ""),
		mk("task_status", "input_required", "cancelled", "", "cancelled"),
		mk("task_end", "", "cancelled", "", ""),
	}
	if len(got) != len(want) {
		t.Fatalf("a's audit lines:\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if lines := closeB(); len(lines) != 0 {
		t.Errorf("b's audit lines: %+v", lines)
	}
}

// TestTaskStatusAuditedOnStops: a task stopped while it waits for input
// leaves input_required straight for the status its run ends it with, and
// the task_status line says so with the stop's reason: the call's own
// deadline (its task budget, told from a client_wait timer by the cause,
// hostfuncs.ErrClientWait) ends it failed, "deadline", with no working in
// between, while client_wait leaves it working, "unanswered"; its server's
// shutdown ends it failed, "shutdown"; a record another server ended (its
// lease lapsed there), seen at a lease renewal, stands failed, "ended
// elsewhere", not cancelled.
func TestTaskStatusAuditedOnStops(t *testing.T) {
	alice := principal.With(context.Background(), principal.Principal{Subject: "alice", Via: principal.ViaOAuth})
	type line struct{ Event, From, Outcome, Reason string }
	lines := func(all []observe.Line) []line {
		var out []line
		for _, l := range all {
			reason := l.Reason
			if l.Event == observe.TaskEnded {
				reason = ""
			}
			out = append(out, line{l.Event, l.From, l.Outcome, reason})
		}
		return out
	}
	want := func(how, reason string) []line {
		return []line{
			{"task_start", "", "working", ""},
			{"task_status", "working", "input_required", ""},
			{"task_status", "input_required", how, reason},
			{"task_end", "", how, ""},
		}
	}
	asker := func(deadline bool) func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
		return func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			if deadline {
				// The call's own budget, passed as it waits (a
				// client_wait timer's cause is hostfuncs.ErrClientWait).
				past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
				defer cancel()
				ctx = past
			}
			_, err := link.Ask(ctx, []tasks.InputRequest{{Key: "q", Method: "elicitation/create"}})
			return nil, err
		}
	}

	t.Run("deadline", func(t *testing.T) {
		r, _, closeAudit := observedReplica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Hour})
		task, err := r.Start(alice, mcpserver.TaskStart{Owner: "o", Tool: "asker", Run: asker(true)})
		if err != nil {
			t.Fatal(err)
		}
		if end := untilEnded(t, r, "o", task.ID); end.Status != tasks.Failed {
			t.Fatalf("the end: %+v", end)
		}
		if got := lines(closeAudit()); fmt.Sprint(got) != fmt.Sprint(want("failed", "deadline")) {
			t.Errorf("audit lines:\n%v\nwant\n%v", got, want("failed", "deadline"))
		}
	})

	t.Run("client_wait", func(t *testing.T) {
		r, _, closeAudit := observedReplica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Hour})
		task, err := r.Start(alice, mcpserver.TaskStart{Owner: "o", Tool: "asker",
			Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
				wait, cancel := context.WithDeadlineCause(ctx, time.Now().Add(-time.Second), hostfuncs.ErrClientWait)
				defer cancel()
				if _, err := link.Ask(wait, []tasks.InputRequest{{Key: "q", Method: "elicitation/create"}}); err == nil {
					t.Error("answered")
				}
				return json.RawMessage(`{"content":[]}`), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		if end := untilEnded(t, r, "o", task.ID); end.Status != tasks.Completed {
			t.Fatalf("the end: %+v", end)
		}
		want := []line{
			{"task_start", "", "working", ""},
			{"task_status", "working", "input_required", ""},
			{"task_status", "input_required", "working", "unanswered"},
			{"task_end", "", "completed", ""},
		}
		if got := lines(closeAudit()); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("audit lines:\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		r, _, closeAudit := observedReplica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Hour})
		task, err := r.Start(alice, mcpserver.TaskStart{Owner: "o", Tool: "asker", Run: asker(false)})
		if err != nil {
			t.Fatal(err)
		}
		untilAsked(t, r, "o", task.ID, "q@1")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.close(ctx)
		if got := lines(closeAudit()); fmt.Sprint(got) != fmt.Sprint(want("failed", "shutdown")) {
			t.Errorf("audit lines:\n%v\nwant\n%v", got, want("failed", "shutdown"))
		}
	})

	t.Run("ended elsewhere", func(t *testing.T) {
		dir := t.TempDir()
		a, _, closeAudit := observedReplica(t, dir, TaskOptions{Replica: "a", PollInterval: time.Hour, Lease: 30 * time.Millisecond})
		b := replica(t, dir, TaskOptions{Replica: "b", PollInterval: time.Hour, Lease: time.Hour})
		task, err := a.Start(alice, mcpserver.TaskStart{Owner: "o", Tool: "asker", Run: asker(false)})
		if err != nil {
			t.Fatal(err)
		}
		untilAsked(t, a, "o", task.ID, "q@1")
		// As b's sweep ends a task whose lease lapsed.
		if _, err := b.store.Update(context.Background(), "o", task.ID, b.bounds(), func(t *tasks.Task) {
			t.Status, t.StatusMessage = tasks.Failed, tasks.LeaseLapsed
		}); err != nil {
			t.Fatal(err)
		}
		if rt := a.local(task.ID); rt != nil {
			<-rt.done
		}
		if end, _ := a.Get(context.Background(), "o", task.ID); end.Status != tasks.Failed || end.StatusMessage != tasks.LeaseLapsed {
			t.Errorf("the record: %+v", end)
		}
		if got := lines(closeAudit()); fmt.Sprint(got) != fmt.Sprint(want("failed", "ended elsewhere")) {
			t.Errorf("audit lines:\n%v\nwant\n%v", got, want("failed", "ended elsewhere"))
		}
	})
}
