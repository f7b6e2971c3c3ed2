package tasks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/internal/tasks/taskstest"
)

// TestFileStoreContract: the file store keeps the Store contract; each
// instance opened on one directory stands for another process.
func TestFileStoreContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) func() tasks.Store {
		dir := t.TempDir()
		return func() tasks.Store {
			s, err := tasks.OpenFile(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// The child process of TestFileStoreTwoProcesses: with
// WARDEN_TASKS_CHILD_DIR set, it creates tasks in that directory until the
// bound refuses one, then updates the shared task, and prints how many it
// created.
func TestFileStoreChild(t *testing.T) {
	dir := os.Getenv("WARDEN_TASKS_CHILD_DIR")
	if dir == "" {
		t.Skip("the child of TestFileStoreTwoProcesses")
	}
	fmt.Println(hammer(t, dir, os.Getenv("WARDEN_TASKS_CHILD_ID"), "local:child"))
}

const (
	hammerBound   = 40
	hammerUpdates = 50
)

// hammer creates tasks of owner in dir until Bounds.Total refuses one,
// then increments shared's count hammerUpdates times, and returns how
// many tasks it created.
func hammer(t *testing.T, dir, shared, owner string) int {
	s, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	created := 0
	for {
		task := tasks.Task{ID: tasks.NewID(), Owner: owner, Tool: "t", TTL: time.Hour}
		err := s.Create(t.Context(), task, tasks.Bounds{Total: hammerBound})
		if errors.Is(err, tasks.ErrTooMany) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		created++
	}
	for range hammerUpdates {
		if _, err := s.Update(t.Context(), "token", shared, tasks.Bounds{}, func(t *tasks.Task) {
			n, _ := strconv.Atoi(t.StatusMessage)
			t.StatusMessage = strconv.Itoa(n + 1)
		}); err != nil {
			t.Fatal(err)
		}
	}
	return created
}

// TestFileStoreTwoProcesses: two processes on one directory (a second
// `warden serve`, or the CLI beside a server) neither pass the bound
// between them nor lose each other's updates: the lock is the system's,
// not the process's.
func TestFileStoreTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	s, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	shared := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "t", TTL: time.Hour}
	if err := s.Create(t.Context(), shared, tasks.Bounds{}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFileStoreChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "WARDEN_TASKS_CHILD_DIR="+dir, "WARDEN_TASKS_CHILD_ID="+shared.ID)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mine := hammer(t, dir, shared.ID, "local:parent")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	theirs, err := strconv.Atoi(strings.Fields(out.String())[0])
	if err != nil {
		t.Fatalf("child's output: %q", out.String())
	}
	// The shared task is unfinished too: it takes one place of the bound.
	if mine+theirs != hammerBound-1 {
		t.Errorf("parent created %d, child %d: %d in all, want %d", mine, theirs, mine+theirs, hammerBound-1)
	}
	got, err := s.Get(t.Context(), "token", shared.ID)
	if err != nil || got.StatusMessage != strconv.Itoa(2*hammerUpdates) {
		t.Errorf("after %d updates from two processes the count is %q (%v)", 2*hammerUpdates, got.StatusMessage, err)
	}
}

// TestFileStoreRecovers: a temp file left by a writer that died is removed
// when the store opens, the records it was replacing intact; files that are
// no record are not read.
func TestFileStoreRecovers(t *testing.T) {
	dir := t.TempDir()
	s, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	task := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "t", TTL: time.Hour}
	if err := s.Create(t.Context(), task, tasks.Bounds{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, err := os.Stat(filepath.Join(dir, task.ID+".task")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("record file: %v, %v; want mode 0600", fi, err)
	}
	temp := filepath.Join(dir, ".tmp-"+tasks.NewID())
	if err := os.WriteFile(temp, []byte(`{"v":1,"id":"half`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(temp); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead writer's temp file is still there: %v", err)
	}
	if got, err := s.Get(t.Context(), "token", task.ID); err != nil || got.Tool != "t" {
		t.Errorf("record after recovery: %+v, %v", got, err)
	}
	// Files that are no record (no id, another extension) are not read.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "x.task"), []byte("x"), 0o600)
	if page, _, err := s.List(t.Context(), "token", "", 0); err != nil || len(page) != 1 {
		t.Errorf("list beside foreign files: %d, %v", len(page), err)
	}
}

// TestFileStoreUnreadableRecord: a record the store cannot read (corrupt,
// or not this user's to open) is one owner's problem, not everyone's: the
// others' List, Create and Sweep go on without it, no client's error names
// it (its id is another owner's), the log does, and the operator's GetAny
// says what is wrong with it.
func TestFileStoreUnreadableRecord(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	s, err := tasks.Open(t.Context(), tasks.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk := func(owner string, offset time.Duration) tasks.Task {
		task := tasks.Task{ID: tasks.NewID(), Owner: owner, Tool: "t", TTL: time.Hour, Created: taskstest.Base.Add(offset),
			Replica: "r", LeaseUntil: taskstest.Base.Add(offset + time.Minute)}
		if err := s.Create(t.Context(), task, tasks.Bounds{}); err != nil {
			t.Fatal(err)
		}
		return task
	}
	alice, bob := mk("local:alice", 0), mk("local:bob", time.Second)
	record := filepath.Join(dir, alice.ID+".task")
	if err := os.WriteFile(record, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s beside a corrupt record: %v", what, err)
		}
	}
	page, _, err := s.List(t.Context(), "local:bob", "", 0)
	check("bob's list", err)
	if len(page) != 1 || page[0].ID != bob.ID {
		t.Errorf("bob's list: %+v", page)
	}
	mk("local:bob", 2*time.Second)
	// A lapsed lease: Sweep ends bob's tasks, skipping alice's record.
	failed, _, err := s.Sweep(t.Context(), taskstest.Base.Add(10*time.Minute))
	check("sweep", err)
	if failed != 2 {
		t.Errorf("sweep failed %d tasks, want bob's 2", failed)
	}
	for _, owner := range []string{"local:alice", "local:bob"} {
		if _, err := s.Get(t.Context(), owner, alice.ID); !errors.Is(err, tasks.ErrNotFound) || err.Error() != "task not found" {
			t.Errorf("%s's get of the corrupt record: %v, want task not found", owner, err)
		}
		if _, err := s.Cancel(t.Context(), owner, alice.ID); !errors.Is(err, tasks.ErrNotFound) {
			t.Errorf("%s's cancel of the corrupt record: %v, want task not found", owner, err)
		}
	}
	op := s.(tasks.Operator)
	want := "tasks: record " + alice.ID + ".task: not a version 1 task record"
	if _, err := op.GetAny(t.Context(), alice.ID); err == nil || err.Error() != want {
		t.Errorf("operator's get: %v, want %q", err, want)
	}
	// Met by every scan above, it is logged once.
	if strings.Count(log.String(), want) != 1 {
		t.Errorf("the log does not name the record once:\n%s", log.String())
	}
	// A record rewritten by another user, mode 0600 (sudo warden tasks):
	// this user cannot open it; the same holds. (Root opens any file.)
	if os.Geteuid() != 0 {
		os.Remove(record)
		alice = mk("local:alice", 3*time.Second)
		if err := os.Chmod(filepath.Join(dir, alice.ID+".task"), 0); err != nil {
			t.Fatal(err)
		}
		_, _, err := s.List(t.Context(), "local:bob", "", 0)
		check("bob's list beside a record he cannot open", err)
		mk("local:bob", 4*time.Second)
	}
}

// TestFileStoreResultReadBounded: a record whose result is larger than any
// a task keeps (grown past the store) is not read into memory: only one
// byte more than the bound is read, and the record is unreadable.
func TestFileStoreResultReadBounded(t *testing.T) {
	dir := t.TempDir()
	s, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tasks.SetMaxResult(s, 64)
	task := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "t", TTL: time.Hour}
	if err := s.Create(t.Context(), task, tasks.Bounds{}); err != nil {
		t.Fatal(err)
	}
	fits := `"` + strings.Repeat("x", 62) + `"` // 64 bytes
	if _, err := s.Update(t.Context(), "token", task.ID, tasks.Bounds{}, func(t *tasks.Task) { t.Result = json.RawMessage(fits) }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(t.Context(), "token", task.ID); err != nil || string(got.Result) != fits {
		t.Fatalf("a 64-byte result: %q, %v", got.Result, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, task.ID+".task"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(" ")) // 65 bytes now
	f.Close()
	if _, err := s.Get(t.Context(), "token", task.ID); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("get of a 65-byte result: %v, want task not found", err)
	}
	want := "tasks: record " + task.ID + ".task: holds a result of more than 64 bytes, the most a task keeps"
	if _, err := s.GetAny(t.Context(), task.ID); err == nil || err.Error() != want {
		t.Errorf("operator's get: %v, want %q", err, want)
	}
}

// TestFileStoreNeverFollowsLinks: as the memory store, the task store
// opens the directories it makes without following a link: a .warden or
// .warden/tasks that is a symbolic link (to another project's store, say)
// is refused and nothing is made through it; a record that is a link is
// not read, even when it points at a record.
func TestFileStoreNeverFollowsLinks(t *testing.T) {
	elsewhere := t.TempDir()
	for _, link := range []string{".warden", ".warden/tasks"} {
		project := t.TempDir()
		at := filepath.Join(project, filepath.FromSlash(link))
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(elsewhere, at); err != nil {
			t.Fatal(err)
		}
		_, err := tasks.OpenFile(tasks.DefaultDir(project), nil)
		want := "tasks: " + at + " is a symbolic link: the task store never follows links (make it a directory)"
		if err == nil || err.Error() != want {
			t.Errorf("%s a link: %v, want %q", link, err, want)
		}
		if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
			t.Errorf("%s a link: made %v in its target", link, entries)
		}
	}
	dir := t.TempDir()
	s, err := tasks.OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	task := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "t", TTL: time.Hour}
	if err := s.Create(t.Context(), task, tasks.Bounds{}); err != nil {
		t.Fatal(err)
	}
	link := tasks.NewID()
	if err := os.Symlink(task.ID+".task", filepath.Join(dir, link+".task")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "token", link); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("get through a link to a record: %v, want task not found", err)
	}
}

