// Package taskstest is the contract every tasks.Store keeps, as one test
// suite that each store runs against itself: the file store on a temp
// directory, PostgreSQL on a fresh database. A behaviour the protocol
// relies on is pinned here once, so the stores cannot drift apart.
package taskstest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/warden-run/warden/internal/tasks"
)

// Backend makes a fresh, empty backend for one test and returns how to
// open an instance on it. Each call of the returned function is one more
// instance on the same records: another process on one directory, or
// another replica on one database. The backend closes them at the test's
// end.
type Backend func(t *testing.T) (open func() tasks.Store)

// Base is the time the suite's tasks are created at: Sweep is given times
// relative to it, so no test waits for a clock.
var Base = time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)

// Run runs the contract against backend.
func Run(t *testing.T, backend Backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, open func() tasks.Store)
	}{
		{"CreateGet", testCreateGet},
		{"CreateRefusals", testCreateRefusals},
		{"OwnerIsolation", testOwnerIsolation},
		{"UnlistedOwner", testUnlistedOwner},
		{"TerminalNeverChanges", testTerminalNeverChanges},
		{"UpdateKeepsIdentity", testUpdateKeepsIdentity},
		{"LongFields", testLongFields},
		{"TextFields", testTextFields},
		{"BoundsPerOwner", testBoundsPerOwner},
		{"BoundsTotal", testBoundsTotal},
		{"BoundsRecords", testBoundsRecords},
		{"ListWithoutResults", testListWithoutResults},
		{"ResultNotJSON", testResultNotJSON},
		{"BoundsAcrossInstances", testBoundsAcrossInstances},
		{"ResultTooLarge", testResultTooLarge},
		{"LeaseLapse", testLeaseLapse},
		{"TTLRemoval", testTTLRemoval},
		{"Paging", testPaging},
		{"BadCursor", testBadCursor},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"Replicas", testReplicas},
		{"OneSweeperEnds", testOneSweeperEnds},
		{"Renew", testRenew},
		{"Operator", testOperator},
		{"Input", testInput},
		{"InputBounds", testInputBounds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, backend(t)) })
	}
}

// newTask is a working task of owner created at Base+offset.
func newTask(owner string, offset time.Duration) tasks.Task {
	return tasks.Task{
		ID:           tasks.NewID(),
		Owner:        owner,
		Tool:         "build",
		Created:      Base.Add(offset),
		TTL:          time.Hour,
		PollInterval: time.Second,
		Replica:      "replica-a",
		LeaseUntil:   Base.Add(offset + 30*time.Second),
	}
}

func mustCreate(t *testing.T, s tasks.Store, task tasks.Task, b tasks.Bounds) tasks.Task {
	t.Helper()
	if err := s.Create(t.Context(), task, b); err != nil {
		t.Fatalf("create %s: %v", task.ID, err)
	}
	return task
}

func mustGet(t *testing.T, s tasks.Store, owner, id string) tasks.Task {
	t.Helper()
	got, err := s.Get(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return got
}

// wantErr fails unless err is target with exactly the text want ("" for
// target's own text).
func wantErr(t *testing.T, what string, err, target error, want string) {
	t.Helper()
	if want == "" {
		want = target.Error()
	}
	if !errors.Is(err, target) || err.Error() != want {
		t.Errorf("%s: got error %v, want %q (%v)", what, err, want, target)
	}
}

func testCreateGet(t *testing.T, open func() tasks.Store) {
	s := open()
	in := newTask("oauth:3:iss:alice", 0)
	in.Status = tasks.Completed // Create stores Working whatever it is given
	in.StatusMessage = "starting"
	in.CancelRequested = true // ... and no cancel request
	in.Created = Base.Add(1234567 * time.Nanosecond)
	mustCreate(t, s, in, tasks.Bounds{})
	got := mustGet(t, s, in.Owner, in.ID)
	want := in
	want.Status, want.CancelRequested = tasks.Working, false
	want.Created = Base.Add(1234 * time.Microsecond) // stamped to the microsecond
	want.Updated = want.Created
	if !equal(got, want) {
		t.Fatalf("get after create:\n got %+v\nwant %+v", got, want)
	}
	if got.Created.Location() != time.UTC {
		t.Errorf("created in %v, want UTC", got.Created.Location())
	}
	// A result is kept byte for byte, newlines included.
	result := json.RawMessage("{\"content\": [{\"type\": \"text\", \"text\": \"a\\nb\"}],\n \"isError\": false}\n")
	up, err := s.Update(t.Context(), in.Owner, in.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.Result, t.StatusMessage = tasks.Completed, result, "done"
	})
	if err != nil {
		t.Fatal(err)
	}
	got = mustGet(t, s, in.Owner, in.ID)
	if string(got.Result) != string(result) || got.Status != tasks.Completed || got.StatusMessage != "done" || !equal(got, up) {
		t.Fatalf("after update: %+v (update returned %+v)", got, up)
	}
}

func testCreateRefusals(t *testing.T, open func() tasks.Store) {
	s := open()
	in := newTask("local:p", 0)
	mustCreate(t, s, in, tasks.Bounds{})
	if err := s.Create(t.Context(), in, tasks.Bounds{}); err == nil {
		t.Error("a second create with the same id was accepted")
	}
	bad := newTask("local:p", 0)
	bad.ID = strings.ToUpper(bad.ID)
	if err := s.Create(t.Context(), bad, tasks.Bounds{}); !errors.Is(err, tasks.ErrBadID) {
		t.Errorf("create with id %q: %v, want ErrBadID", bad.ID, err)
	}
	noOwner := newTask("", 0)
	if err := s.Create(t.Context(), noOwner, tasks.Bounds{}); err == nil {
		t.Error("a task without an owner was accepted")
	}
	noTTL := newTask("local:p", 0)
	noTTL.TTL = 0
	if err := s.Create(t.Context(), noTTL, tasks.Bounds{}); err == nil {
		t.Error("a task without a TTL was accepted")
	}
	page, _, err := s.List(t.Context(), "local:p", "", 0)
	if err != nil || len(page) != 1 {
		t.Errorf("list after refused creates: %d tasks, %v; want the first only", len(page), err)
	}
}

