package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// replica is one taskRunner on a store directory that others may share:
// each OpenFile of the same directory is what a replica of its own holds.
func replica(t *testing.T, dir string, opts TaskOptions) *taskRunner {
	t.Helper()
	st, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newTaskRunner(st, opts, discardLogger(), nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r.close(ctx)
	})
	return r
}

// untilEnded polls owner's task id on r until it has ended.
func untilEnded(t *testing.T, r *taskRunner, owner, id string) tasks.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got, err := r.Await(ctx, owner, id)
	if err != nil {
		t.Fatalf("task %s did not end: %v (last %+v)", id, err, got)
	}
	return got
}

// counter is a call that reports progress in a loop until its context
// ends, checking the context once per iteration as a guest's fuel check
// does; it counts its iterations.
func counter(iterations *atomic.Int64) func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
	return func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
		status := link.Status
		for i := int64(1); ; i++ {
			if ctx.Err() != nil {
				return json.RawMessage(`{"content":[],"isError":true}`), nil
			}
			iterations.Store(i)
			status(fmt.Sprintf("iteration %d", i))
		}
	}
}

// TestTaskRunnerCancelCounted: a cancel stops the call at its next check of
// the context: the task ends cancelled, its status message says how far it
// got, and the call made at most one progress report after the cancel.
func TestTaskRunnerCancelCounted(t *testing.T) {
	r := replica(t, t.TempDir(), TaskOptions{})
	var n atomic.Int64
	task, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "local:a", Tool: "count", Run: counter(&n)})
	if err != nil {
		t.Fatal(err)
	}
	for n.Load() < 100 {
		// Running: the counter reports on its own goroutine.
		if _, err := r.Get(context.Background(), "local:a", task.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, err := r.Cancel(context.Background(), "local:a", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	var after, last int
	if _, err := fmt.Sscanf(got.StatusMessage, "cancelled on request; %d progress reports after the cancel; its last status: iteration %d", &after, &last); err != nil ||
		got.Status != tasks.Cancelled || after > 1 || last < 100 {
		t.Errorf("after cancel: %s %q (%v): want cancelled, at most 1 report after the cancel", got.Status, got.StatusMessage, err)
	}
	if _, err := r.Cancel(context.Background(), "local:a", task.ID); err == nil {
		t.Errorf("a second cancel of an ended task did not say it had ended")
	}
}

// TestTaskRunnerBounds: a task past tasks.max_per_client is refused with
// an error naming the config keys; a result past tasks.max_result ends the
// task failed, saying so.
func TestTaskRunnerBounds(t *testing.T) {
	r := replica(t, t.TempDir(), TaskOptions{MaxPerClient: 1, MaxTotal: 5, MaxResult: 64})
	var n atomic.Int64
	first, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "local:a", Tool: "count", Run: counter(&n)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Start(context.Background(), mcpserver.TaskStart{Owner: "local:a", Tool: "count", Run: counter(&n)})
	if err == nil || err.Error() != "too many unfinished tasks: this client has 1, the most it may have (config tasks.max_per_client is 1, tasks.max_total 5); wait for a task to end, or cancel one" {
		t.Errorf("second task: %v", err)
	}
	// Another client is not bounded by the first one's tasks.
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}`)
	other, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "local:b", Tool: "big",
		Run: func(context.Context, mcpserver.TaskLink) (json.RawMessage, error) { return big, nil }})
	if err != nil {
		t.Fatal(err)
	}
	got := untilEnded(t, r, "local:b", other.ID)
	if got.Status != tasks.Failed || got.StatusMessage != fmt.Sprintf("the result of %d bytes is more than the 64 a task keeps (config tasks.max_result)", len(big)) {
		t.Errorf("oversized result: %s %q", got.Status, got.StatusMessage)
	}
	r.Cancel(context.Background(), "local:a", first.ID)
}

// TestTaskRunnerReplicas: two replicas on one store: a task started on one
// is read from the other; a cancel made on the other reaches the running
// one through its lease renewal and the task ends cancelled; and when a
// replica stops renewing (as killed), its task ends failed by lease
// expiry, found by the other's sweep.
func TestTaskRunnerReplicas(t *testing.T) {
	dir := t.TempDir()
	opts := TaskOptions{Lease: 2 * time.Second, PollInterval: 20 * time.Millisecond}
	a, b := replica(t, dir, opts), replica(t, dir, opts)
	var n atomic.Int64
	task, err := a.Start(context.Background(), mcpserver.TaskStart{Owner: "local:x", Tool: "count", Run: counter(&n)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(context.Background(), "local:x", task.ID); err != nil || got.Replica != a.opts.Replica {
		t.Fatalf("read from the other replica: %+v %v", got, err)
	}
	got, err := b.Cancel(context.Background(), "local:x", task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != tasks.Cancelled || !strings.HasPrefix(got.StatusMessage, "cancelled on request; ") || !strings.Contains(got.StatusMessage, "; its last status: iteration ") {
		t.Errorf("cancelled from the other replica: %s %q", got.Status, got.StatusMessage)
	}

	// A replica that stops renewing: its lease loop ends, its call runs on.
	c := replica(t, dir, opts)
	block := make(chan struct{})
	defer close(block)
	stalled, err := c.Start(context.Background(), mcpserver.TaskStart{Owner: "local:x", Tool: "stall",
		Run: func(ctx context.Context, _ mcpserver.TaskLink) (json.RawMessage, error) {
			<-block
			return nil, ctx.Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	c.stop()
	<-c.done
	got = untilEnded(t, b, "local:x", stalled.ID)
	if got.Status != tasks.Failed || got.StatusMessage != tasks.LeaseLapsed {
		t.Errorf("task of a stalled replica: %s %q", got.Status, got.StatusMessage)
	}
}

// readCounter counts the store reads that found a task still working;
// first closes at the second (Start reads the task it created).
type readCounter struct {
	tasks.Store
	working atomic.Int64
	first   chan struct{}
}

func (c *readCounter) Get(ctx context.Context, owner, id string) (tasks.Task, error) {
	t, err := c.Store.Get(ctx, owner, id)
	if err == nil && !t.Status.Terminal() && c.working.Add(1) == 2 {
		close(c.first)
	}
	return t, err
}

// TestTaskAwaitLocalNoPolling: awaiting a task that runs on this replica
// reads the store once before it ends and once after, however long it
// runs: it waits on the run's end, not on a poll of the store.
func TestTaskAwaitLocalNoPolling(t *testing.T) {
	st, err := tasks.OpenFile(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rc := &readCounter{Store: st, first: make(chan struct{})}
	r := newTaskRunner(rc, TaskOptions{PollInterval: time.Nanosecond}, discardLogger(), nil)
	t.Cleanup(func() { r.close(context.Background()) })
	release := make(chan struct{})
	task, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "local:a", Tool: "slow",
		Run: func(context.Context, mcpserver.TaskLink) (json.RawMessage, error) {
			<-release
			return json.RawMessage(`{"content":[]}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan tasks.Task)
	go func() {
		got, _ := r.Await(context.Background(), "local:a", task.ID)
		done <- got
	}()
	<-rc.first
	// A poll at the 1ns interval would read again at once; give it every
	// chance to before the task ends.
	for range 1000 {
		runtime.Gosched()
	}
	close(release)
	if got := <-done; got.Status != tasks.Completed {
		t.Fatalf("awaited %+v", got)
	}
	if n := rc.working.Load() - 1; n != 1 {
		t.Fatalf("Await read the running task %d times, want 1", n)
	}
}

