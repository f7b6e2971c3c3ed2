// Package approvals holds the questions a call puts to a person when its
// client cannot show them (no elicitation): a gate's confirmation or a
// permission prompt waits here, bounded by the tool's client_wait, until a
// person answers in the console (or the wait ends, which refuses).
//
// The gate and prompt paths (internal/app) Ask and wait; the console lists
// Pending and Decides. A Broker shared by replicas (PostgreSQL) lets a
// person approve on any replica a call waiting on another.
package approvals

import (
	"context"
	"errors"
	"time"
)

// Kind says what is asked.
type Kind string

const (
	// Gate is a tools.gates confirm: may this call run?
	Gate Kind = "gate"
	// Permission is a permission prompt: may the tool have this grant?
	Permission Kind = "permission"
)

// Request is one question. Everything a person needs to decide is in it:
// the console shows these fields and nothing it would have to look up.
type Request struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Tool   string `json:"tool"`
	Module string `json:"module"`
	// Digest is the module's sha256 digest, as `warden tools` shows it.
	Digest string `json:"digest"`
	// Arguments are the call's arguments as shown to the person
	// (bounded and terminal-safe, as the elicitation message shows them).
	Arguments string `json:"arguments"`
	// Question is the text the elicitation would have shown.
	Question string `json:"question"`
	// Grant is exactly the config.yaml change an approval writes for a
	// Permission (a diff), empty for a Gate.
	Grant string `json:"grant,omitempty"`
	// Principal is who made the call (principal key); Approvers, when not
	// empty, are the OAuth groups or subjects allowed to decide.
	Principal string    `json:"principal"`
	Approvers []string  `json:"approvers,omitempty"`
	Created   time.Time `json:"created"`
	Deadline  time.Time `json:"deadline"`
}

// Decision is a person's answer.
type Decision struct {
	Approved bool `json:"approved"`
	// By is the principal key of the person who decided.
	By string `json:"by"`
	// Persist, for a Permission, also writes Grant to config.yaml
	// ("always"); otherwise the grant holds for this call only.
	Persist bool      `json:"persist,omitempty"`
	At      time.Time `json:"at"`
}

// Errors of a Broker.
var (
	ErrNotFound = errors.New("approval not found or already decided")
	ErrExpired  = errors.New("nobody answered before the wait ended")
	ErrTooMany  = errors.New("too many questions are waiting")
	// ErrTooManyOfCaller: the caller (Request.Principal) already has its
	// bound of questions waiting.
	ErrTooManyOfCaller = errors.New("too many questions of this caller are waiting")
	ErrNotYours        = errors.New("not among this request's approvers")
	// ErrUnavailable is wrapped by every failure of a shared backend (a
	// database that cannot be reached): the question could not be stored
	// or its answer read, so the call is refused, never let through.
	ErrUnavailable = errors.New("approvals backend unavailable")
)

// Broker keeps pending questions. Safe for concurrent use.
type Broker interface {
	// Ask stores r (its ID filled in when empty) and waits until a person
	// decides; it refuses at once with ErrTooMany when the broker's bound
	// of questions wait, ErrTooManyOfCaller when r.Principal's do. It waits
	// until a person decides, r.Deadline passes (ErrExpired) or ctx ends
	// (ctx.Err()).
	// The question is removed when Ask returns. A decision that lands as
	// the deadline passes is either returned or refused to its Decide
	// (ErrNotFound), never both lost and reported as taken.
	Ask(ctx context.Context, r Request) (Decision, error)
	// Pending lists the questions waiting now, oldest first.
	Pending(ctx context.Context) ([]Request, error)
	// Decide answers question id. It fails with ErrNotFound when nothing
	// waits under id, ErrNotYours when d.By may not decide it.
	Decide(ctx context.Context, id string, d Decision, groups []string) error
	// Subscribe returns a channel that receives a value whenever the
	// pending set changes (a coalescing notification for live pages);
	// cancel stops it.
	Subscribe() (changes <-chan struct{}, cancel func())
}