func testOwnerIsolation(t *testing.T, open func() tasks.Store) {
	s := open()
	const alice, mallory = "oauth:3:iss:alice", "oauth:3:iss:mallory"
	task := mustCreate(t, s, newTask(alice, 0), tasks.Bounds{})
	unknown := tasks.NewID()
	_, unknownErr := s.Get(t.Context(), mallory, unknown)
	wantErr(t, "get of an unknown id", unknownErr, tasks.ErrNotFound, "")
	// Another owner gets exactly the answer of an id that does not exist.
	_, err := s.Get(t.Context(), mallory, task.ID)
	wantErr(t, "another owner's get", err, tasks.ErrNotFound, unknownErr.Error())
	_, err = s.Update(t.Context(), mallory, task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status = tasks.Completed })
	wantErr(t, "another owner's update", err, tasks.ErrNotFound, unknownErr.Error())
	_, err = s.Update(t.Context(), mallory, unknown, tasks.Bounds{}, func(t *tasks.Task) { t.Status = tasks.Completed })
	wantErr(t, "update of an unknown id", err, tasks.ErrNotFound, unknownErr.Error())
	_, err = s.Cancel(t.Context(), mallory, task.ID)
	wantErr(t, "another owner's cancel", err, tasks.ErrNotFound, unknownErr.Error())
	_, err = s.Cancel(t.Context(), mallory, unknown)
	wantErr(t, "cancel of an unknown id", err, tasks.ErrNotFound, unknownErr.Error())
	// Text that is no id at all reaches no record, and answers the same.
	for _, id := range []string{"", "../" + task.ID, task.ID + ".task", strings.ToUpper(task.ID), "%", task.ID[:31]} {
		_, err := s.Get(t.Context(), alice, id)
		wantErr(t, fmt.Sprintf("get %q", id), err, tasks.ErrNotFound, unknownErr.Error())
	}
	page, next, err := s.List(t.Context(), mallory, "", 0)
	if err != nil || len(page) != 0 || next != "" {
		t.Errorf("another owner's list: %v, %q, %v; want nothing", page, next, err)
	}
	// Nothing changed for the owner.
	got := mustGet(t, s, alice, task.ID)
	if got.Status != tasks.Working || got.CancelRequested {
		t.Errorf("after another owner's attempts: %+v", got)
	}
	// Owner keys are compared exactly: a prefix is another owner.
	if _, err := s.Get(t.Context(), alice[:len(alice)-1], task.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("get by a prefix of the owner: %v", err)
	}
}

// testUnlistedOwner: the owner every stateless unauthenticated HTTP
// client shares lists nothing, so that none learns another's task ids or
// results; each reaches its own task by its id, and the operator sees it.
func testUnlistedOwner(t *testing.T, open func() tasks.Store) {
	s := open()
	task := mustCreate(t, s, newTask(tasks.UnlistedOwner, 0), tasks.Bounds{})
	mustCreate(t, s, newTask(tasks.UnlistedOwner, time.Second), tasks.Bounds{})
	page, next, err := s.List(t.Context(), tasks.UnlistedOwner, "", 0)
	if err != nil || len(page) != 0 || next != "" {
		t.Errorf("list as the unlisted owner: %d tasks, %q, %v; want none", len(page), next, err)
	}
	if got := mustGet(t, s, tasks.UnlistedOwner, task.ID); got.ID != task.ID {
		t.Errorf("get by id: %+v", got)
	}
	if op, ok := s.(tasks.Operator); ok {
		if all, _, err := op.ListAll(t.Context(), "", 0); err != nil || len(all) != 2 {
			t.Errorf("the operator's list: %d tasks, %v; want 2", len(all), err)
		}
	}
}

func testTerminalNeverChanges(t *testing.T, open func() tasks.Store) {
	for _, end := range []tasks.Status{tasks.Completed, tasks.Failed, tasks.Cancelled} {
		t.Run(string(end), func(t *testing.T) {
			s := open()
			task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
			ended, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
				t.Status, t.StatusMessage = end, "the end"
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
				t.Status, t.StatusMessage = tasks.Working, "again"
			})
			wantErr(t, "update of an ended task", err, tasks.ErrTerminal, "")
			if !equal(got, ended) {
				t.Errorf("update of an ended task returned %+v, want it unchanged %+v", got, ended)
			}
			got, err = s.Cancel(t.Context(), "token", task.ID)
			wantErr(t, "cancel of an ended task", err, tasks.ErrTerminal, "")
			if !equal(got, ended) {
				t.Errorf("cancel of an ended task returned %+v, want %+v", got, ended)
			}
			// Long past its lease, within its TTL: Sweep leaves it be.
			if failed, removed, err := s.Sweep(t.Context(), Base.Add(50*time.Minute)); err != nil || failed != 0 || removed != 0 {
				t.Errorf("sweep: %d failed, %d removed, %v; want none", failed, removed, err)
			}
			stop, err := s.Renew(t.Context(), "replica-a", []string{task.ID}, Base.Add(time.Hour))
			if err != nil || !slices.Equal(stop, []string{task.ID}) {
				t.Errorf("renew of an ended task: %v, %v; want it to be stopped", stop, err)
			}
			if got := mustGet(t, s, "token", task.ID); !equal(got, ended) {
				t.Errorf("stored %+v, want unchanged %+v", got, ended)
			}
		})
	}
}