// untilAsked polls owner's task id on r until it asks for key.
func untilAsked(t *testing.T, r *taskRunner, owner, id, key string) tasks.Task {
	t.Helper()
	for {
		got, err := r.Get(context.Background(), owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == tasks.InputRequired && len(got.InputRequests) > 0 && got.InputRequests[0].Key == key {
			return got
		}
		if got.Status.Terminal() {
			t.Fatalf("the task ended instead of asking %s: %+v", key, got)
		}
		runtime.Gosched()
	}
}

// TestTaskInputAcrossReplicas: a task's call on replica a asks twice; the
// answers come by replica b (tasks/update on another server), and reach
// the parked call through the record, which a polls. Each round's keys
// are minted for it: a late answer to the first round is not taken in the
// second, nor is the first round's answer taken twice.
func TestTaskInputAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	a := replica(t, dir, TaskOptions{Replica: "a", PollInterval: time.Millisecond})
	b := replica(t, dir, TaskOptions{Replica: "b", PollInterval: time.Millisecond})
	ask := []tasks.InputRequest{{Key: "q", Method: "elicitation/create", Params: json.RawMessage(`{"message":"Go on?"}`)}}
	task, err := a.Start(context.Background(), mcpserver.TaskStart{Owner: "o", Tool: "asker",
		Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			first, err := link.Ask(ctx, ask)
			if err != nil {
				return nil, err
			}
			second, err := link.Ask(ctx, ask)
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]any{"first": first[0], "second": second[0]}})
		}})
	if err != nil {
		t.Fatal(err)
	}
	got := untilAsked(t, b, "o", task.ID, "q@1")
	if string(got.InputRequests[0].Params) != `{"message":"Go on?"}` || got.InputRequests[0].Method != "elicitation/create" {
		t.Fatalf("the request as stored: %+v", got.InputRequests)
	}
	if ignored, err := b.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"q@1": json.RawMessage(`{"action":"accept"}`)}); err != nil || ignored != nil {
		t.Fatalf("answering round 1 on b: %v, %v", ignored, err)
	}
	untilAsked(t, b, "o", task.ID, "q@2")
	ignored, err := b.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"q@1": json.RawMessage(`{"action":"accept"}`)})
	if err != nil || ignored["q@1"] != `not an outstanding request of this task (outstanding: "q@2")` {
		t.Fatalf("a late answer to round 1: %v, %v", ignored, err)
	}
	if _, err := b.Respond(context.Background(), "p", task.ID, map[string]json.RawMessage{"q@2": json.RawMessage(`{"action":"accept"}`)}); err == nil {
		t.Fatal("another owner answered the task")
	}
	if _, err := b.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"q@2": json.RawMessage(`{"action":"decline"}`)}); err != nil {
		t.Fatal(err)
	}
	end := untilEnded(t, a, "o", task.ID)
	if end.Status != tasks.Completed || !strings.Contains(string(end.Result), `"structuredContent":{"first":{"action":"accept"},"second":{"action":"decline"}}`) ||
		end.InputRequests != nil || end.InputResponses != nil {
		t.Errorf("the task's end: %+v %s", end, end.Result)
	}
}

