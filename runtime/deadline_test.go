package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// These tests never assert how long anything took. Where a test needs "the
// deadline would have passed by now", it waits for a reference timer of the
// same length started after the hold, and then checks that the held
// deadline did not end.

// heldDeadline returns a deadline of timeout with one hold taken while its
// timer was still running. On a machine slow enough that the timer fired
// before the hold (the hold is then a no-op, as designed), it starts over
// with a longer timeout; so the result is always a real hold.
func heldDeadline(t *testing.T, timeout time.Duration) (context.Context, *callDeadline, func(), time.Duration) {
	t.Helper()
	for range 20 {
		ctx, d := newCallDeadline(context.Background(), timeout)
		release := d.hold(time.Hour)
		d.mu.Lock()
		held := d.holds == 1 && d.timer == nil
		d.mu.Unlock()
		if held {
			return ctx, d, release, timeout
		}
		d.stop()
		timeout *= 2
	}
	t.Fatal("could not take a hold before the timer fired")
	return nil, nil, nil, 0
}

// passed waits until a timer of length d, started now, has fired.
func passed(d time.Duration) { <-time.After(d) }

func TestDeadlineExpiresAsDeadlineExceeded(t *testing.T) {
	ctx, d := newCallDeadline(context.Background(), time.Millisecond)
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) || ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err() = %v, want context.DeadlineExceeded", ctx.Err())
	}
	if !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		t.Errorf("Cause = %v, want DeadlineExceeded", context.Cause(ctx))
	}
	// A value context over it, as guest.WithState builds, reports the same.
	type key struct{}
	if err := context.WithValue(ctx, key{}, 1).Err(); err != context.DeadlineExceeded {
		t.Errorf("value child Err() = %v, want DeadlineExceeded", err)
	}
	// stop after expiry changes nothing.
	d.stop()
	if ctx.Err() != context.DeadlineExceeded {
		t.Errorf("after stop: Err() = %v, want DeadlineExceeded", ctx.Err())
	}
}

func TestDeadlineStopCancels(t *testing.T) {
	ctx, d := newCallDeadline(context.Background(), time.Hour)
	if ctx.Err() != nil {
		t.Fatalf("fresh deadline: Err() = %v", ctx.Err())
	}
	d.stop()
	select {
	case <-ctx.Done():
	default:
		t.Fatal("stop did not end the context")
	}
	if ctx.Err() != context.Canceled {
		t.Errorf("Err() = %v, want context.Canceled", ctx.Err())
	}
	d.mu.Lock()
	if d.timer != nil {
		t.Error("stop left a timer running")
	}
	d.mu.Unlock()
	d.stop() // idempotent
	if ctx.Err() != context.Canceled {
		t.Errorf("after a second stop: Err() = %v", ctx.Err())
	}
}

func TestDeadlineParentEnds(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, d := newCallDeadline(parent, time.Hour)
	defer d.stop()
	cancel()
	<-ctx.Done()
	if ctx.Err() != context.Canceled {
		t.Errorf("parent cancelled: Err() = %v, want Canceled", ctx.Err())
	}

	// A caller's own deadline is a DeadlineExceeded too, held or not: hold
	// pauses the call's deadline, not the caller's.
	parent2, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	ctx2, d2 := newCallDeadline(parent2, time.Hour)
	defer d2.stop()
	release := d2.hold(time.Hour)
	<-ctx2.Done()
	if ctx2.Err() != context.DeadlineExceeded {
		t.Errorf("parent deadline: Err() = %v, want DeadlineExceeded", ctx2.Err())
	}
	release()
	d2.mu.Lock()
	if d2.timer != nil {
		t.Error("release restarted the timer of a context that had ended")
	}
	d2.mu.Unlock()
}

func TestDeadlineHoldPausesExpiry(t *testing.T) {
	ctx, d, release, timeout := heldDeadline(t, 5*time.Millisecond)
	defer d.stop()
	// Longer than all of the timeout has passed since the hold.
	passed(2 * timeout)
	if err := ctx.Err(); err != nil {
		t.Fatalf("the deadline passed while held: %v", err)
	}
	d.mu.Lock()
	left := d.left
	d.mu.Unlock()
	if left > timeout {
		t.Fatalf("left %v of a %v timeout", left, timeout)
	}
	release()
	// The rest of the deadline runs out after the release.
	<-ctx.Done()
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err() = %v, want DeadlineExceeded", ctx.Err())
	}
}

func TestDeadlineReleaseResumesWithWhatWasLeft(t *testing.T) {
	ctx, d := newCallDeadline(context.Background(), time.Hour)
	defer d.stop()
	release := d.hold(time.Hour)
	d.mu.Lock()
	left, holds, timer := d.left, d.holds, d.timer
	d.mu.Unlock()
	if holds != 1 || timer != nil {
		t.Fatalf("held: holds=%d timer=%v", holds, timer)
	}
	if left <= 0 || left > time.Hour {
		t.Fatalf("left = %v, want in (0, 1h]", left)
	}
	release()
	d.mu.Lock()
	holds, timer = d.holds, d.timer
	d.mu.Unlock()
	if holds != 0 || timer == nil {
		t.Fatalf("released: holds=%d timer=%v, want 0 and a running timer", holds, timer)
	}
	if ctx.Err() != nil {
		t.Fatalf("released with an hour left: Err() = %v", ctx.Err())
	}
	// A second hold takes off what ran meanwhile, never adds.
	release = d.hold(time.Hour)
	d.mu.Lock()
	left2 := d.left
	d.mu.Unlock()
	release()
	if left2 > left {
		t.Errorf("left grew from %v to %v across a hold", left, left2)
	}
}

