package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warden-run/warden/hostfuncs"
	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/observe"
	"github.com/warden-run/warden/internal/principal"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/mcpserver"
	"github.com/warden-run/warden/tool"
)

// TaskOptions bound and time the MCP tasks an App runs: config tasks.*
// (see docs/tasks.md). Zero fields take the defaults of DefaultTaskOptions.
type TaskOptions struct {
	// MaxPerClient and MaxTotal bound unfinished tasks per owner and in
	// the store (tasks.max_per_client, tasks.max_total).
	MaxPerClient, MaxTotal int
	// MaxRecordsPerClient and MaxRecords bound the records of any status
	// (tasks.max_records_per_client, tasks.max_records).
	MaxRecordsPerClient, MaxRecords int
	// MaxResult bounds one stored result in bytes (tasks.max_result).
	MaxResult int
	// TTL is a task's lifetime when the client asks for none; MaxTTL the
	// most it may ask for (tasks.ttl, tasks.max_ttl).
	TTL, MaxTTL time.Duration
	// PollInterval is the interval between polls the server suggests
	// (tasks.poll_interval).
	PollInterval time.Duration
	// Lease is how long this replica's claim on a running task lasts
	// unrenewed (tasks.lease); it renews every Lease/3 and sweeps the
	// store as often.
	Lease time.Duration
	// Replica names this server process in the records it runs; empty
	// means a fresh id.
	Replica string
}

// DefaultTaskOptions are the task settings config leaves out.
var DefaultTaskOptions = TaskOptions{
	MaxPerClient: limits.DefaultTasksMaxPerClient, MaxTotal: limits.DefaultTasksMaxTotal,
	MaxRecordsPerClient: limits.DefaultTasksMaxRecordsPerClient, MaxRecords: limits.DefaultTasksMaxRecords,
	MaxResult: 1 << 20, TTL: limits.DefaultTaskTTL, MaxTTL: limits.DefaultTaskMaxTTL,
	PollInterval: limits.DefaultTaskPollInterval, Lease: limits.DefaultTaskLease,
}

func (o TaskOptions) withDefaults() TaskOptions {
	d := DefaultTaskOptions
	if o.MaxPerClient <= 0 {
		o.MaxPerClient = d.MaxPerClient
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = d.MaxTotal
	}
	if o.MaxRecordsPerClient <= 0 {
		o.MaxRecordsPerClient = d.MaxRecordsPerClient
	}
	if o.MaxRecords <= 0 {
		o.MaxRecords = d.MaxRecords
	}
	if o.MaxResult <= 0 {
		o.MaxResult = d.MaxResult
	}
	if o.TTL <= 0 {
		o.TTL = d.TTL
	}
	if o.MaxTTL <= 0 {
		o.MaxTTL = max(d.MaxTTL, o.TTL)
	}
	if o.PollInterval <= 0 {
		o.PollInterval = d.PollInterval
	}
	if o.Lease <= 0 {
		o.Lease = d.Lease
	}
	if o.Replica == "" {
		o.Replica = tasks.NewID()
	}
	return o
}

// errShutdown ends the tasks running when their server stops.
var errShutdown = errors.New("its server shut down while it ran")

// errEndedElsewhere stops a task whose record another server ended (its
// lease lapsed there): the record stands, and the call stops.
var errEndedElsewhere = errors.New("its record was ended on another server")

// taskRunner runs MCP tasks (mcpserver.TaskRunner): it creates each
// record durably before the task is announced, runs the call in the
// background under the task's own context, turns its progress into the
// record's status message, stores its result, and makes tasks/cancel
// real: the call's context is cancelled, so the guest stops at its next
// fuel check or host call as at a deadline. A cancel made on another
// replica reaches the runner through the lease renewal (Store.Renew).
// RATIONALE.md, "MCP tasks: the runner".
type taskRunner struct {
	store tasks.Store
	opts  TaskOptions
	log   *slog.Logger
	rec   func() observe.Recorder
	// configDigest, when set, is the digest of the config in force, as
	// warden's own questions carry it (tool.MetaConfig): an answer to one
	// asked under another config is not taken (ask).
	configDigest func() string
	// askStored, set by tests only, runs in ask right after a round's
	// requests are stored, before the call waits for the answers: the
	// point where an answer taken on this replica must not be lost.
	askStored func(id string)
	// awaitParked, set by tests only, runs in AwaitAnswered as it parks
	// on this replica's doorbells, the record read.
	awaitParked func(id string)

	mu      sync.Mutex
	running map[string]*runningTask

	stop context.CancelFunc
	done chan struct{}
}