// TestFileStoreSyncsMadeDirs: each directory the store makes is synced
// into its parent before the store is used, so that a crash cannot lose
// the directory its synced records are in; one that exists is not made.
func TestFileStoreSyncsMadeDirs(t *testing.T) {
	project := t.TempDir()
	dir := tasks.DefaultDir(project)
	var steps []string
	s, err := tasks.OpenFileObserved(dir, func(step string) { steps = append(steps, step) })
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := []string{"parent-synced " + filepath.Join(project, ".warden"), "parent-synced " + dir}
	if !slices.Equal(steps, want) {
		t.Errorf("first open: steps %q, want %q", steps, want)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the store's directory: %v, %v; want mode 0700", fi, err)
	}
	steps = nil
	if s, err = tasks.OpenFileObserved(dir, func(step string) { steps = append(steps, step) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(steps) != 0 {
		t.Errorf("second open: steps %q, want none", steps)
	}
}

// TestDefaultDir: the file store lives beside the memory store's
// .warden/memories.
func TestDefaultDir(t *testing.T) {
	if got, want := tasks.DefaultDir(filepath.FromSlash("/p")), filepath.FromSlash("/p/.warden/tasks"); got != want {
		t.Errorf("DefaultDir = %q, want %q", got, want)
	}
}