func testUpdateKeepsIdentity(t *testing.T, open func() tasks.Store) {
	s := open()
	task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	if _, err := s.Cancel(t.Context(), "token", task.ID); err != nil {
		t.Fatal(err)
	}
	got, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.ID, t.Owner, t.Tool, t.Created = tasks.NewID(), "other", "other", Base.Add(time.Hour)
		t.CancelRequested = false
		t.StatusMessage = "half way"
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != task.ID || got.Owner != "token" || got.Tool != task.Tool || !got.Created.Equal(task.Created) || !got.CancelRequested || got.StatusMessage != "half way" {
		t.Errorf("update changed the task's identity or its cancel request: %+v", got)
	}
	if stored := mustGet(t, s, "token", task.ID); !equal(stored, got) {
		t.Errorf("stored %+v, update returned %+v", stored, got)
	}
	if _, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status = "paused" }); err == nil {
		t.Error("an unknown status was stored")
	}
}

// testLongFields: a status message past tasks.MaxStatusMessage is cut at
// a character's start, and what is kept reads back whole, however long.
func testLongFields(t *testing.T, open func() tasks.Store) {
	s := open()
	owner := "oauth:3:iss:" + strings.Repeat("s", 8<<10) // a long subject
	task := newTask(owner, 0)
	task.StatusMessage = strings.Repeat("é", 6<<10) // 12 KiB: kept
	mustCreate(t, s, task, tasks.Bounds{})
	if got := mustGet(t, s, owner, task.ID); got.StatusMessage != task.StatusMessage || got.Owner != owner {
		t.Fatalf("a 12 KiB status message and an 8 KiB owner read back as %d and %d bytes", len(got.StatusMessage), len(got.Owner))
	}
	long := strings.Repeat("é", tasks.MaxStatusMessage) // twice the bound
	got, err := s.Update(t.Context(), owner, task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.StatusMessage = long })
	if err != nil {
		t.Fatal(err)
	}
	if len(got.StatusMessage) > tasks.MaxStatusMessage || !strings.HasSuffix(got.StatusMessage, "é…") || !utf8.ValidString(got.StatusMessage) {
		t.Errorf("a %d-byte message was kept as %d bytes ending %q", len(long), len(got.StatusMessage), got.StatusMessage[len(got.StatusMessage)-8:])
	}
	if stored := mustGet(t, s, owner, task.ID); stored.StatusMessage != got.StatusMessage {
		t.Errorf("stored message differs from the one returned")
	}
	huge := newTask("oauth:3:iss:"+strings.Repeat("s", 64<<10), 0)
	if err := s.Create(t.Context(), huge, tasks.Bounds{}); err == nil {
		t.Error("a 64 KiB owner was accepted")
	}
}

// testTextFields: a status message is stored as text (invalid UTF-8 made
// U+FFFD, NUL bytes dropped) rather than failing the update that carries
// it, the final one say; an identity field that is not text is refused,
// the same by both stores.
func testTextFields(t *testing.T, open func() tasks.Store) {
	s := open()
	task := newTask("local:text", 0)
	task.StatusMessage = "a\x00b\xffc"
	mustCreate(t, s, task, tasks.Bounds{})
	if got := mustGet(t, s, task.Owner, task.ID); got.StatusMessage != "ab\uFFFDc" {
		t.Errorf("created with message %q: stored %q, want %q", task.StatusMessage, got.StatusMessage, "ab\uFFFDc")
	}
	if _, err := s.Update(t.Context(), task.Owner, task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.StatusMessage = "50%\x00 \xc3"
	}); err != nil {
		t.Fatalf("a progress line with NUL and invalid UTF-8: %v", err)
	}
	done, err := s.Update(t.Context(), task.Owner, task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.Result = tasks.Completed, json.RawMessage(`{"content":[]}`)
	})
	if err != nil || done.StatusMessage != "50% \uFFFD" {
		t.Fatalf("the final update after it: %q, %v", done.StatusMessage, err)
	}
	if got := mustGet(t, s, task.Owner, task.ID); got.Status != tasks.Completed || got.StatusMessage != "50% \uFFFD" {
		t.Errorf("stored: %s %q", got.Status, got.StatusMessage)
	}

	const refused = "create task: an owner, tool or replica name that is not UTF-8 text (invalid UTF-8 or a NUL byte)"
	for _, bad := range []func(*tasks.Task){
		func(t *tasks.Task) { t.Owner = "o\xff" },
		func(t *tasks.Task) { t.Owner = "o\x00" },
		func(t *tasks.Task) { t.Tool = "t\xff" },
		func(t *tasks.Task) { t.Tool = "t\x00" },
		func(t *tasks.Task) { t.Replica = "r\x00" },
	} {
		in := newTask("local:text", time.Second)
		bad(&in)
		if err := s.Create(t.Context(), in, tasks.Bounds{}); err == nil || err.Error() != refused {
			t.Errorf("create with owner %q tool %q replica %q: %v, want %q", in.Owner, in.Tool, in.Replica, err, refused)
		}
	}
	// Such an owner has no tasks: answered as for any other owner.
	for _, owner := range []string{"o\xff", "o\x00"} {
		if _, err := s.Get(t.Context(), owner, task.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("get as %q: %v, want ErrNotFound", owner, err)
		}
		if page, next, err := s.List(t.Context(), owner, "", 0); err != nil || len(page) != 0 || next != "" {
			t.Errorf("list as %q: %d tasks, %q, %v", owner, len(page), next, err)
		}
		if _, err := s.Cancel(t.Context(), owner, task.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("cancel as %q: %v, want ErrNotFound", owner, err)
		}
	}
	running := mustCreate(t, s, newTask("local:text", 2*time.Second), tasks.Bounds{})
	_, err = s.Update(t.Context(), running.Owner, running.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Replica = "r\xff" })
	if want := "update task: a replica name that is not UTF-8 text (invalid UTF-8 or a NUL byte)"; err == nil || err.Error() != want {
		t.Errorf("update to replica %q: %v, want %q", "r\xff", err, want)
	}
}