// runningTask is a task this replica runs.
type runningTask struct {
	id, owner, tool string
	cancel          context.CancelCauseFunc
	done            chan struct{} // closed once the record is final

	mu sync.Mutex
	// status is the newest status line; written is the last one stored.
	status, written string
	// cancelled is set when cancellation was asked for; afterCancel counts
	// the progress reports the call made after that, which a guest
	// stopped at its next fuel check keeps at most one.
	cancelled   bool
	afterCancel int
	wake        chan struct{} // the status writer's doorbell
	// input is the doorbell of a call waiting for answers (ask): a
	// tasks/update taken on this replica rings it; one taken on another
	// is found by polling the record. rounds counts the call's asks.
	input  chan struct{}
	rounds int
	notify func(tasks.Task)
	// leftAs, when set, is the reason of a change out of input_required
	// whose call was stopped while it waited (cancelled, shut down, its
	// own deadline, ended elsewhere): the run audits it with the status it
	// ends the record with, as nothing is written in between.
	leftAs string
	// asked is closed (and replaced) each time the task's questions
	// change here: the call asks, an answer is taken, a round ends. What
	// AwaitInput and AwaitAnswered wait on (each reads the record again).
	asked chan struct{}
}

// ringAsked wakes the waiters on rt's questions (rt.asked).
func (rt *runningTask) ringAsked() {
	rt.mu.Lock()
	close(rt.asked)
	rt.asked = make(chan struct{})
	rt.mu.Unlock()
}

// newTaskRunner starts a runner on store: it sweeps the store now and,
// every Lease/3, renews its tasks' leases and sweeps again.
func newTaskRunner(store tasks.Store, opts TaskOptions, log *slog.Logger, rec func() observe.Recorder) *taskRunner {
	opts = opts.withDefaults()
	ctx, stop := context.WithCancel(context.Background())
	r := &taskRunner{store: store, opts: opts, log: log, rec: rec,
		running: map[string]*runningTask{}, stop: stop, done: make(chan struct{})}
	r.sweep(ctx)
	go r.leases(ctx)
	return r
}

func (r *taskRunner) bounds() tasks.Bounds {
	return tasks.Bounds{PerOwner: r.opts.MaxPerClient, Total: r.opts.MaxTotal,
		RecordsPerOwner: r.opts.MaxRecordsPerClient, Records: r.opts.MaxRecords, ResultBytes: r.opts.MaxResult}
}

// record reports a task event to the recorder, when there is one that
// hears of tasks.
func (r *taskRunner) record(ctx context.Context, e observe.TaskEvent) {
	if r.rec == nil {
		return
	}
	if tr, ok := r.rec().(observe.TaskRecorder); ok {
		tr.Task(ctx, e)
	}
}

// Start implements mcpserver.TaskRunner.
func (r *taskRunner) Start(ctx context.Context, s mcpserver.TaskStart) (tasks.Task, error) {
	ttl := s.TTL
	if ttl <= 0 {
		ttl = r.opts.TTL
	}
	ttl = min(ttl, r.opts.MaxTTL)
	t := tasks.Task{
		ID: tasks.NewID(), Owner: s.Owner, Tool: s.Tool, Status: tasks.Working,
		TTL: ttl, PollInterval: r.opts.PollInterval,
		Replica: r.opts.Replica, LeaseUntil: time.Now().Add(r.opts.Lease),
	}
	if err := r.store.Create(ctx, t, r.bounds()); err != nil {
		if errors.Is(err, tasks.ErrTooMany) {
			return tasks.Task{}, fmt.Errorf("%w (config tasks.max_per_client is %d, tasks.max_total %d); wait for a task to end, or cancel one",
				err, r.opts.MaxPerClient, r.opts.MaxTotal)
		}
		return tasks.Task{}, fmt.Errorf("creating the task: %w", err)
	}
	created, err := r.store.Get(ctx, s.Owner, t.ID)
	if err != nil {
		return tasks.Task{}, fmt.Errorf("reading the created task: %w", err)
	}
	// The call outlives the request that started it, keeping its values
	// (the principal, the trace) but not its cancellation.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	rt := &runningTask{id: t.ID, owner: s.Owner, tool: s.Tool, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1), input: make(chan struct{}, 1), notify: s.Notify, asked: make(chan struct{})}
	r.mu.Lock()
	r.running[t.ID] = rt
	r.mu.Unlock()
	r.record(ctx, observe.TaskEvent{Event: observe.TaskStarted, ID: t.ID, Tool: s.Tool, Status: string(tasks.Working)})
	r.log.Info("task started", "task", t.ID, "tool", s.Tool, "who", principal.From(ctx).Subject)
	go r.run(runCtx, rt, s)
	return created, nil
}