// TestTaskInputCancelled: tasks/cancel of a task waiting for input stops
// its call and ends it cancelled, without input, and directly: the record
// goes from input_required to cancelled, never working in between (a
// status notification of each change is sent).
func TestTaskInputCancelled(t *testing.T) {
	r := replica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Hour})
	var mu sync.Mutex
	var statuses []tasks.Status
	task, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "o", Tool: "asker",
		Notify: func(t tasks.Task) {
			mu.Lock()
			defer mu.Unlock()
			statuses = append(statuses, t.Status)
		},
		Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			_, err := link.Ask(ctx, []tasks.InputRequest{{Key: "q", Method: "elicitation/create"}})
			return nil, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	untilAsked(t, r, "o", task.ID, "q@1")
	got, err := r.Cancel(context.Background(), "o", task.ID)
	if err != nil || got.Status != tasks.Cancelled || got.InputRequests != nil {
		t.Fatalf("cancelled while waiting: %+v, %v", got, err)
	}
	// Cancel returns once the run has ended, its last notification sent.
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(statuses) != "[input_required cancelled]" {
		t.Errorf("statuses notified: %v, want input_required then cancelled, nothing between", statuses)
	}
	if strings.Contains(got.StatusMessage, "came in time") {
		t.Errorf("the cancelled task's status: %q", got.StatusMessage)
	}
}

// TestTaskRespondChecksTheRecord: the runner checks each answer it takes
// against the request it answers in the record it writes (whatever the
// caller read before): an answer of the wrong kind to an outstanding
// request (a list, a roots result for an elicitation, null) is refused
// with the protocol's -32602 and nothing is taken, the record unchanged;
// the right kind is taken and reaches the call.
func TestTaskRespondChecksTheRecord(t *testing.T) {
	r := replica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Millisecond})
	task, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "o", Tool: "asker",
		Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			got, err := link.Ask(ctx, []tasks.InputRequest{{Key: "q", Method: "elicitation/create", Params: json.RawMessage(`{"message":"Go on?"}`)}})
			if err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"content": []any{}, "structuredContent": map[string]any{"answer": got[0]}})
		}})
	if err != nil {
		t.Fatal(err)
	}
	untilAsked(t, r, "o", task.ID, "q@1")
	for _, c := range []struct{ answer, msg string }{
		{`[1,2]`, `invalid params: inputResponses["q@1"] is not a result of elicitation/create`},
		{`{"roots":[]}`, `inputResponses["q@1"] is not a result of elicitation/create`},
		{`null`, `invalid params: inputResponses["q@1"] is not a result of elicitation/create`},
	} {
		ignored, err := r.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"q@1": json.RawMessage(c.answer), "other": json.RawMessage(`{}`)})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || je.Message != c.msg || ignored != nil {
			t.Errorf("answer %s: %v, %v; want -32602 %q", c.answer, ignored, err, c.msg)
		}
	}
	if got, err := r.Get(context.Background(), "o", task.ID); err != nil || got.Status != tasks.InputRequired || got.InputResponses != nil {
		t.Fatalf("after refused answers: %+v, %v", got, err)
	}
	ignored, err := r.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"q@1": json.RawMessage(`{"action":"decline"}`), "other": json.RawMessage(`[1,2]`)})
	if err != nil || fmt.Sprint(ignored) != `map[other:not an outstanding request of this task (outstanding: "q@1")]` {
		t.Fatalf("the right answer, and one for a key not asked: %v, %v", ignored, err)
	}
	if end := untilEnded(t, r, "o", task.ID); end.Status != tasks.Completed || !strings.Contains(string(end.Result), `"structuredContent":{"answer":{"action":"decline"}}`) {
		t.Errorf("the task's end: %+v %s", end, end.Result)
	}
}