func testBoundsPerOwner(t *testing.T, open func() tasks.Store) {
	s := open()
	b := tasks.Bounds{PerOwner: 3}
	var ids []string
	for i := range 3 {
		ids = append(ids, mustCreate(t, s, newTask("local:a", time.Duration(i)), b).ID)
	}
	err := s.Create(t.Context(), newTask("local:a", 9), b)
	wantErr(t, "the 4th task of one owner", err, tasks.ErrTooMany, "too many unfinished tasks: this client has 3, the most it may have")
	mustCreate(t, s, newTask("local:b", 0), b) // another owner's count is its own
	// An ended task no longer counts.
	if _, err := s.Update(t.Context(), "local:a", ids[0], b, func(t *tasks.Task) { t.Status = tasks.Cancelled }); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, newTask("local:a", 10), b)
	err = s.Create(t.Context(), newTask("local:a", 11), b)
	wantErr(t, "the 4th unfinished task after one ended", err, tasks.ErrTooMany, "too many unfinished tasks: this client has 3, the most it may have")
}

func testBoundsTotal(t *testing.T, open func() tasks.Store) {
	s := open()
	b := tasks.Bounds{PerOwner: 10, Total: 4}
	for i := range 4 {
		mustCreate(t, s, newTask("local:"+strconv.Itoa(i%2), time.Duration(i)), b)
	}
	err := s.Create(t.Context(), newTask("local:new", 0), b)
	wantErr(t, "the 5th task in all", err, tasks.ErrTooMany, "too many unfinished tasks: the server has 4, the most it may have")
	// A refused create stored nothing.
	for _, owner := range []string{"local:0", "local:1", "local:new"} {
		page, _, err := s.List(t.Context(), owner, "", 0)
		if want := map[string]int{"local:0": 2, "local:1": 2}[owner]; err != nil || len(page) != want {
			t.Errorf("%s has %d tasks (%v), want %d", owner, len(page), err, want)
		}
	}
}