// run makes the task's call and stores how it ended.
func (r *taskRunner) run(ctx context.Context, rt *runningTask, s mcpserver.TaskStart) {
	defer close(rt.done)
	writer := make(chan struct{})
	go r.writeStatus(ctx, rt, s.Notify, writer)
	result, err := s.Run(ctx, mcpserver.TaskLink{
		Status: rt.report,
		Ask: func(ctx context.Context, reqs []tasks.InputRequest) ([]json.RawMessage, error) {
			return r.ask(ctx, rt, reqs)
		},
	})
	close(rt.wake)
	<-writer

	rt.mu.Lock()
	cancelled, after, last := rt.cancelled, rt.afterCancel, rt.status
	rt.mu.Unlock()
	cause := context.Cause(ctx)
	var change func(*tasks.Task)
	switch {
	case cancelled:
		// The count first: a store clips a long message at its end, and
		// the last status is the guest's own text.
		msg := fmt.Sprintf("cancelled on request; %d progress reports after the cancel", after)
		if last != "" {
			msg += "; its last status: " + last
		}
		change = func(t *tasks.Task) { t.Status, t.StatusMessage = tasks.Cancelled, msg }
	case errors.Is(cause, errShutdown):
		change = func(t *tasks.Task) { t.Status, t.StatusMessage = tasks.Failed, errShutdown.Error() }
	case errors.Is(cause, errEndedElsewhere):
		change = func(t *tasks.Task) { t.Status, t.StatusMessage = tasks.Failed, errEndedElsewhere.Error() }
	case err != nil:
		change = func(t *tasks.Task) { t.Status, t.StatusMessage = tasks.Failed, err.Error() }
	default:
		change = func(t *tasks.Task) { t.Status, t.Result = tasks.Completed, result }
	}
	final, uerr := r.store.Update(context.WithoutCancel(ctx), rt.owner, rt.id, r.bounds(), change)
	if errors.Is(uerr, tasks.ErrResultTooLarge) {
		msg := fmt.Sprintf("the result of %d bytes is more than the %d a task keeps (config tasks.max_result)", len(result), r.opts.MaxResult)
		final, uerr = r.store.Update(context.WithoutCancel(ctx), rt.owner, rt.id, r.bounds(),
			func(t *tasks.Task) { t.Status, t.StatusMessage, t.Result = tasks.Failed, msg, nil })
	}
	switch {
	case errors.Is(uerr, tasks.ErrTerminal), errors.Is(uerr, tasks.ErrNotFound):
		// Ended elsewhere (cancelled by a replica that could not reach
		// this one, swept after a stall) or expired: that record stands.
		r.log.Info("task ended elsewhere", "task", rt.id, "status", final.Status)
	case uerr != nil:
		r.log.Error("could not store the end of a task", "task", rt.id, "error", uerr)
	default:
		r.log.Info("task ended", "task", rt.id, "tool", rt.tool, "status", final.Status)
		if s.Notify != nil {
			s.Notify(final)
		}
	}
	r.mu.Lock()
	delete(r.running, rt.id)
	r.mu.Unlock()
	if errors.Is(uerr, tasks.ErrTerminal) && !final.Status.Terminal() {
		if t, err := r.store.Get(context.WithoutCancel(ctx), rt.owner, rt.id); err == nil {
			final = t
		}
	}
	status := final.Status
	if !status.Terminal() {
		status = tasks.Failed
	}
	rt.mu.Lock()
	leftAs := rt.leftAs
	rt.mu.Unlock()
	if leftAs != "" {
		r.record(ctx, observe.TaskEvent{Event: observe.TaskStatus, ID: rt.id, Tool: rt.tool,
			From: string(tasks.InputRequired), Status: string(status), Reason: leftAs})
	}
	r.record(ctx, observe.TaskEvent{Event: observe.TaskEnded, ID: rt.id, Tool: rt.tool, Status: string(status), Reason: final.StatusMessage})
}

