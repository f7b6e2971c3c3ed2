package runtime

import (
	"context"
	"errors"
	"sync"
	"time"
)

// callDeadline is a call's deadline that can stop running while the call
// waits for something the guest does not control: the client, and the
// person behind it, answering an elicitation. A person may take minutes; the
// tool's timeout bounds the tool's own work, so the wait is bounded by its
// own limit (tools.defaults.client_wait) instead, and the deadline resumes
// with what was left of it.
//
// The holds of one call together stop the deadline for at most that limit:
// a guest that asks again and again, of a client that never answers, would
// otherwise hold its deadline, its instance and its slot for ever, each ask
// ending in its own client_wait. Once the call has been held for the limit
// in all, the deadline runs on through every further wait, so that a call
// ends at most its timeout plus client_wait after it began (see
// RATIONALE.md, "One client_wait per call").
type callDeadline struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	left    time.Duration // what remains, as of started (or while paused)
	started time.Time     // when the deadline last (re)started running
	timer   *time.Timer   // nil while paused or after it fired
	holds   int

	paused   bool          // the timer is stopped for the holds
	pausedAt time.Time     // when it was
	held     time.Duration // time paused so far, over the call
	wait     time.Duration // the limit, as of the last pause
	waitOver *time.Timer   // ends the pause once held reaches the limit
	spent    time.Duration // the limit, once held reached it (0 before)
}

// deadlineCtx reports a deadline that passed as context.DeadlineExceeded,
// like a context.WithTimeout does, so that code which tells a timeout from
// a cancellation by ctx.Err() works unchanged.
type deadlineCtx struct{ context.Context }

func (c deadlineCtx) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}

// newCallDeadline returns a context that ends timeout after now, not
// counting the time spent held (see hold).
func newCallDeadline(parent context.Context, timeout time.Duration) (context.Context, *callDeadline) {
	ctx, cancel := context.WithCancelCause(parent)
	d := &callDeadline{ctx: ctx, cancel: cancel, left: timeout, started: time.Now()}
	d.timer = time.AfterFunc(timeout, d.expire)
	return deadlineCtx{ctx}, d
}

func (d *callDeadline) expire() { d.cancel(context.DeadlineExceeded) }

// hold stops the deadline until the returned release is called, or until
// the call has been held for wait in all (over every hold of the call), when
// it runs on. Holds nest.
func (d *callDeadline) hold(wait time.Duration) (release func()) {
	d.mu.Lock()
	if d.holds == 0 && d.timer != nil && wait > d.held {
		if !d.timer.Stop() {
			d.mu.Unlock()
			return func() {} // it has fired: the call is over
		}
		d.timer = nil
		d.left -= time.Since(d.started)
		d.paused, d.pausedAt, d.wait = true, time.Now(), wait
		d.waitOver = time.AfterFunc(wait-d.held, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.paused {
				d.resumeLocked()
				// All of wait is spent, though the timer may fire a hair
				// early.
				d.held, d.spent = max(d.held, wait), wait
			}
		})
	}
	d.holds++
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.holds > 0 {
				if d.holds--; d.holds == 0 {
					d.resumeLocked()
				}
			}
		})
	}
}

// resumeLocked restarts a paused deadline with what was left of it, unless
// the call is over. d.mu is held.
func (d *callDeadline) resumeLocked() {
	if !d.paused {
		return
	}
	d.paused = false
	d.held += time.Since(d.pausedAt)
	if d.held >= d.wait {
		d.spent = d.wait
	}
	if d.waitOver != nil {
		d.waitOver.Stop()
		d.waitOver = nil
	}
	if d.ctx.Err() == nil {
		d.started = time.Now()
		d.timer = time.AfterFunc(max(d.left, 0), d.expire)
	}
}

// waitSpent returns the client_wait the call used up while held, 0 when it
// did not: a timeout then came after the call had waited that long.
func (d *callDeadline) waitSpent() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spent
}

// stop releases the timer; the context ends (cancelled) unless it already
// had.
func (d *callDeadline) stop() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	if d.waitOver != nil {
		d.waitOver.Stop()
		d.waitOver = nil
	}
	d.holds, d.paused = 0, false
	d.mu.Unlock()
	d.cancel(context.Canceled)
}