func TestDeadlineNestedHolds(t *testing.T) {
	ctx, d, outer, timeout := heldDeadline(t, 5*time.Millisecond)
	defer d.stop()
	inner := d.hold(time.Hour)
	passed(2 * timeout)
	inner()
	inner() // a release is idempotent: it must not release the outer hold
	d.mu.Lock()
	holds, timer := d.holds, d.timer
	d.mu.Unlock()
	if holds != 1 || timer != nil {
		t.Fatalf("after the inner release: holds=%d timer=%v, want the outer hold", holds, timer)
	}
	passed(2 * timeout)
	if err := ctx.Err(); err != nil {
		t.Fatalf("the deadline passed while the outer hold was taken: %v", err)
	}
	outer()
	<-ctx.Done()
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err() = %v, want DeadlineExceeded", ctx.Err())
	}
	outer() // after expiry: nothing
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.holds != 0 {
		t.Errorf("holds = %d after every release", d.holds)
	}
}

func TestDeadlineHoldAfterExpiryOrStop(t *testing.T) {
	ctx, d := newCallDeadline(context.Background(), time.Millisecond)
	<-ctx.Done()
	release := d.hold(time.Hour)
	release()
	d.mu.Lock()
	if d.holds != 0 {
		t.Errorf("a hold after expiry counted: holds=%d", d.holds)
	}
	d.mu.Unlock()
	if ctx.Err() != context.DeadlineExceeded {
		t.Errorf("Err() = %v", ctx.Err())
	}
	d.stop()

	ctx, d = newCallDeadline(context.Background(), time.Hour)
	held := d.hold(time.Hour)
	d.stop() // the call ends while it waits
	held()
	after := d.hold(time.Hour)
	after()
	d.mu.Lock()
	timer := d.timer
	d.mu.Unlock()
	if timer != nil {
		t.Error("a release after stop restarted the timer")
	}
	if ctx.Err() != context.Canceled {
		t.Errorf("Err() = %v, want Canceled", ctx.Err())
	}
}

func TestDeadlineConcurrentHolds(t *testing.T) {
	ctx, d, first, _ := heldDeadline(t, 5*time.Millisecond)
	defer d.stop()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				release := d.hold(time.Hour)
				release()
				release()
			}
		})
	}
	wg.Wait()
	// The first hold was taken throughout: nothing can have expired.
	if err := ctx.Err(); err != nil {
		t.Fatalf("expired while held: %v", err)
	}
	d.mu.Lock()
	holds := d.holds
	d.mu.Unlock()
	if holds != 1 {
		t.Fatalf("holds = %d, want 1", holds)
	}
	first()
	<-ctx.Done()
	if ctx.Err() != context.DeadlineExceeded {
		t.Fatalf("Err() = %v", ctx.Err())
	}
}

// A guest that asks again and again, of a client that never answers, must
// not hold its deadline for ever: the holds of one call stop it for at most
// the wait limit in all, and then it runs out even under a hold that is
// never released.
func TestDeadlineHoldsAreBoundedByOneWaitPerCall(t *testing.T) {
	guard, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const wait = time.Millisecond
	_, d := newCallDeadline(context.Background(), time.Hour)
	defer d.stop()
	// Each ask's wait ends (its own client_wait), and the guest asks again.
	for range 8 {
		release := d.hold(wait)
		passed(2 * wait)
		release()
	}
	if got := d.waitSpent(); got != wait {
		t.Fatalf("waitSpent = %v after eight waits of %v, want %v", got, wait, wait)
	}
	// The limit is spent: a further hold leaves the deadline running.
	d.hold(wait)
	d.mu.Lock()
	paused, timer := d.paused, d.timer
	d.mu.Unlock()
	if paused || timer == nil {
		t.Fatalf("a hold past the call's client wait stopped the deadline (paused=%v)", paused)
	}

	// A hold never released: the wait limit ends the pause, and the rest
	// of the deadline runs out. (The timeout is short; if it runs out
	// before the hold is taken, start over with a longer one, so that the
	// hold is a real one.)
	for timeout := time.Millisecond; ; timeout *= 2 {
		if timeout > time.Minute {
			t.Fatal("could not take a hold before the timer fired")
		}
		ctx, d := newCallDeadline(context.Background(), timeout)
		defer d.stop()
		d.hold(wait)
		d.mu.Lock()
		paused := d.paused || d.spent > 0
		d.mu.Unlock()
		if !paused {
			continue
		}
		select {
		case <-ctx.Done():
		case <-guard.Done():
			t.Fatal("a call held by a wait that never ends never reached its deadline")
		}
		if ctx.Err() != context.DeadlineExceeded {
			t.Fatalf("Err() = %v, want DeadlineExceeded", ctx.Err())
		}
		if d.waitSpent() != wait {
			t.Fatalf("waitSpent = %v, want %v", d.waitSpent(), wait)
		}
		return
	}
}
