//go:build unix

package tasks

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/warden-run/warden/internal/osfile"
)

// The crash child's instructions, passed in its environment.
const (
	crashDirEnv  = "WARDEN_TASKS_CRASH_DIR"
	crashStepEnv = "WARDEN_TASKS_CRASH_STEP"
	crashIDEnv   = "WARDEN_TASKS_CRASH_ID"
)

// The results the crash test writes: the new one takes several write(2)s.
var (
	crashOld = json.RawMessage(`"` + strings.Repeat("old ", 16<<10) + `"`)
	crashNew = json.RawMessage(`"` + strings.Repeat("the new result ", 60<<10) + `"`)
)

// TestCrashChild is the writer TestKillAtEveryWriteStep runs in a
// subprocess: it completes the task with crashNew and kills itself with
// SIGKILL at the named step of the write. Run directly it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only runs as TestKillAtEveryWriteStep's subprocess")
	}
	s, err := OpenFile(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := osfile.Step(os.Getenv(crashStepEnv))
	s.reached = func(step osfile.Step) {
		if step == target {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never go on
		}
	}
	if _, err := s.Update(t.Context(), "token", os.Getenv(crashIDEnv), Bounds{}, func(t *Task) {
		t.Status, t.Result = Completed, crashNew
	}); err != nil {
		t.Fatal(err)
	}
	// Reaching here means the step was never reached: the parent sees a
	// normal exit and fails.
}

// TestKillAtEveryWriteStep kills a writer with SIGKILL at each step of a
// record's atomic write and checks that the record is then exactly the old
// one (killed before the rename) or exactly the new one (after it), never
// a mix or nothing; that the dead writer's lock and temp file block no one;
// and that the store works afterwards. The kill points are exact, so every
// step is covered on every run, however busy the machine.
func TestKillAtEveryWriteStep(t *testing.T) {
	for _, step := range osfile.WriteSteps() {
		t.Run(string(step), func(t *testing.T) {
			dir := t.TempDir()
			s, err := OpenFile(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			task := Task{ID: NewID(), Owner: "token", Tool: "t", TTL: time.Hour}
			if err := s.Create(t.Context(), task, Bounds{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Update(t.Context(), "token", task.ID, Bounds{}, func(t *Task) { t.Result = crashOld }); err != nil {
				t.Fatal(err)
			}
			s.Close()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStepEnv+"="+string(step), crashIDEnv+"="+task.ID)
			out, err := cmd.CombinedOutput()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the child was not killed at %s: %v\n%s", step, err, out)
			}
			s, err = OpenFile(dir, nil) // waits for no lock: the kernel dropped the dead writer's
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got, err := s.Get(t.Context(), "token", task.ID)
			if err != nil {
				t.Fatalf("after a kill at %s: %v", step, err)
			}
			renamed := step == osfile.StepRenamed || step == osfile.StepDirSynced
			switch {
			case !renamed && (got.Status != Working || string(got.Result) != string(crashOld)):
				t.Errorf("killed at %s, before the rename: status %s, result of %d bytes; want the old record", step, got.Status, len(got.Result))
			case renamed && (got.Status != Completed || string(got.Result) != string(crashNew)):
				t.Errorf("killed at %s, after the rename: status %s, result of %d bytes; want the new record", step, got.Status, len(got.Result))
			}
			entries, _ := fs.ReadDir(os.DirFS(dir), ".")
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if want := fmt.Sprint([]string{lockName, task.ID + recordExt}); fmt.Sprint(names) != want {
				t.Errorf("files after reopening: %v, want %v (the temp file removed)", names, want)
			}
			if !renamed {
				if _, err := s.Update(t.Context(), "token", task.ID, Bounds{}, func(t *Task) { t.Status = Cancelled }); err != nil {
					t.Errorf("update after the crash: %v", err)
				}
			}
		})
	}
}