// report is the status hook of the task's call: the newest line wins, and
// the writer stores it when it is free.
func (rt *runningTask) report(message string) {
	rt.mu.Lock()
	rt.status = message
	if rt.cancelled {
		rt.afterCancel++
	}
	rt.mu.Unlock()
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// writeStatus stores the task's newest status line, one write at a time,
// until the call returns: a guest reporting progress in a tight loop costs
// the store one write per write it takes, not one per report.
func (r *taskRunner) writeStatus(ctx context.Context, rt *runningTask, notify func(tasks.Task), done chan<- struct{}) {
	defer close(done)
	for range rt.wake {
		rt.mu.Lock()
		msg := rt.status
		same := msg == rt.written
		rt.mu.Unlock()
		if same {
			continue
		}
		t, err := r.store.Update(context.WithoutCancel(ctx), rt.owner, rt.id, r.bounds(),
			func(t *tasks.Task) { t.StatusMessage = msg })
		if err != nil {
			r.log.Debug("task status not stored", "task", rt.id, "error", err)
			continue
		}
		rt.mu.Lock()
		rt.written = msg
		rt.mu.Unlock()
		if notify != nil {
			notify(t)
		}
	}
}

// stopTask cancels a running task's call (cancelled by request).
//
// The mark and the cancel happen under one lock: a report made between
// them (the call not yet told) would count as made after the cancel.
func (rt *runningTask) stopTask() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.cancelled = true
	rt.cancel(context.Canceled)
}

// stopReason says why a wait for answers ended with its context ctx
// other than at tools.defaults.client_wait: "cancelled" on request (here
// or on another replica, seen at a lease renewal), "shutdown" of its
// server, "ended elsewhere" (its record ended on another server),
// "deadline" (the call's own task budget); "" at client_wait (every
// client_wait timer's cause is hostfuncs.ErrClientWait) or any other end
// of the wait alone, when the call goes on without the answers.
func (rt *runningTask) stopReason(ctx context.Context) string {
	rt.mu.Lock()
	cancelled := rt.cancelled
	rt.mu.Unlock()
	cause := context.Cause(ctx)
	switch {
	case cancelled:
		return "cancelled"
	case errors.Is(cause, errShutdown):
		return "shutdown"
	case errors.Is(cause, errEndedElsewhere):
		return "ended elsewhere"
	case errors.Is(cause, hostfuncs.ErrClientWait):
		return ""
	case errors.Is(cause, context.DeadlineExceeded):
		return "deadline"
	}
	return ""
}

func (r *taskRunner) local(id string) *runningTask {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[id]
}

