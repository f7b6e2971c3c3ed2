package tasks_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
// when the store opens, the records it was replacing intact; a record that
// does not parse is reported, naming it, not skipped.
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
	bad := tasks.NewID()
	if err := os.WriteFile(filepath.Join(dir, bad+".task"), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "tasks: record " + bad + ".task is not a version 1 task record"
	if _, _, err := s.List(t.Context(), "token", "", 0); err == nil || err.Error() != want {
		t.Errorf("list with a corrupt record: %v, want %q", err, want)
	}
	// Files that are no record (no id, another extension) are not read.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "x.task"), []byte("x"), 0o600)
	os.Remove(filepath.Join(dir, bad+".task"))
	if page, _, err := s.List(t.Context(), "token", "", 0); err != nil || len(page) != 1 {
		t.Errorf("list beside foreign files: %d, %v", len(page), err)
	}
}

// TestDefaultDir: the file store lives beside the memory store's
// .warden/memories.
func TestDefaultDir(t *testing.T) {
	if got, want := tasks.DefaultDir(filepath.FromSlash("/p")), filepath.FromSlash("/p/.warden/tasks"); got != want {
		t.Errorf("DefaultDir = %q, want %q", got, want)
	}
}