// testBoundsAcrossInstances: instances creating at once (processes on one
// directory, replicas on one database) count each other's tasks: together
// they never pass the bound.
func testBoundsAcrossInstances(t *testing.T, open func() tasks.Store) {
	const bound = 12
	b := tasks.Bounds{Total: bound}
	var mu sync.Mutex
	created := 0
	var wg sync.WaitGroup
	for i := range 3 {
		s := open()
		for range 2 {
			wg.Go(func() {
				for range bound {
					err := s.Create(t.Context(), newTask("local:"+strconv.Itoa(i), 0), b)
					if errors.Is(err, tasks.ErrTooMany) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					created++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if created != bound {
		t.Errorf("instances creating at once stored %d tasks, want the bound, %d", created, bound)
	}
}

func testResultTooLarge(t *testing.T, open func() tasks.Store) {
	s := open()
	b := tasks.Bounds{ResultBytes: 64}
	task := mustCreate(t, s, newTask("token", 0), b)
	big := json.RawMessage(`"` + strings.Repeat("x", 63) + `"`) // 65 bytes
	got, err := s.Update(t.Context(), "token", task.ID, b, func(t *tasks.Task) { t.Status, t.Result = tasks.Completed, big })
	wantErr(t, "a 65-byte result", err, tasks.ErrResultTooLarge, "task result too large: 65 bytes, more than the 64 a task keeps")
	if got.Status != tasks.Working || got.Result != nil {
		t.Errorf("a refused update returned %+v, want the task unchanged", got)
	}
	if stored := mustGet(t, s, "token", task.ID); stored.Status != tasks.Working || stored.Result != nil {
		t.Errorf("a refused update was stored: %+v", stored)
	}
	fits := json.RawMessage(`"` + strings.Repeat("x", 62) + `"`) // 64 bytes
	if _, err := s.Update(t.Context(), "token", task.ID, b, func(t *tasks.Task) { t.Status, t.Result = tasks.Completed, fits }); err != nil {
		t.Errorf("a 64-byte result: %v", err)
	}
	huge := newTask("token", 0)
	huge.Result = big
	err = s.Create(t.Context(), huge, b)
	wantErr(t, "create with a 65-byte result", err, tasks.ErrResultTooLarge, "task result too large: 65 bytes, more than the 64 a task keeps")
}

// testBoundsRecords: finished tasks count against the records bounds, so
// a client that finishes tasks fast cannot keep more records (and their
// results) than tasks.max_records_per_client, nor all of them together
// more than tasks.max_records; the refusal names the key.
func testBoundsRecords(t *testing.T, open func() tasks.Store) {
	s := open()
	b := tasks.Bounds{PerOwner: 2, Total: 10, RecordsPerOwner: 3, Records: 5}
	finish := func(owner, id string) {
		t.Helper()
		if _, err := s.Update(t.Context(), owner, id, b, func(t *tasks.Task) {
			t.Status, t.Result = tasks.Completed, json.RawMessage(`{"content":[]}`)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		finish("local:a", mustCreate(t, s, newTask("local:a", time.Duration(i)), b).ID)
	}
	err := s.Create(t.Context(), newTask("local:a", 9), b)
	wantErr(t, "a 4th record of one owner, the others finished", err, tasks.ErrTooMany,
		"too many task records: this client keeps 3, finished or not, the most it may (tasks.max_records_per_client); each is removed at its TTL")
	finish("local:b", mustCreate(t, s, newTask("local:b", 0), b).ID)
	mustCreate(t, s, newTask("local:b", 1), b) // 5 records in all now
	err = s.Create(t.Context(), newTask("local:c", 0), b)
	wantErr(t, "a 6th record in all", err, tasks.ErrTooMany,
		"too many task records: the server keeps 5, finished or not, the most it may (tasks.max_records); each is removed at its TTL")
	// Removed at their TTL, the records no longer count.
	if _, removed, err := s.Sweep(t.Context(), Base.Add(2*time.Hour)); err != nil || removed != 5 {
		t.Fatalf("sweep after the TTL: removed %d, %v; want 5", removed, err)
	}
	mustCreate(t, s, newTask("local:a", 2*time.Hour), b)
}

// testListWithoutResults: a listed task carries no result (tasks/list has
// none), so a page never reads results; Get returns it.
func testListWithoutResults(t *testing.T, open func() tasks.Store) {
	s := open()
	task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	result := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("r", 4096) + `"}]}`)
	done, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status, t.Result = tasks.Completed, result })
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := s.List(t.Context(), "token", "", 0)
	if err != nil || len(page) != 1 {
		t.Fatalf("list: %d tasks, %v", len(page), err)
	}
	want := done
	want.Result = nil
	if !equal(page[0], want) || page[0].Result != nil {
		t.Errorf("listed:\n got %+v\nwant %+v (no result)", page[0], want)
	}
	if got := mustGet(t, s, "token", task.ID); string(got.Result) != string(result) {
		t.Errorf("get after list: result of %d bytes, want %d", len(got.Result), len(result))
	}
	if op, ok := s.(tasks.Operator); ok {
		all, _, err := op.ListAll(t.Context(), "", 0)
		if err != nil || len(all) != 1 || all[0].Result != nil {
			t.Errorf("operator list: %+v, %v; want one task without its result", all, err)
		}
	}
}

// testResultNotJSON: a result is a CallToolResult: bytes that are not
// JSON are refused, on create and on update, and nothing is stored.
func testResultNotJSON(t *testing.T, open func() tasks.Store) {
	s := open()
	task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	const want = "task result: not JSON"
	for _, bad := range []string{`{"content":`, "\xff", `{} {}`} {
		_, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status, t.Result = tasks.Completed, json.RawMessage(bad) })
		if err == nil || err.Error() != want {
			t.Errorf("update with result %q: %v, want %q", bad, err, want)
		}
		in := newTask("token", time.Second)
		in.Result = json.RawMessage(bad)
		if err := s.Create(t.Context(), in, tasks.Bounds{}); err == nil || err.Error() != want {
			t.Errorf("create with result %q: %v, want %q", bad, err, want)
		}
	}
	if got := mustGet(t, s, "token", task.ID); got.Status != tasks.Working || got.Result != nil {
		t.Errorf("after refused updates: %+v", got)
	}
}

func testLeaseLapse(t *testing.T, open func() tasks.Store) {
	s := open()
	task := newTask("token", 0) // lease until Base+30s
	mustCreate(t, s, task, tasks.Bounds{})
	waiting := newTask("token", 0)
	mustCreate(t, s, waiting, tasks.Bounds{})
	if _, err := s.Update(t.Context(), "token", waiting.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.InputRequests = tasks.InputRequired, []tasks.InputRequest{{Key: "confirm", Method: "elicitation/create", Params: json.RawMessage(`{}`)}}
	}); err != nil {
		t.Fatal(err)
	}
	unleased := newTask("token", 0)
	unleased.Replica, unleased.LeaseUntil = "", time.Time{}
	mustCreate(t, s, unleased, tasks.Bounds{})
	// At the lease's last instant it still holds.
	if failed, removed, err := s.Sweep(t.Context(), task.LeaseUntil); err != nil || failed != 0 || removed != 0 {
		t.Fatalf("sweep at the lease's end: %d failed, %d removed, %v; want none", failed, removed, err)
	}
	failed, removed, err := s.Sweep(t.Context(), task.LeaseUntil.Add(time.Microsecond))
	if err != nil || failed != 2 || removed != 0 {
		t.Fatalf("sweep past the lease: %d failed, %d removed, %v; want 2 failed", failed, removed, err)
	}
	for _, id := range []string{task.ID, waiting.ID} {
		got := mustGet(t, s, "token", id)
		if got.Status != tasks.Failed || got.StatusMessage != tasks.LeaseLapsed || !got.Updated.Equal(task.LeaseUntil.Add(time.Microsecond)) {
			t.Errorf("after the lease lapsed: %+v", got)
		}
	}
	if got := mustGet(t, s, "token", unleased.ID); got.Status != tasks.Working {
		t.Errorf("a task without a lease was ended: %+v", got)
	}
	if failed, _, _ := s.Sweep(t.Context(), task.LeaseUntil.Add(time.Minute)); failed != 0 {
		t.Errorf("a second sweep failed %d again", failed)
	}
	// The replica, late, cannot complete what Sweep ended.
	_, err = s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status = tasks.Completed })
	wantErr(t, "completing a task swept", err, tasks.ErrTerminal, "")
}