// ask puts a task's call's requests to its client through the record: the
// task is input_required with them (each key minted for this round, so an
// answer is for this round's request alone) until tasks/update has
// answered every one, on this replica or another; then the answers are
// taken, the task is working again, and they are returned in order. The
// guest waits parked in its host call, its state kept. ctx bounds the wait:
// past client_wait the task is working again, without input; a cancel (or
// a shutdown) leaves the record to the run, which ends it at once.
func (r *taskRunner) ask(ctx context.Context, rt *runningTask, reqs []tasks.InputRequest) ([]json.RawMessage, error) {
	rt.mu.Lock()
	rt.rounds++
	round := rt.rounds
	rt.mu.Unlock()
	wire := make([]tasks.InputRequest, len(reqs))
	keys := make([]string, len(reqs))
	for i, q := range reqs {
		q.Key = fmt.Sprintf("%s@%d", q.Key, round)
		wire[i], keys[i] = q, q.Key
	}
	msg := "waiting for the client to answer " + strings.Join(keys, ", ")
	stored := context.WithoutCancel(ctx)
	// A doorbell rung for an earlier round means nothing now. Cleared
	// before this round is stored: a tasks/update taken here once it is
	// stored rings it for this round, and that ring must stay.
	select {
	case <-rt.input:
	default:
	}
	t, err := r.store.Update(stored, rt.owner, rt.id, r.bounds(), func(t *tasks.Task) {
		t.Status, t.InputRequests, t.InputResponses, t.StatusMessage = tasks.InputRequired, wire, nil, msg
	})
	if err != nil {
		return nil, fmt.Errorf("storing the task's input requests: %w", err)
	}
	if r.askStored != nil {
		r.askStored(rt.id)
	}
	rt.ringAsked()
	// Debug: a guest asking in a loop would flood an Info log; the task's
	// status line and its status notifications say the same.
	r.log.Debug("task waits for input", "task", rt.id, "requests", strings.Join(keys, ", "))
	r.record(stored, observe.TaskEvent{Event: observe.TaskStatus, ID: rt.id, Tool: rt.tool,
		From: string(tasks.Working), Status: string(tasks.InputRequired), Requests: countMethods(wire)})
	// However the wait ends, the change out of input_required is audited
	// once, with the status the record holds then.
	why := "ended"
	defer func() {
		if why != "" {
			r.leftInput(stored, rt, why)
		}
		rt.ringAsked() // the round's keys are outstanding no more
	}()
	if rt.notify != nil {
		rt.notify(t)
	}
	poll := time.NewTicker(r.opts.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-rt.input:
		case <-poll.C:
		case <-ctx.Done():
			if stop := rt.stopReason(ctx); stop != "" {
				// Cancelled, shut down, past the call's own deadline,
				// or ended elsewhere: the run ends the record at once
				// (cancelled, failed), which drops the requests, and
				// audits the change with that end; a working status in
				// between would be a state the task never was in.
				rt.mu.Lock()
				rt.leftAs = stop
				rt.mu.Unlock()
				why = ""
				return nil, ctx.Err()
			}
			// Unanswered in time (client_wait): the call goes on without
			// the answers; the record no longer asks.
			why = "unanswered"
			if t, err := r.store.Update(stored, rt.owner, rt.id, r.bounds(), func(t *tasks.Task) {
				if t.Status == tasks.InputRequired {
					t.Status, t.StatusMessage = tasks.Working, "no answer to "+strings.Join(keys, ", ")+" came in time"
				}
			}); err == nil && rt.notify != nil {
				rt.notify(t)
			}
			return nil, ctx.Err()
		}
		t, err := r.store.Get(ctx, rt.owner, rt.id)
		if err != nil {
			if ctx.Err() != nil {
				continue // the select above ends the wait
			}
			r.log.Debug("task input not read", "task", rt.id, "error", err)
			continue
		}
		if len(t.Outstanding()) > 0 {
			continue
		}
		if stale := r.staleQuestions(wire); stale != "" {
			// warden's own question, answered under another config than
			// it was asked under: the answer is not for the call that
			// would go on now.
			why = "config changed"
			if t, err := r.store.Update(stored, rt.owner, rt.id, r.bounds(), func(t *tasks.Task) {
				if t.Status == tasks.InputRequired {
					t.Status, t.StatusMessage = tasks.Working, "config changed while "+stale+" waited"
				}
			}); err == nil && rt.notify != nil {
				rt.notify(t)
			}
			return nil, fmt.Errorf("config changed while %s waited for an answer: the answer was given under the config it was asked under, so it is not taken; call again to be asked under the config in force", stale)
		}
		var answers []json.RawMessage
		t, err = r.store.Update(stored, rt.owner, rt.id, r.bounds(), func(t *tasks.Task) {
			answers = nil
			if t.Status != tasks.InputRequired || len(t.Outstanding()) > 0 {
				return
			}
			for _, q := range wire {
				answers = append(answers, t.InputResponses[q.Key])
			}
			t.Status, t.StatusMessage = tasks.Working, "answered: "+strings.Join(keys, ", ")
		})
		if err != nil {
			return nil, fmt.Errorf("taking the task's answers: %w", err)
		}
		if answers == nil {
			continue
		}
		why = "answered"
		if rt.notify != nil {
			rt.notify(t)
		}
		r.log.Debug("task input answered", "task", rt.id, "requests", strings.Join(keys, ", "))
		return answers, nil
	}
}

// leftInput audits a task's change out of input_required as its call's
// wait ends (why: answered, unanswered, config changed, ended) to the
// status its record holds now, working unless it ended meanwhile (a
// record that cannot be read counts as failed, as an end the runner
// cannot store does). A wait stopped with the call is audited by the run
// (runningTask.leftAs).
func (r *taskRunner) leftInput(ctx context.Context, rt *runningTask, why string) {
	to := tasks.Failed
	if t, err := r.store.Get(ctx, rt.owner, rt.id); err == nil {
		to = t.Status
	}
	r.record(ctx, observe.TaskEvent{Event: observe.TaskStatus, ID: rt.id, Tool: rt.tool,
		From: string(tasks.InputRequired), Status: string(to), Reason: why})
}

