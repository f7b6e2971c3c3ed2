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
type callDeadline struct {
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	left    time.Duration // what remains, as of started (or while held)
	started time.Time     // when the deadline last (re)started running
	timer   *time.Timer   // nil while held or after it fired
	holds   int
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

// hold stops the deadline until the returned release is called. Holds nest.
func (d *callDeadline) hold() (release func()) {
	d.mu.Lock()
	if d.holds == 0 && d.timer != nil {
		if !d.timer.Stop() {
			d.mu.Unlock()
			return func() {} // it has fired: the call is over
		}
		d.timer = nil
		d.left -= time.Since(d.started)
	}
	d.holds++
	d.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.holds--; d.holds == 0 && d.ctx.Err() == nil {
				d.started = time.Now()
				d.timer = time.AfterFunc(max(d.left, 0), d.expire)
			}
		})
	}
}

// stop releases the timer; the context ends (cancelled) unless it already
// had.
func (d *callDeadline) stop() {
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.holds = 0
	d.mu.Unlock()
	d.cancel(context.Canceled)
}
