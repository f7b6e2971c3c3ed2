package tasks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/warden-run/warden/internal/limits"
)

// The rules both stores apply, in one place, so that the file store and
// PostgreSQL answer the same requests with the same errors and texts.

// LeaseLapsed is the status message of a task Sweep ends Failed.
const LeaseLapsed = "its server stopped (lease expired)"

// DefaultListLimit is the page size of a List given no positive limit.
const DefaultListLimit = 100

// MaxListLimit bounds a List page whatever its limit.
const MaxListLimit = 1000

// MaxStatusMessage bounds a stored status message (a guest's progress
// line, a failure's reason); a longer one is cut, at a character's start.
const MaxStatusMessage = 16 << 10

// maxField bounds each of a task's identity fields (Owner, Tool, Replica),
// so that a record's header stays far below what the file store reads.
const maxField = 16 << 10

// clip is msg as stored: valid UTF-8 (each invalid byte run becomes
// U+FFFD), without NUL bytes, cut to MaxStatusMessage bytes at a
// character's start. A message comes from a guest's progress line: the
// stores keep text (PostgreSQL refuses NUL and invalid UTF-8 in text, the
// file store's JSON would change invalid bytes), so it is made text here
// rather than failing the update that carries it, a task's final one say.
func clip(msg string) string {
	msg = strings.ReplaceAll(strings.ToValidUTF8(msg, "\uFFFD"), "\x00", "")
	if len(msg) <= MaxStatusMessage {
		return msg
	}
	cut := MaxStatusMessage - len("…")
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}

// invalidError is a task or change the rules refuse: an error of the
// request, which every store returns as it is.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// textField reports whether an identity field (Owner, Tool, Replica) is
// one both stores keep exactly: valid UTF-8 without NUL. Unlike a message,
// such a field is not repaired but refused: an owner changed on the way in
// would no longer be the principal that reads the task back.
func textField(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

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
		return Task{}, invalidf("create task: no owner")
	}
	if t.TTL <= 0 {
		return Task{}, invalidf("create task: TTL %v is not positive", t.TTL)
	}
	if len(t.Owner) > maxField || len(t.Tool) > maxField || len(t.Replica) > maxField {
		return Task{}, invalidf("create task: an owner, tool or replica name longer than %d bytes", maxField)
	}
	if !textField(t.Owner) || !textField(t.Tool) || !textField(t.Replica) {
		return Task{}, invalidf("create task: an owner, tool or replica name that is not UTF-8 text (invalid UTF-8 or a NUL byte)")
	}
	if err := checkResult(t.Result, b); err != nil {
		return Task{}, err
	}
	t.StatusMessage = clip(t.StatusMessage)
	if t.Created.IsZero() {
		t.Created = now
	}
	t.Status = Working
	t.Created, t.Updated = stamp(t.Created), stamp(t.Created)
	t.LeaseUntil = stamp(t.LeaseUntil)
	t.CancelRequested = false
	t.Result = bytes.Clone(t.Result)
	t.InputRequests, t.InputResponses = nil, nil
	return t, nil
}

// counts are what a Create is bounded by: the owner's and the store's
// records, unfinished and in all.
type counts struct {
	mine, total               int // unfinished
	mineRecords, totalRecords int // any status
}

// add counts t for a Create by owner.
func (c *counts) add(t *Task, owner string) {
	c.totalRecords++
	if t.Owner == owner {
		c.mineRecords++
	}
	if !t.Status.Terminal() {
		c.total++
		if t.Owner == owner {
			c.mine++
		}
	}
}

// checkCount refuses a Create that would pass b, given c.
func checkCount(c counts, b Bounds) error {
	if b.PerOwner > 0 && c.mine >= b.PerOwner {
		return fmt.Errorf("%w: this client has %d, the most it may have", ErrTooMany, c.mine)
	}
	if b.Total > 0 && c.total >= b.Total {
		return fmt.Errorf("%w: the server has %d, the most it may have", ErrTooMany, c.total)
	}
	if b.RecordsPerOwner > 0 && c.mineRecords >= b.RecordsPerOwner {
		return &tooManyRecords{fmt.Sprintf("too many task records: this client keeps %d, finished or not, the most it may (tasks.max_records_per_client); each is removed at its TTL", c.mineRecords)}
	}
	if b.Records > 0 && c.totalRecords >= b.Records {
		return &tooManyRecords{fmt.Sprintf("too many task records: the server keeps %d, finished or not, the most it may (tasks.max_records); each is removed at its TTL", c.totalRecords)}
	}
	return nil
}

// tooManyRecords is ErrTooMany for a records bound, with its own text.
type tooManyRecords struct{ msg string }