func testTTLRemoval(t *testing.T, open func() tasks.Store) {
	s := open()
	done := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	if _, err := s.Update(t.Context(), "token", done.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status = tasks.Completed }); err != nil {
		t.Fatal(err)
	}
	later := newTask("token", time.Minute)
	later.LeaseUntil = Base.Add(2 * time.Hour)
	mustCreate(t, s, later, tasks.Bounds{})
	if _, removed, err := s.Sweep(t.Context(), done.Expires()); err != nil || removed != 0 {
		t.Fatalf("sweep at the TTL's end: %d removed, %v; want none", removed, err)
	}
	failed, removed, err := s.Sweep(t.Context(), done.Expires().Add(time.Microsecond))
	if err != nil || removed != 1 || failed != 0 {
		t.Fatalf("sweep past the TTL: %d failed, %d removed, %v; want 1 removed", failed, removed, err)
	}
	if _, err := s.Get(t.Context(), "token", done.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("get after removal: %v", err)
	}
	mustGet(t, s, "token", later.ID)
	// A leased task still working past its TTL keeps its record (the
	// guest runs on, and the bounds count it)...
	if failed, removed, err := s.Sweep(t.Context(), later.Expires().Add(time.Microsecond)); err != nil || failed != 0 || removed != 0 {
		t.Errorf("sweep of a working task past its TTL: %d failed, %d removed, %v; want none", failed, removed, err)
	}
	if got := mustGet(t, s, "token", later.ID); got.Status != tasks.Working {
		t.Errorf("a working task past its TTL: %+v", got)
	}
	if stop, err := s.Renew(t.Context(), later.Replica, []string{later.ID}, later.LeaseUntil); err != nil || len(stop) != 0 {
		t.Errorf("renew of a working task past its TTL: %v, %v", stop, err)
	}
	// ...until its lease lapses: the sweep that ends it removes it, and
	// its replica is told to stop at its next renewal.
	if failed, removed, err := s.Sweep(t.Context(), later.LeaseUntil.Add(time.Microsecond)); err != nil || failed != 1 || removed != 1 {
		t.Errorf("sweep past the lease of a task past its TTL: %d failed, %d removed, %v; want 1 and 1", failed, removed, err)
	}
	if stop, err := s.Renew(t.Context(), later.Replica, []string{later.ID}, Base.Add(3*time.Hour)); err != nil || !slices.Equal(stop, []string{later.ID}) {
		t.Errorf("renew of a removed task: %v, %v", stop, err)
	}
	// A task without a lease is removed at its TTL, working or not:
	// nothing else would end it.
	unleased := newTask("token", 0)
	unleased.Replica, unleased.LeaseUntil = "", time.Time{}
	mustCreate(t, s, unleased, tasks.Bounds{})
	if _, removed, _ := s.Sweep(t.Context(), unleased.Expires().Add(time.Microsecond)); removed != 1 {
		t.Errorf("an unleased working task past its TTL: %d removed", removed)
	}
}