// countMethods says how many of reqs ask each method, in asking order
// ("elicitation/create=2,roots/list=1"): what an audit line may tell of
// a task's questions, whose params may hold the person's data.
func countMethods(reqs []tasks.InputRequest) string {
	var order []string
	n := map[string]int{}
	for _, q := range reqs {
		if n[q.Method] == 0 {
			order = append(order, q.Method)
		}
		n[q.Method]++
	}
	parts := make([]string, len(order))
	for i, m := range order {
		parts[i] = fmt.Sprintf("%s=%d", m, n[m])
	}
	return strings.Join(parts, ",")
}

// staleQuestions names the requests of reqs that are warden's own
// questions (a tool.ReservedPrefix key) asked under a config other than
// the one in force, "" when none is.
func (r *taskRunner) staleQuestions(reqs []tasks.InputRequest) string {
	if r.configDigest == nil {
		return ""
	}
	now := r.configDigest()
	var stale []string
	for _, q := range reqs {
		if !strings.HasPrefix(q.Key, tool.ReservedPrefix) {
			continue
		}
		var p struct {
			Meta map[string]any `json:"_meta"`
		}
		json.Unmarshal(q.Params, &p)
		if asked, ok := p.Meta[tool.MetaConfig].(string); ok && asked != now {
			stale = append(stale, strconv.Quote(q.Key))
		}
	}
	return strings.Join(stale, ", ")
}

// Respond implements mcpserver.TaskRunner: the answers are added to the
// record under tasks.Task.Answer's rules, each checked against the request
// it answers in the record being changed (mcpserver.CheckInputResponse),
// and the call waiting for them, when it runs here, is woken. An answer
// refused by the check leaves the record as it was.
func (r *taskRunner) Respond(ctx context.Context, owner, id string, answers map[string]json.RawMessage) (map[string]string, error) {
	var ignored map[string]string
	var refused error
	_, err := r.store.Update(ctx, owner, id, r.bounds(), func(t *tasks.Task) {
		ignored, refused = t.Answer(answers, mcpserver.CheckInputResponse)
	})
	if errors.Is(err, tasks.ErrTerminal) {
		// Ended meanwhile: nothing is taken.
		t, gerr := r.store.Get(ctx, owner, id)
		if gerr != nil {
			return nil, gerr
		}
		return t.Answer(answers, mcpserver.CheckInputResponse)
	}
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	if len(ignored) < len(answers) {
		if rt := r.local(id); rt != nil {
			select {
			case rt.input <- struct{}{}:
			default:
			}
			rt.ringAsked()
		}
	}
	return ignored, nil
}

// Get implements mcpserver.TaskRunner.
func (r *taskRunner) Get(ctx context.Context, owner, id string) (tasks.Task, error) {
	return r.store.Get(ctx, owner, id)
}

// List implements mcpserver.TaskRunner.
func (r *taskRunner) List(ctx context.Context, owner, cursor string) ([]tasks.Task, string, error) {
	return r.store.List(ctx, owner, cursor, tasks.DefaultListLimit)
}

// Cancel implements mcpserver.TaskRunner: the record is marked, the call
// stopped (here at once, on another replica at its next lease renewal),
// and the record returned once it has ended. If the replica running it
// does not end it within a lease, the record is ended cancelled here (the
// replica's own end is then refused as the task has ended).
func (r *taskRunner) Cancel(ctx context.Context, owner, id string) (tasks.Task, error) {
	t, err := r.store.Cancel(ctx, owner, id)
	if err != nil {
		return t, err
	}
	r.record(ctx, observe.TaskEvent{Event: observe.TaskCancel, ID: id, Tool: t.Tool, Status: string(t.Status)})
	if rt := r.local(id); rt != nil {
		rt.stopTask()
		select {
		case <-rt.done:
		case <-ctx.Done():
			return t, ctx.Err()
		}
		return r.store.Get(ctx, owner, id)
	}
	wait, cancel := context.WithTimeout(ctx, r.opts.Lease)
	defer cancel()
	if t, err := r.Await(wait, owner, id); err == nil {
		return t, nil
	}
	t, err = r.store.Update(ctx, owner, id, r.bounds(), func(t *tasks.Task) {
		t.Status, t.StatusMessage = tasks.Cancelled, "cancelled on request; the server running it stops it at its next lease renewal"
	})
	if errors.Is(err, tasks.ErrTerminal) {
		return t, nil // it ended meanwhile
	}
	return t, err
}

