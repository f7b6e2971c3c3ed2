// Package tasks is the durable record of long-running tool calls (MCP
// tasks): what a task is, the states it moves through, and the Store that
// keeps records where every replica of a server can read them.
//
// The protocol (both MCP generations) lives in mcpserver, the call that a
// task runs in internal/app, and the stores (a file store for one process,
// PostgreSQL for replicas) behind Store. This package holds only what they
// share, so that each can be tested against the same contract.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Status is where a task stands. Completed, Failed and Cancelled are
// terminal: a terminal task never changes again.
type Status string

// The statuses both MCP task revisions define.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is a status a task never leaves.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Task is one record. Owner is the principal key of its creator (see
// OwnerOf); a Store answers a task only to its owner and answers any other
// principal exactly as for an id that does not exist.
type Task struct {
	ID     string `json:"id"`
	Owner  string `json:"owner"`
	Tool   string `json:"tool"`
	Status Status `json:"status"`
	// StatusMessage is the last progress or status line: from the guest's
	// progress import while working, the reason once failed or cancelled.
	StatusMessage string    `json:"statusMessage,omitempty"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	// TTL is how long after Created the record is kept; Expires is
	// Created+TTL, after which the record is removed once the task has
	// ended (a leased task still working is kept until it finishes or its
	// lease lapses: Sweep).
	TTL time.Duration `json:"ttl"`
	// PollInterval is the interval the server suggests between tasks/get.
	PollInterval time.Duration `json:"pollInterval,omitempty"`
	// Result is the tools/call result (a CallToolResult object, which may
	// itself be an isError result) once Completed or Failed by the tool.
	Result json.RawMessage `json:"result,omitempty"`
	// Replica names the server process running the task; LeaseUntil is
	// when its claim lapses unless renewed. A working task whose lease has
	// lapsed is ended Failed by Sweep ("its replica stopped").
	Replica    string    `json:"replica,omitempty"`
	LeaseUntil time.Time `json:"leaseUntil,omitzero"`
	// CancelRequested is set by Cancel; the replica running the task sees
	// it (directly, or at its next lease renewal) and stops the guest.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// InputRequests are the requests the task's call is waiting for the
	// client to answer, while the task is InputRequired (and only then):
	// the client reads them by tasks/get and answers by tasks/update.
	InputRequests []InputRequest `json:"inputRequests,omitempty"`
	// InputResponses are the client's answers to InputRequests received so
	// far, by key, not yet taken by the call: the record is the channel
	// from the replica that took the tasks/update to the one running the
	// call. The call takes them, all at once, when every request of the
	// round is answered, and the task is Working again.
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// InputRequest is one request a task's call put to its client (an
// elicitation, a sampling request, a roots listing), waiting for an answer.
type InputRequest struct {
	// Key names the request; the answer comes back under it.
	Key string `json:"key"`
	// Method is the MCP method (elicitation/create, ...), Params its params.
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Bounds of what a task's outstanding input holds (the rules of every
// store): a call asks a few questions at a time, and an answer is a
// person's form or a model's message, not a payload.
const (
	// MaxInputRequests bounds the requests of one round.
	MaxInputRequests = 16
	// MaxInputBytes bounds the params of one round's requests, together,
	// and so the answers held for it, together.
	MaxInputBytes = 256 << 10
)

// Expires is when the record may be removed.
func (t *Task) Expires() time.Time { return t.Created.Add(t.TTL) }

// Bounds limit what a Store holds. Zero means no bound for that field;
// callers pass the configured bounds (see internal/limits).
type Bounds struct {
	PerOwner    int // unfinished (non-terminal) tasks one owner may hold
	Total       int // unfinished tasks in the store
	ResultBytes int // bytes of one Result
	// RecordsPerOwner and Records bound the records of any status, one
	// owner's and the store's (tasks.max_records_per_client,
	// tasks.max_records): a finished task keeps its record, with its
	// result, until its TTL, so the unfinished counts alone do not bound
	// what a client stores, nor what the file store's Create reads.
	RecordsPerOwner int
	Records         int
}

// Errors a Store returns; callers test them with errors.Is.
var (
	// ErrNotFound: no such task for this owner (also for another owner's).
	ErrNotFound = errors.New("task not found")
	// ErrTooMany: creating the task would pass Bounds.PerOwner or Total
	// (or RecordsPerOwner or Records: that error's text says so, and the
	// config key).
	ErrTooMany = errors.New("too many unfinished tasks")
	// ErrTerminal: the task has already ended; it does not change again.
	ErrTerminal = errors.New("task has already ended")
	// ErrResultTooLarge: the result passes Bounds.ResultBytes.
	ErrResultTooLarge = errors.New("task result too large")
	// ErrInput: a change to a task's input the rules refuse (too many or
	// too large requests or answers, an answer for a key not asked).
	ErrInput = errors.New("task input refused")
)

// Store keeps task records. Every method is safe for concurrent use by
// the goroutines of one process and by other replicas sharing the backend.
// A record is durable when Create returns: a task is never returned to a
// client before it is stored.
type Store interface {
	// Create stores t (Status Working) unless that would pass b.
	Create(ctx context.Context, t Task, b Bounds) error
	// Get returns owner's task id.
	Get(ctx context.Context, owner, id string) (Task, error)
	// List returns owner's tasks, oldest first, at most limit of them after
	// cursor (empty for the first page), and the cursor of the next page
	// (empty when complete). A listed task has no Result (tasks/list
	// carries none; Get returns it), so a page never reads results.
	// The owner OwnerOf gives every stateless unauthenticated HTTP client
	// alike (UnlistedOwner) lists nothing.
	List(ctx context.Context, owner, cursor string, limit int) ([]Task, string, error)
	// Update applies change to owner's task id atomically and returns the
	// result. It refuses with ErrTerminal when the task had ended, and with
	// ErrResultTooLarge when the changed Result passes b.ResultBytes.
	Update(ctx context.Context, owner, id string, b Bounds, change func(*Task)) (Task, error)
	// Cancel marks owner's task id CancelRequested and returns it; a
	// terminal task is returned unchanged with ErrTerminal.
	Cancel(ctx context.Context, owner, id string) (Task, error)
	// Renew extends the lease of replica's working tasks ids to until and
	// returns the ids among them whose cancellation was requested, and
	// those that no longer run on replica (ended, say by Sweep after the
	// replica stalled; removed; unknown; another replica's): the replica
	// stops the guest of every id returned.
	Renew(ctx context.Context, replica string, ids []string, until time.Time) (cancelled []string, err error)
	// Sweep ends Failed every working task whose lease lapsed before now
	// and removes every record that expired before now and has ended (or
	// has no lease): a leased task that runs keeps its record past its
	// TTL. It returns how many of each (a task it ends past its TTL
	// counts in both).
	Sweep(ctx context.Context, now time.Time) (failed, removed int, err error)
	// Close releases the store.
	Close() error
}

// Outstanding returns the requests of t not answered yet, in asking order.
func (t *Task) Outstanding() []InputRequest {
	var out []InputRequest
	for _, r := range t.InputRequests {
		if _, answered := t.InputResponses[r.Key]; !answered {
			out = append(out, r)
		}
	}
	return out
}

// AnswerCheck checks an answer against the request it answers and returns
// it as it is to be kept (a result of the request's method, re-encoded),
// or the error refusing it. The protocol layer knows the methods' result
// shapes (mcpserver.CheckInputResponse); the record only applies them.
type AnswerCheck func(req InputRequest, answer json.RawMessage) (json.RawMessage, error)

// Answer records answers, by key, to t's outstanding requests, and returns
// the keys it did not take, each with the reason. A key is taken only when
// it names a request of t's current round not answered yet: an answer for
// a key never asked, for an earlier round (its keys are not this round's),
// for a request already answered, or to a task not input_required is not
// taken (SEP-2663: a server ignores responses it has no outstanding
// request for). An answer is thereby bound to the one request it was
// given for, and a spent one is never taken again.
//
// Each answer taken is checked by check against the request it answers,
// here, on the record being changed: a caller running Answer inside
// Store.Update checks against the task as it is stored, not against an
// earlier read (a task that started asking meanwhile). When check refuses
// one, Answer returns its error and t is left unchanged: an update is
// taken whole or not at all. check must not be nil.
func (t *Task) Answer(answers map[string]json.RawMessage, check AnswerCheck) (ignored map[string]string, err error) {
	outstanding := outstandingKeys(t)
	taken := make(map[string]json.RawMessage, len(answers))
	for k, v := range answers {
		var why string
		i := slices.IndexFunc(t.InputRequests, func(r InputRequest) bool { return r.Key == k })
		switch {
		case t.Status != InputRequired:
			why = fmt.Sprintf("task %s is %s and asks nothing", t.ID, t.Status)
		case t.InputResponses[k] != nil:
			why = "answered already; an answer is taken once"
		case i < 0:
			why = "not an outstanding request of this task (outstanding: " + outstanding + ")"
		}
		if why != "" {
			if ignored == nil {
				ignored = map[string]string{}
			}
			ignored[k] = why
			continue
		}
		if taken[k], err = check(t.InputRequests[i], v); err != nil {
			return nil, err
		}
	}
	for k, v := range taken {
		if t.InputResponses == nil {
			t.InputResponses = map[string]json.RawMessage{}
		}
		t.InputResponses[k] = v
	}
	return ignored, nil
}

func outstandingKeys(t *Task) string {
	var keys []string
	for _, r := range t.Outstanding() {
		keys = append(keys, strconv.Quote(r.Key))
	}
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}
