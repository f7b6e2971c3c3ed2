package approvals

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/principal"
)

// Memory is a Broker of one process. Max bounds the questions waiting at
// once (0: limits.DefaultApprovalsMaxPending), MaxPerPrincipal those of one
// Request.Principal (0: limits.DefaultApprovalsMaxPendingPerCaller).
type Memory struct {
	Max, MaxPerPrincipal int

	mu      sync.Mutex
	waiting map[string]*waiter
	subscribers
}

type waiter struct {
	req Request
	ch  chan Decision // buffered 1: Decide never blocks
}

// NewMemory returns an empty Memory broker holding at most max questions.
func NewMemory(max int) *Memory {
	if max <= 0 {
		max = limits.DefaultApprovalsMaxPending
	}
	return &Memory{Max: max, waiting: map[string]*waiter{}}
}

// Ask implements Broker.
func (m *Memory) Ask(ctx context.Context, r Request) (Decision, error) {
	if r.ID == "" {
		r.ID = newID()
	}
	if r.Created.IsZero() {
		r.Created = time.Now()
	}
	w := &waiter{req: r, ch: make(chan Decision, 1)}
	m.mu.Lock()
	if len(m.waiting) >= m.Max {
		m.mu.Unlock()
		return Decision{}, ErrTooMany
	}
	if m.ofPrincipal(r.Principal) >= cmp.Or(m.MaxPerPrincipal, limits.DefaultApprovalsMaxPendingPerCaller) {
		m.mu.Unlock()
		return Decision{}, ErrTooManyOfCaller
	}
	m.waiting[r.ID] = w
	m.notify()
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waiting, r.ID)
		m.notify()
		m.mu.Unlock()
	}()
	var expired <-chan time.Time
	if !r.Deadline.IsZero() {
		t := time.NewTimer(time.Until(r.Deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case d := <-w.ch:
		return d, nil
	case <-expired:
		return m.late(w, ErrExpired)
	case <-ctx.Done():
		return m.late(w, ctx.Err())
	}
}

// ofPrincipal counts the questions of principal waiting now; m.mu held.
func (m *Memory) ofPrincipal(principal string) int {
	n := 0
	for _, w := range m.waiting {
		if w.req.Principal == principal {
			n++
		}
	}
	return n
}

// late ends the wait of w, which ended with err, unless a Decide took it
// first: Decide removes the question and sends its decision under the
// lock, so a question no longer waiting has its decision in w.ch. Without
// this, a Decide that raced the deadline would report success for an
// answer nobody read.
func (m *Memory) late(w *waiter, err error) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, waiting := m.waiting[w.req.ID]; waiting {
		delete(m.waiting, w.req.ID)
		return Decision{}, err
	}
	return <-w.ch, nil
}

// Pending implements Broker.
func (m *Memory) Pending(context.Context) ([]Request, error) {
	m.mu.Lock()
	out := make([]Request, 0, len(m.waiting))
	for _, w := range m.waiting {
		out = append(out, w.req)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Request) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Decide implements Broker.
func (m *Memory) Decide(_ context.Context, id string, d Decision, groups []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.waiting[id]
	if !ok {
		return ErrNotFound
	}
	if !MayDecide(w.req, d.By, groups) {
		return ErrNotYours
	}
	delete(m.waiting, id) // a second Decide finds nothing
	w.ch <- d
	m.notify()
	return nil
}

// SubjectKey and GroupKey are the forms of Request.Approvers, and of a
// decider's identity and groups (Decider): a subject or a group of one
// issuer, quoted, so that a name at one issuer never stands for the same
// name at another and a subject never for a group of the same name.
func SubjectKey(issuer, subject string) string {
	return "subject " + strconv.Quote(subject) + ofIssuer(issuer)
}

// GroupKey: see SubjectKey.
func GroupKey(issuer, group string) string {
	return "group " + strconv.Quote(group) + ofIssuer(issuer)
}

// ofIssuer ends a key: nothing for a person no issuer vouches for (the
// local user of a one-time login link).
func ofIssuer(issuer string) string {
	if issuer == "" {
		return ""
	}
	return " of " + strconv.Quote(issuer)
}

// Decider returns who p is and the groups p belongs to, in the forms
// MayDecide and Decide compare with Request.Approvers.
func Decider(p principal.Principal) (by string, groups []string) {
	groups = make([]string, len(p.Groups))
	for i, g := range p.Groups {
		groups[i] = GroupKey(p.Issuer, g)
	}
	return SubjectKey(p.Issuer, p.Subject), groups
}

// MayDecide reports whether the person by, a member of groups, may answer
// r: anyone when r names no approvers, else only a named subject or a
// member of a named group (all in the forms of SubjectKey and GroupKey).
func MayDecide(r Request, by string, groups []string) bool {
	if len(r.Approvers) == 0 {
		return true
	}
	for _, a := range r.Approvers {
		if a == by || slices.Contains(groups, a) {
			return true
		}
	}
	return false
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