// Await implements mcpserver.TaskRunner: a task of this replica is
// awaited on its end alone (one store read before, one after: a client's
// waiting request costs the store nothing while the task runs), another's
// polled at the suggested interval.
func (r *taskRunner) Await(ctx context.Context, owner, id string) (tasks.Task, error) {
	for {
		t, err := r.store.Get(ctx, owner, id)
		if err != nil || t.Status.Terminal() {
			return t, err
		}
		if rt := r.local(id); rt != nil {
			// Its record ends only as the call returns: the run stores
			// the end before closing done (a cancel stops the call; this
			// replica's renewals keep its lease).
			select {
			case <-rt.done:
				continue
			case <-ctx.Done():
				return t, ctx.Err()
			}
		}
		timer := time.NewTimer(r.opts.PollInterval)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return t, ctx.Err()
		}
		timer.Stop()
	}
}

// AwaitInput implements mcpserver.TaskRunner: Await, returning also when
// the task asks for input. A task of this replica is awaited on its asks
// and its end, another's polled.
func (r *taskRunner) AwaitInput(ctx context.Context, owner, id string) (tasks.Task, error) {
	return r.awaitRecord(ctx, owner, id, func(t *tasks.Task) bool {
		return t.Status.Terminal() || len(t.Outstanding()) > 0
	}, nil)
}

// AwaitAnswered implements mcpserver.TaskRunner: a task of this replica
// is awaited on its questions' changes (rt.asked) and its end, another's
// polled.
func (r *taskRunner) AwaitAnswered(ctx context.Context, owner, id, key string) (tasks.Task, error) {
	return r.awaitRecord(ctx, owner, id, func(t *tasks.Task) bool { return !outstanding(t, key) }, r.awaitParked)
}

// awaitRecord reads the task's record until ready says it is what the
// caller waits for: again at each ring of a local task's doorbell
// (rt.asked, rung at each ask and each answer taken here) and at its end,
// and every PollInterval (an answer taken on another replica rings no
// doorbell here). parked, when set, is told each time
// a local wait begins (a test's hook).
func (r *taskRunner) awaitRecord(ctx context.Context, owner, id string, ready func(*tasks.Task) bool, parked func(string)) (tasks.Task, error) {
	for {
		// The doorbell first: a change after the read below rings it.
		var asked <-chan struct{}
		rt := r.local(id)
		if rt != nil {
			rt.mu.Lock()
			asked = rt.asked
			rt.mu.Unlock()
		}
		t, err := r.store.Get(ctx, owner, id)
		if err != nil || ready(&t) {
			return t, err
		}
		// A local task's doorbell rings at what this replica takes; an
		// answer taken on another replica is found by the poll, for a
		// local task too.
		var done <-chan struct{}
		if rt != nil {
			done = rt.done
			if parked != nil {
				parked(id)
			}
		}
		timer := time.NewTimer(r.opts.PollInterval)
		select {
		case <-done:
		case <-asked:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return t, ctx.Err()
		}
		timer.Stop()
	}
}

// outstanding says whether t asks key and waits for its answer.
func outstanding(t *tasks.Task, key string) bool {
	return slices.ContainsFunc(t.Outstanding(), func(q tasks.InputRequest) bool { return q.Key == key })
}

// leases renews the leases of this replica's running tasks every Lease/3,
// stops those whose cancellation was asked for elsewhere (or that ended
// elsewhere), and sweeps the store: a task whose replica died ends failed
// once its lease lapses, and expired records go.
func (r *taskRunner) leases(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(max(r.opts.Lease/3, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.renew(ctx)
		r.sweep(ctx)
	}
}

func (r *taskRunner) renew(ctx context.Context) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.running))
	for id := range r.running {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	stop, err := r.store.Renew(ctx, r.opts.Replica, ids, time.Now().Add(r.opts.Lease))
	if err != nil {
		r.log.Warn("could not renew the leases of running tasks", "tasks", len(ids), "error", err)
		return
	}
	for _, id := range stop {
		rt := r.local(id)
		if rt == nil {
			continue
		}
		if t, err := r.store.Get(ctx, rt.owner, id); errors.Is(err, tasks.ErrNotFound) || err == nil && t.Status.Terminal() {
			// Ended on another server (its lease lapsed there), or its
			// record is gone: that stands; the call stops without a
			// cancel of its own.
			r.log.Info("task stopped: ended on another server", "task", id, "status", t.Status)
			rt.cancel(errEndedElsewhere)
			continue
		}
		r.log.Info("task stopped: cancelled on another server", "task", id)
		rt.stopTask()
	}
}