func (e *tooManyRecords) Error() string        { return e.msg }
func (e *tooManyRecords) Is(target error) bool { return target == ErrTooMany }

// checkResult refuses a result past b.ResultBytes, and one that is not
// JSON: a result is a CallToolResult, and `warden tasks list --json` and
// every protocol answer embed it as JSON.
func checkResult(result []byte, b Bounds) error {
	limit := limits.MaxTaskResult // what a store reads back of a result
	if b.ResultBytes > 0 {
		limit = min(b.ResultBytes, limit)
	}
	if len(result) > limit {
		return fmt.Errorf("%w: %d bytes, more than the %d a task keeps", ErrResultTooLarge, len(result), limit)
	}
	if len(result) > 0 && !json.Valid(result) {
		return invalidf("task result: not JSON")
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
		return old, invalidf("update task: %q is not a task status", t.Status)
	}
	if t.TTL <= 0 {
		return old, invalidf("update task: TTL %v is not positive", t.TTL)
	}
	if len(t.Replica) > maxField {
		return old, invalidf("update task: a replica name longer than %d bytes", maxField)
	}
	if !textField(t.Replica) {
		return old, invalidf("update task: a replica name that is not UTF-8 text (invalid UTF-8 or a NUL byte)")
	}
	t.StatusMessage = clip(t.StatusMessage)
	if err := checkResult(t.Result, b); err != nil {
		return old, err
	}
	if err := checkInput(&t); err != nil {
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

// expired reports whether Sweep at now removes t: its TTL ran out before
// now, and it has ended or has no lease. A leased task that still runs is
// never removed by its TTL: the guest runs on, and its record is what the
// bounds count and what the client polls. It ends by finishing or by its
// lease lapsing (lapsed), and the sweep that ends it past its TTL removes
// it as well.
func expired(t *Task, now time.Time) bool {
	return t.Expires().Before(now) && (t.Status.Terminal() || t.LeaseUntil.IsZero())
}

// checkInput applies the rules of a task's outstanding input to t as it is
// to be stored: requests and answers exist only while InputRequired (any
// other status drops them: the call has them, or has ended), an
// InputRequired task has at least one request, keys are unique text, each
// params and answer is JSON, an answer is for a key asked, and a round is
// within MaxInputRequests and MaxInputBytes.
func checkInput(t *Task) error {
	if t.Status != InputRequired {
		t.InputRequests, t.InputResponses = nil, nil
		return nil
	}
	if len(t.InputRequests) == 0 {
		return invalidf("update task: input_required with no input request")
	}
	if len(t.InputRequests) > MaxInputRequests {
		return fmt.Errorf("%w: %d requests at once, more than the %d a task holds", ErrInput, len(t.InputRequests), MaxInputRequests)
	}
	asked := make(map[string]bool, len(t.InputRequests))
	size := 0
	reqs := make([]InputRequest, len(t.InputRequests))
	for i, r := range t.InputRequests {
		if r.Key == "" || len(r.Key) > maxField || !textField(r.Key) || !textField(r.Method) || len(r.Method) > maxField {
			return fmt.Errorf("%w: request %d has an empty or non-text key or method", ErrInput, i)
		}
		if asked[r.Key] {
			return fmt.Errorf("%w: request key %q appears twice", ErrInput, r.Key)
		}
		asked[r.Key] = true
		if len(r.Params) > 0 && !json.Valid(r.Params) {
			return fmt.Errorf("%w: the params of request %q are not JSON", ErrInput, r.Key)
		}
		size += len(r.Key) + len(r.Method) + len(r.Params)
		r.Params = bytes.Clone(r.Params)
		reqs[i] = r
	}
	if size > MaxInputBytes {
		return fmt.Errorf("%w: the requests take %d bytes, more than the %d a task holds", ErrInput, size, MaxInputBytes)
	}
	t.InputRequests = reqs
	if len(t.InputResponses) == 0 {
		t.InputResponses = nil
		return nil
	}
	size = 0
	resp := make(map[string]json.RawMessage, len(t.InputResponses))
	for k, v := range t.InputResponses {
		if !asked[k] {
			return fmt.Errorf("%w: an answer for %q, which is not asked", ErrInput, k)
		}
		if !json.Valid(v) {
			return fmt.Errorf("%w: the answer for %q is not JSON", ErrInput, k)
		}
		size += len(k) + len(v)
		resp[k] = bytes.Clone(v)
	}
	if size > MaxInputBytes {
		return fmt.Errorf("%w: the answers take %d bytes, more than the %d a task holds", ErrInput, size, MaxInputBytes)
	}
	t.InputResponses = resp
	return nil
}