// TestTaskInputWakeNotLost: a tasks/update taken on the call's own replica
// right after the call's round is stored (the exact point: the runner's
// askStored hook, before the call waits) wakes the call at once. With the
// poll interval an hour, only the doorbell can: a ring lost to the
// clearing of an earlier round's would leave the call waiting a poll.
func TestTaskInputWakeNotLost(t *testing.T) {
	r := replica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Hour})
	answered := make(chan error, 2)
	r.askStored = func(id string) {
		// Round n's key is q@n.
		got, err := r.Get(context.Background(), "o", id)
		if err == nil {
			_, err = r.Respond(context.Background(), "o", id, map[string]json.RawMessage{got.InputRequests[0].Key: json.RawMessage(`{"action":"accept"}`)})
		}
		answered <- err
	}
	done := make(chan struct{})
	task, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "o", Tool: "asker",
		Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			defer close(done)
			// Two rounds, each answered at the hook: the first round's
			// ring, taken, leaves nothing that loses the second's.
			for range 2 {
				if _, err := link.Ask(ctx, []tasks.InputRequest{{Key: "q", Method: "elicitation/create"}}); err != nil {
					return nil, err
				}
			}
			return json.RawMessage(`{"content":[]}`), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang guard: a woken call needs no time at all
		got, _ := r.Get(context.Background(), "o", task.ID)
		t.Fatalf("the call was not woken by the answer taken right after its round was stored: %+v", got)
	}
	for range 2 {
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
	}
	if end := untilEnded(t, r, "o", task.ID); end.Status != tasks.Completed {
		t.Errorf("the task's end: %+v", end)
	}
}

// TestCallAsTaskDoorRefusal: `warden call --task` ends a task the way a
// protocol client's task ends (mcpserver's runTaskCall): a typed refusal
// of the door's own (here CheckTask: the tool runs no task) is the call's
// result, so the task ends completed with it as an isError result; an
// unknown tool ends it failed.
func TestCallAsTaskDoorRefusal(t *testing.T) {
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "spinner.wasm"), spinWAT(t), 0o644); err != nil {
		t.Fatal(err)
	}
	a, _ := startApp(t, dir, fmt.Sprintf("project:\n  root: .\ntools:\n  dir: %s\n  cache_dir: off\n", tools), nil)
	if errs := a.Catalog().LoadTools(t.Context()); len(errs) != 0 {
		t.Fatal(errs)
	}
	st, err := tasks.OpenFile(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a.StartTasks(st, TaskOptions{})
	call := func(name string) (*tool.Result, tasks.Task, error) {
		return a.CallAsTask(t.Context(), "local:cli", mcpserver.Call{Pass: mcpserver.LocalPass(), Name: name,
			Arguments: json.RawMessage(`{}`), Observer: nopObserver{}}, nil)
	}
	const refusal = "tool spin does not run as a task (its descriptor's execution.taskSupport is forbidden): call it without a task, or set tools.tasks.spin: optional"
	res, final, err := call("spin")
	if err != nil || res == nil || !res.IsError || res.Error.Kind != tool.KindDenied || res.Error.Message != refusal {
		t.Fatalf("a refused task call: %+v, %v", res, err)
	}
	if final.Status != tasks.Completed || !strings.Contains(string(final.Result), `"isError":true`) || !strings.Contains(string(final.Result), "does not run as a task") {
		t.Errorf("the refused call's task: %s %q %s", final.Status, final.StatusMessage, final.Result)
	}
	res, final, err = call("nope")
	if err != nil || res != nil || final.Status != tasks.Failed || final.StatusMessage != `not_found: no tool named "nope"` {
		t.Errorf("a task call of an unknown tool: %+v, %+v, %v", res, final, err)
	}
}