func testPaging(t *testing.T, open func() tasks.Store) {
	s := open()
	var want []string
	for i := range 23 {
		// Three tasks share each instant: the id orders them.
		a := newTask("local:a", time.Duration(i/3)*time.Second)
		mustCreate(t, s, a, tasks.Bounds{})
		want = append(want, a.ID)
		if i%4 == 0 {
			mustCreate(t, s, newTask("local:b", time.Duration(i)*time.Second), tasks.Bounds{})
		}
	}
	// Oldest first, then by id.
	byCreated := map[string]int{}
	for i, id := range want {
		byCreated[id] = i / 3
	}
	slices.SortFunc(want, func(x, y string) int {
		if c := byCreated[x] - byCreated[y]; c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	for _, limit := range []int{1, 5, 7, 23, 100} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatalf("limit %d: no end of pages", limit)
			}
			page, next, err := s.List(t.Context(), "local:a", cursor, limit)
			if err != nil {
				t.Fatalf("limit %d, cursor %q: %v", limit, cursor, err)
			}
			if len(page) > limit || len(page) == 0 && next != "" {
				t.Fatalf("limit %d: a page of %d and next %q", limit, len(page), next)
			}
			for _, task := range page {
				if task.Owner != "local:a" {
					t.Fatalf("listed another owner's task %+v", task)
				}
				got = append(got, task.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: listed\n%v\nwant\n%v", limit, got, want)
		}
	}
	// A page's cursor still works after the task it ends at is gone.
	page, next, err := s.List(t.Context(), "local:a", "", 4)
	if err != nil || len(page) != 4 {
		t.Fatal(len(page), err)
	}
	if _, _, err := s.Sweep(t.Context(), Base.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if page, next, err = s.List(t.Context(), "local:a", next, 4); err != nil || len(page) != 0 || next != "" {
		t.Errorf("after every task expired: %d tasks, next %q, %v", len(page), next, err)
	}
}

func testBadCursor(t *testing.T, open func() tasks.Store) {
	s := open()
	mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	for _, c := range []string{"x", "dDEuMC4w", strings.Repeat("A", 200), "%%%"} {
		if _, _, err := s.List(t.Context(), "token", c, 10); !errors.Is(err, tasks.ErrBadCursor) {
			t.Errorf("cursor %q: %v, want ErrBadCursor", c, err)
		}
	}
}

// testConcurrentUpdates: updates from many goroutines, on two instances
// of the backend, all land: none reads a record another is replacing.
func testConcurrentUpdates(t *testing.T, open func() tasks.Store) {
	a, b := open(), open()
	task := mustCreate(t, a, newTask("token", 0), tasks.Bounds{})
	const each = 8
	var wg sync.WaitGroup
	for _, s := range []tasks.Store{a, b} {
		for range each {
			wg.Go(func() {
				_, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
					n, _ := strconv.Atoi(t.StatusMessage)
					t.StatusMessage = strconv.Itoa(n + 1)
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	if got := mustGet(t, b, "token", task.ID); got.StatusMessage != strconv.Itoa(2*each) {
		t.Errorf("after %d concurrent updates the count is %s", 2*each, got.StatusMessage)
	}
}

// testReplicas: two instances on one backend see each other's writes, and
// a cancel sent to one reaches the replica running the task at its next
// renewal.
func testReplicas(t *testing.T, open func() tasks.Store) {
	a, b := open(), open()
	task := newTask("token", 0)
	task.Replica = "replica-a"
	mustCreate(t, a, task, tasks.Bounds{})
	if got := mustGet(t, b, "token", task.ID); got.Tool != task.Tool {
		t.Fatalf("the other replica reads %+v", got)
	}
	if stop, err := a.Renew(t.Context(), "replica-a", []string{task.ID}, Base.Add(time.Minute)); err != nil || len(stop) != 0 {
		t.Fatalf("renew before any cancel: %v, %v", stop, err)
	}
	got, err := b.Cancel(t.Context(), "token", task.ID)
	if err != nil || !got.CancelRequested || got.Status != tasks.Working {
		t.Fatalf("cancel on the other replica: %+v, %v", got, err)
	}
	stop, err := a.Renew(t.Context(), "replica-a", []string{task.ID}, Base.Add(2*time.Minute))
	if err != nil || !slices.Equal(stop, []string{task.ID}) {
		t.Fatalf("renew after a cancel on the other replica: %v, %v; want the task", stop, err)
	}
	ended, err := a.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.StatusMessage = tasks.Cancelled, "cancelled after 3 of 10 steps"
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, b, "token", task.ID); !equal(got, ended) {
		t.Errorf("the other replica reads %+v, want %+v", got, ended)
	}
}

// testOneSweeperEnds: replicas sweeping at once end a lapsed task once.
func testOneSweeperEnds(t *testing.T, open func() tasks.Store) {
	stores := []tasks.Store{open(), open(), open()}
	const n = 5
	for i := range n {
		mustCreate(t, stores[0], newTask("token", time.Duration(i)), tasks.Bounds{})
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for _, s := range stores {
		for range 2 {
			wg.Go(func() {
				failed, _, err := s.Sweep(t.Context(), Base.Add(time.Minute))
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				total += failed
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if total != n {
		t.Errorf("concurrent sweeps ended %d tasks in all, want each of %d once", total, n)
	}
}

func testRenew(t *testing.T, open func() tasks.Store) {
	s := open()
	task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	until := Base.Add(10 * time.Minute)
	// Another replica's renewal neither extends the lease nor claims it.
	stop, err := s.Renew(t.Context(), "replica-b", []string{task.ID}, until)
	if err != nil || !slices.Equal(stop, []string{task.ID}) {
		t.Errorf("renew by another replica: %v, %v; want it told to stop", stop, err)
	}
	if got := mustGet(t, s, "token", task.ID); !got.LeaseUntil.Equal(task.LeaseUntil) {
		t.Errorf("another replica moved the lease to %v", got.LeaseUntil)
	}
	unknown := tasks.NewID()
	stop, err = s.Renew(t.Context(), "replica-a", []string{task.ID, unknown, "not an id"}, until)
	if err != nil || !slices.Equal(stop, []string{unknown, "not an id"}) {
		t.Errorf("renew: %v, %v; want the unknown ids stopped", stop, err)
	}
	if got := mustGet(t, s, "token", task.ID); !got.LeaseUntil.Equal(until) {
		t.Errorf("lease until %v, want %v", got.LeaseUntil, until)
	}
	// Renewed, the task outlives its first lease.
	if failed, _, _ := s.Sweep(t.Context(), until.Add(-time.Second)); failed != 0 {
		t.Errorf("a renewed task was swept")
	}
	if stop, err := s.Renew(t.Context(), "replica-a", nil, until); err != nil || len(stop) != 0 {
		t.Errorf("renew of nothing: %v, %v", stop, err)
	}
}

func testOperator(t *testing.T, open func() tasks.Store) {
	s := open()
	op, ok := s.(tasks.Operator)
	if !ok {
		t.Fatalf("%T is no tasks.Operator", s)
	}
	a := mustCreate(t, s, newTask("local:a", 0), tasks.Bounds{})
	b := mustCreate(t, s, newTask("oauth:1:i:b", time.Second), tasks.Bounds{})
	page, next, err := op.ListAll(t.Context(), "", 1)
	if err != nil || len(page) != 1 || page[0].ID != a.ID || next == "" {
		t.Fatalf("first page of every owner: %v, %q, %v", page, next, err)
	}
	if page, next, err = op.ListAll(t.Context(), next, 1); err != nil || len(page) != 1 || page[0].ID != b.ID || page[0].Owner != b.Owner {
		t.Fatalf("second page: %v, %q, %v", page, next, err)
	}
	if got, err := op.GetAny(t.Context(), b.ID); err != nil || got.Owner != b.Owner {
		t.Errorf("get any: %+v, %v", got, err)
	}
	if got, err := op.CancelAny(t.Context(), b.ID); err != nil || !got.CancelRequested {
		t.Errorf("cancel any: %+v, %v", got, err)
	}
	if _, err := op.GetAny(t.Context(), tasks.NewID()); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("get any of an unknown id: %v", err)
	}
	if got := mustGet(t, s, b.Owner, b.ID); !got.CancelRequested {
		t.Errorf("the owner does not see the operator's cancel: %+v", got)
	}
}

// equal compares tasks as stored: times by instant, results by bytes.
func equal(a, b tasks.Task) bool {
	ta, tb := a, b
	for _, p := range []*tasks.Task{&ta, &tb} {
		p.Created, p.Updated, p.LeaseUntil = p.Created.UTC(), p.Updated.UTC(), p.LeaseUntil.UTC()
		if len(p.Result) == 0 {
			p.Result = nil
		}
	}
	return reflect.DeepEqual(ta, tb)
}

// testInput: a task's outstanding input is stored and read back whole
// (another instance of the store, another replica, reads what one wrote),
// answers are kept by key, and a status other than input_required drops
// both: a task working again, or ended, holds no input.
func testInput(t *testing.T, open func() tasks.Store) {
	s, other := open(), open()
	task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	reqs := []tasks.InputRequest{
		{Key: "first", Method: "elicitation/create", Params: json.RawMessage(`{"message":"First?"}`)},
		{Key: "second", Method: "elicitation/create", Params: json.RawMessage(`{"message":"Second?"}`)},
	}
	if _, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.InputRequests = tasks.InputRequired, reqs
	}); err != nil {
		t.Fatal(err)
	}
	got := mustGet(t, other, "token", task.ID)
	if got.Status != tasks.InputRequired || len(got.InputRequests) != 2 || got.InputRequests[1].Key != "second" ||
		string(got.InputRequests[0].Params) != `{"message":"First?"}` || got.InputResponses != nil {
		t.Fatalf("read back from another instance: %+v", got)
	}
	if _, err := other.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.InputResponses = map[string]json.RawMessage{"first": json.RawMessage(`{"action":"accept"}`)}
	}); err != nil {
		t.Fatal(err)
	}
	got = mustGet(t, s, "token", task.ID)
	if string(got.InputResponses["first"]) != `{"action":"accept"}` || len(got.InputResponses) != 1 || len(got.InputRequests) != 2 {
		t.Fatalf("a partial answer read back: %+v", got)
	}
	// An answer for a key not asked is refused, and changes nothing.
	_, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.InputResponses["third"] = json.RawMessage(`{}`)
	})
	wantErr(t, "an answer not asked for", err, tasks.ErrInput, `task input refused: an answer for "third", which is not asked`)
	if got := mustGet(t, s, "token", task.ID); len(got.InputResponses) != 1 {
		t.Errorf("after a refused answer: %+v", got.InputResponses)
	}
	// Working again: the input goes with the status.
	if got, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status = tasks.Working }); err != nil ||
		got.InputRequests != nil || got.InputResponses != nil {
		t.Fatalf("working again: %+v, %v", got, err)
	}
	if got := mustGet(t, other, "token", task.ID); got.InputRequests != nil || got.InputResponses != nil {
		t.Errorf("working again, read back: %+v", got)
	}
	// Input with no request is not a state a task can be in.
	_, err = s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status = tasks.InputRequired })
	if err == nil || err.Error() != "update task: input_required with no input request" {
		t.Errorf("input_required without requests: %v", err)
	}
}

