package tasks

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// The rules both stores apply, in one place, so that the file store and
// PostgreSQL answer the same requests with the same errors and texts.

// LeaseLapsed is the status message of a task Sweep ends Failed.
const LeaseLapsed = "its server stopped (lease expired)"

// DefaultListLimit is the page size of a List given no positive limit.
const DefaultListLimit = 100

// MaxListLimit bounds a List page whatever its limit.
const MaxListLimit = 1000

// stamp is t as a store keeps times: UTC, to the microsecond (PostgreSQL's
// precision), without a monotonic reading, so that a record reads back
// equal from either store and a cursor names a time exactly.
func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// pageLimit is the page size List uses for limit.
func pageLimit(limit int) int {
	if limit <= 0 {
		return DefaultListLimit
	}
	return min(limit, MaxListLimit)
}

// validStatus reports whether s is one of the statuses a task can have.
func validStatus(s Status) bool {
	switch s {
	case Working, InputRequired, Completed, Failed, Cancelled:
		return true
	}
	return false
}

// prepareCreate checks t for Create and returns it as stored: Working,
// its times stamped (Created defaults to now), no cancel request.
func prepareCreate(t Task, now time.Time, b Bounds) (Task, error) {
	if _, err := ParseID(t.ID); err != nil {
		return Task{}, fmt.Errorf("create task: %w", err)
	}
	if t.Owner == "" {
		return Task{}, errors.New("create task: no owner")
	}
	if t.TTL <= 0 {
		return Task{}, fmt.Errorf("create task: TTL %v is not positive", t.TTL)
	}
	if err := checkResult(t.Result, b); err != nil {
		return Task{}, err
	}
	if t.Created.IsZero() {
		t.Created = now
	}
	t.Status = Working
	t.Created, t.Updated = stamp(t.Created), stamp(t.Created)
	t.LeaseUntil = stamp(t.LeaseUntil)
	t.CancelRequested = false
	t.Result = bytes.Clone(t.Result)
	return t, nil
}

// checkCount refuses a Create that would pass b, given the unfinished
// tasks the owner and the store hold.
func checkCount(owner, total int, b Bounds) error {
	if b.PerOwner > 0 && owner >= b.PerOwner {
		return fmt.Errorf("%w: this client has %d, the most it may have", ErrTooMany, owner)
	}
	if b.Total > 0 && total >= b.Total {
		return fmt.Errorf("%w: the server has %d, the most it may have", ErrTooMany, total)
	}
	return nil
}

// checkResult refuses a result past b.ResultBytes.
func checkResult(result []byte, b Bounds) error {
	if b.ResultBytes > 0 && len(result) > b.ResultBytes {
		return fmt.Errorf("%w: %d bytes, more than the %d a task keeps", ErrResultTooLarge, len(result), b.ResultBytes)
	}
	return nil
}

// applyUpdate runs change on a copy of old and returns the task as it is
// to be stored, or old and the reason it may not change. A task's ID,
// Owner, Tool and Created are its identity: change cannot alter them. A
// cancel request, once made, stays made.
func applyUpdate(old Task, now time.Time, b Bounds, change func(*Task)) (Task, error) {
	if old.Status.Terminal() {
		return old, ErrTerminal
	}
	t := old
	t.Result = bytes.Clone(old.Result)
	change(&t)
	t.ID, t.Owner, t.Tool, t.Created = old.ID, old.Owner, old.Tool, old.Created
	t.CancelRequested = t.CancelRequested || old.CancelRequested
	if !validStatus(t.Status) {
		return old, fmt.Errorf("update task: %q is not a task status", t.Status)
	}
	if t.TTL <= 0 {
		return old, fmt.Errorf("update task: TTL %v is not positive", t.TTL)
	}
	if err := checkResult(t.Result, b); err != nil {
		return old, err
	}
	t.Updated = stamp(now)
	t.LeaseUntil = stamp(t.LeaseUntil)
	return t, nil
}

// lapsed reports whether Sweep at now ends t Failed: it is unfinished and
// its lease ran out before now.
func lapsed(t *Task, now time.Time) bool {
	return !t.Status.Terminal() && !t.LeaseUntil.IsZero() && t.LeaseUntil.Before(now)
}

// expired reports whether Sweep at now removes t.
func expired(t *Task, now time.Time) bool { return t.Expires().Before(now) }