// TestTaskAwaitAnswered: AwaitAnswered (what a 2025-11-25 tasks/result
// stream watches its question with) returns as soon as the key leaves the
// record's outstanding set, on this replica's doorbells alone (the poll is
// an hour): answered by Respond while another request still waits, and
// given up by the call (its client_wait: the record is working again).
func TestTaskAwaitAnswered(t *testing.T) {
	r := replica(t, t.TempDir(), TaskOptions{Replica: "a", PollInterval: time.Hour})
	parked := make(chan struct{}, 4)
	r.awaitParked = func(string) { parked <- struct{}{} }
	giveUp := make(chan struct{})
	task, err := r.Start(context.Background(), mcpserver.TaskStart{Owner: "o", Tool: "asker",
		Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			wait, stop := context.WithCancel(ctx)
			defer stop()
			go func() {
				select {
				case <-giveUp:
					stop()
				case <-wait.Done():
				}
			}()
			_, err := link.Ask(wait, []tasks.InputRequest{{Key: "a", Method: "elicitation/create"}, {Key: "b", Method: "elicitation/create"}})
			<-ctx.Done() // until the test cancels it
			return nil, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	untilAsked(t, r, "o", task.ID, "a@1")
	await := func(key string) <-chan tasks.Task {
		out := make(chan tasks.Task, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got, err := r.AwaitAnswered(ctx, "o", task.ID, key)
			if err != nil {
				t.Errorf("AwaitAnswered(%s): %v", key, err)
			}
			out <- got
		}()
		return out
	}
	answered := await("a@1")
	<-parked
	if _, err := r.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"a@1": json.RawMessage(`{"action":"decline"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := <-answered; got.Status != tasks.InputRequired || len(got.Outstanding()) != 1 || got.Outstanding()[0].Key != "b@1" {
		t.Errorf("after a@1 was answered: %+v", got)
	}
	gaveUp := await("b@1")
	<-parked
	close(giveUp)
	if got := <-gaveUp; got.Status != tasks.Working || got.InputRequests != nil {
		t.Errorf("after the call gave the round up: %+v", got)
	}
	r.Cancel(context.Background(), "o", task.ID)
}

// TestTaskAwaitAnsweredAcrossReplicas: a question of a task running on
// replica a, answered on replica b, ends a's wait for it (a's stream then
// asks the next): the answer rings no doorbell on a, so a's wait polls
// the record for a local task too. Without the poll the wait lasted
// until its context ended and the round's other question was never asked.
func TestTaskAwaitAnsweredAcrossReplicas(t *testing.T) {
	dir := t.TempDir()
	a := replica(t, dir, TaskOptions{Replica: "a", PollInterval: time.Millisecond})
	b := replica(t, dir, TaskOptions{Replica: "b", PollInterval: time.Millisecond})
	task, err := a.Start(context.Background(), mcpserver.TaskStart{Owner: "o", Tool: "asker",
		Run: func(ctx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			_, err := link.Ask(ctx, []tasks.InputRequest{{Key: "a", Method: "elicitation/create"}, {Key: "b", Method: "elicitation/create"}})
			<-ctx.Done() // until the test cancels it
			return nil, err
		}})
	if err != nil {
		t.Fatal(err)
	}
	untilAsked(t, a, "o", task.ID, "a@1")
	parked := make(chan struct{}, 1)
	a.awaitParked = func(string) {
		select {
		case parked <- struct{}{}:
		default:
		}
	}
	type awaited struct {
		task tasks.Task
		err  error
	}
	out := make(chan awaited, 1)
	go func() {
		// No deadline of the test's own: a wait that never sees the
		// answer hangs until go test's -timeout, and fails there.
		got, err := a.AwaitAnswered(context.Background(), "o", task.ID, "a@1")
		out <- awaited{got, err}
	}()
	<-parked // a waits, the record read: the answer comes after
	if _, err := b.Respond(context.Background(), "o", task.ID, map[string]json.RawMessage{"a@1": json.RawMessage(`{"action":"decline"}`)}); err != nil {
		t.Fatal(err)
	}
	got := <-out
	if got.err != nil || got.task.Status != tasks.InputRequired || len(got.task.Outstanding()) != 1 || got.task.Outstanding()[0].Key != "b@1" {
		t.Errorf("a's wait for a@1 answered on b: %+v, %v", got.task, got.err)
	}
	a.Cancel(context.Background(), "o", task.ID)
}