// testInputBounds: a round's requests and answers are bounded by count and
// bytes, on every store alike.
func testInputBounds(t *testing.T, open func() tasks.Store) {
	s := open()
	task := mustCreate(t, s, newTask("token", 0), tasks.Bounds{})
	many := make([]tasks.InputRequest, tasks.MaxInputRequests+1)
	for i := range many {
		many[i] = tasks.InputRequest{Key: fmt.Sprintf("k%d", i), Method: "elicitation/create"}
	}
	_, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status, t.InputRequests = tasks.InputRequired, many })
	wantErr(t, "too many requests", err, tasks.ErrInput, fmt.Sprintf("task input refused: %d requests at once, more than the %d a task holds", tasks.MaxInputRequests+1, tasks.MaxInputRequests))
	big := json.RawMessage(`"` + strings.Repeat("x", tasks.MaxInputBytes) + `"`)
	_, err = s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.Status, t.InputRequests = tasks.InputRequired, []tasks.InputRequest{{Key: "k", Method: "elicitation/create", Params: big}}
	})
	if !errors.Is(err, tasks.ErrInput) {
		t.Errorf("requests past the bytes bound: %v", err)
	}
	twice := []tasks.InputRequest{{Key: "k", Method: "m"}, {Key: "k", Method: "m"}}
	_, err = s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status, t.InputRequests = tasks.InputRequired, twice })
	wantErr(t, "a key twice", err, tasks.ErrInput, `task input refused: request key "k" appears twice`)
	one := []tasks.InputRequest{{Key: "k", Method: "elicitation/create"}}
	if _, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Status, t.InputRequests = tasks.InputRequired, one }); err != nil {
		t.Fatal(err)
	}
	_, err = s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) {
		t.InputResponses = map[string]json.RawMessage{"k": big}
	})
	if !errors.Is(err, tasks.ErrInput) {
		t.Errorf("an answer past the bytes bound: %v", err)
	}
	if got := mustGet(t, s, "token", task.ID); got.Status != tasks.InputRequired || len(got.InputRequests) != 1 || got.InputResponses != nil {
		t.Errorf("after refused changes: %+v", got)
	}
}