func (r *taskRunner) sweep(ctx context.Context) {
	failed, removed, err := r.store.Sweep(ctx, time.Now())
	switch {
	case err != nil:
		r.log.Warn("could not sweep the task store", "error", err)
	case failed > 0 || removed > 0:
		r.log.Info("task store swept", "failed_by_lapsed_lease", failed, "expired_removed", removed)
	}
}

// close stops the lease loop and ends the running tasks failed ("its
// server shut down"), waiting for their records at most until ctx ends.
func (r *taskRunner) close(ctx context.Context) error {
	r.stop()
	<-r.done
	r.mu.Lock()
	running := make([]*runningTask, 0, len(r.running))
	for _, rt := range r.running {
		running = append(running, rt)
	}
	r.mu.Unlock()
	for _, rt := range running {
		rt.cancel(errShutdown)
	}
	for _, rt := range running {
		select {
		case <-rt.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return r.store.Close()
}

// StartTasks makes the App run MCP tasks, keeping their records in store
// (which it then owns): ServerOptions offers them to clients from then
// on, and Close ends the running ones. Call it once, before serving.
func (a *App) StartTasks(store tasks.Store, opts TaskOptions) {
	a.taskRunner = newTaskRunner(store, opts, a.log, a.caps.rec.get)
	if d := a.caps.prompts.digests; d != nil {
		a.taskRunner.configDigest = func() string { return d.of(a.Config()) }
	}
}

// Tasks returns the task store StartTasks was given, nil before.
func (a *App) Tasks() tasks.Store {
	if a.taskRunner == nil {
		return nil
	}
	return a.taskRunner.store
}

// ErrNoTasks is CallAsTask's error when StartTasks was not called.
var ErrNoTasks = errors.New("tasks are off: no task store")

// CallAsTask runs c as an MCP task of owner on the App's task store (the
// operator's `warden call --task`): the record is created before started
// hears of it, the call runs with the task budgets (c.Task), its progress
// becomes the record's status line, and the result is stored; the task
// ends as a protocol client's would (a typed refusal at the door completes
// it with an isError result, a crash or an unknown tool fails it). When ctx
// ends first (Ctrl-C), the task is cancelled and its end awaited. It
// returns the call's result (nil when it did not return one) and the
// task's final record.
func (a *App) CallAsTask(ctx context.Context, owner string, c mcpserver.Call, started func(tasks.Task)) (*tool.Result, tasks.Task, error) {
	r := a.taskRunner
	if r == nil {
		return nil, tasks.Task{}, ErrNoTasks
	}
	var res *tool.Result
	t, err := r.Start(ctx, mcpserver.TaskStart{Owner: owner, Tool: c.Name,
		Run: func(runCtx context.Context, link mcpserver.TaskLink) (json.RawMessage, error) {
			call := c
			call.Task, call.Observer = true, mcpserver.StatusObserver(c.Observer, link.Status)
			out, err := a.Call(runCtx, call)
			var te *tool.Error
			switch {
			case err == nil:
			case errors.As(err, &te) && tool.KindOf(err) != tool.KindNotFound && mcpserver.TaskFailure(tool.ErrorResult(te)) == nil:
				// A typed refusal of the door's own (Pass.Admits,
				// CheckTask): a result, as a protocol client's task
				// gets (mcpserver's runTaskCall).
				out = tool.ErrorResult(te)
			default:
				return nil, err
			}
			res = out
			if err := mcpserver.TaskFailure(out); err != nil {
				return nil, err // failed, as a protocol client's task
			}
			return json.Marshal(out)
		}})
	if err != nil {
		return nil, t, err
	}
	if started != nil {
		started(t)
	}
	final, err := r.Await(ctx, owner, t.ID)
	if err != nil && ctx.Err() != nil {
		final, err = r.Cancel(context.WithoutCancel(ctx), owner, t.ID)
		if errors.Is(err, tasks.ErrTerminal) {
			err = nil
		}
	}
	if rt := r.local(t.ID); rt != nil {
		<-rt.done // res is set before the record ends
	}
	return res, final, err
}
