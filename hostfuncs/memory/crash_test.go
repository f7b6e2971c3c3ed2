//go:build unix

package memory

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/warden-run/warden/internal/osfile"
)

// The crash child's instructions, passed in its environment.
const (
	crashDirEnv   = "WARDEN_MEMORY_CRASH_DIR"
	crashStepEnv  = "WARDEN_MEMORY_CRASH_STEP"
	crashTopicEnv = "WARDEN_MEMORY_CRASH_TOPIC"
)

// The values the crash test writes: the new one is large enough to take
// several write(2)s.
var (
	crashOldValue = strings.Repeat("old value line\n", 4096)         // 60 KiB
	crashNewValue = strings.Repeat("the new value, longer\n", 40000) // 880 KiB
)

// TestCrashChild is the writer that TestKillAtEveryWriteStep runs in a
// subprocess: it sets one topic and kills itself with SIGKILL at the named
// step of the write. Run directly it does nothing.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only runs as TestKillAtEveryWriteStep's subprocess")
	}
	m, err := New(Config{ProjectRoot: dir, MaxValueBytes: 4 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	target := osfile.Step(os.Getenv(crashStepEnv))
	m.front.Load().backend.(*store).reached = func(step osfile.Step) {
		if step == target {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL is not deliverable late, but never go on
		}
	}
	raw, _ := json.Marshal(req{"op": "set", "topic": os.Getenv(crashTopicEnv), "value": crashNewValue})
	if _, err := m.Serve(t.Context(), rw, raw); err != nil {
		t.Fatal(err)
	}
	// Reaching here means the step was never reached: the parent sees a
	// normal exit and fails.
}

// TestKillAtEveryWriteStep kills a writer with SIGKILL at each step of an
// atomic write, for a new topic and for one that has a value, and checks
// that the topic then holds exactly the old value (killed before the rename)
// or exactly the new one (after it), never a mix or nothing; that a dead
// writer's lock and temp file never block the next writer; and that the
// store works afterwards. The kill points are exact, so every step is
// covered on every run, however busy the machine.
func TestKillAtEveryWriteStep(t *testing.T) {
	oldValue, newValue := crashOldValue, crashNewValue
	for _, step := range osfile.WriteSteps() {
		for _, existing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/existing=%v", step, existing), func(t *testing.T) {
				dir := t.TempDir()
				topic := "nested/deep/topic"
				if existing {
					setValue(t, dir, topic, oldValue)
				}
				cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashStepEnv+"="+string(step),
					crashTopicEnv+"="+topic)
				out, err := cmd.CombinedOutput()
				if cmd.ProcessState == nil {
					t.Fatalf("start the writer: %v", err)
				}
				status, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
				if err == nil || !status.Signaled() || status.Signal() != syscall.SIGKILL {
					t.Fatalf("the writer was not killed at step %s (%v): %s", step, err, out)
				}

				beforeRename := step == osfile.StepTempCreated || step == osfile.StepHalfWritten || step == osfile.StepSynced
				data, err := os.ReadFile(filepath.Join(dir, ".warden", "memories", topic+".md"))
				switch {
				case beforeRename && !existing:
					if !os.IsNotExist(err) {
						t.Fatalf("killed at %s before the first write landed: want no topic file, got %d bytes (%v)", step, len(data), err)
					}
				case beforeRename:
					if err != nil || string(data) != oldValue {
						t.Fatalf("killed at %s: want the old value (%d bytes), got %d bytes (%v)", step, len(oldValue), len(data), err)
					}
				default:
					if err != nil || string(data) != newValue {
						t.Fatalf("killed at %s: want the new value (%d bytes), got %d bytes (%v)", step, len(newValue), len(data), err)
					}
				}
				if temps := tempFiles(dir); beforeRename != (len(temps) == 1) {
					t.Fatalf("killed at %s: temp files %q", step, temps)
				}

				// The next writer takes the dead one's lock, sweeps its temp
				// file, and the store works.
				setValue(t, dir, topic, "done")
				if temps := tempFiles(dir); len(temps) > 0 {
					t.Fatalf("temp files survived the next write: %q", temps)
				}
				m, err := New(Config{ProjectRoot: dir, MaxValueBytes: 4 << 20}, nil)
				if err != nil {
					t.Fatal(err)
				}
				out2, err := m.Serve(t.Context(), rw, []byte(`{"op":"get","topic":"`+topic+`"}`))
				if err != nil || out2.(getReply).Value != "done" {
					t.Fatalf("get after the crash: %+v %v", out2, err)
				}
			})
		}
	}
}

func setValue(t *testing.T, dir, topic, value string) {
	t.Helper()
	m, err := New(Config{ProjectRoot: dir, MaxValueBytes: 4 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(req{"op": "set", "topic": topic, "value": value})
	if _, err := m.Serve(t.Context(), rw, raw); err != nil {
		t.Fatalf("set %s: %v", topic, err)
	}
}

// tempFiles lists the store's temp files below dir.
func tempFiles(dir string) []string {
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			names = append(names, p)
		}
		return nil
	})
	return names
}

// TestStartSweepsDeadWritersTemps: temp files a killed writer left (older
// than a minute) anywhere in the store are removed when warden starts,
// not only when their directory is written again; a fresh one (another
// warden writing right now), other files, and what a link points to are
// left alone.
func TestStartSweepsDeadWritersTemps(t *testing.T) {
	root := t.TempDir()
	mem := filepath.Join(root, ".warden", "memories")
	if err := os.MkdirAll(filepath.Join(mem, "arch"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "target")
	write := func(p string, old bool) {
		t.Helper()
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if old {
			past := time.Now().Add(-2 * staleTempAge)
			if err := os.Chtimes(p, past, past); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(filepath.Join(mem, tempPrefix+"dead1"), true)
	write(filepath.Join(mem, "arch", tempPrefix+"dead2"), true)
	write(filepath.Join(mem, "arch", tempPrefix+"live"), false)
	write(filepath.Join(mem, "arch", "db.md"), true)
	write(outside, true)
	if err := os.Symlink(outside, filepath.Join(mem, tempPrefix+"link")); err != nil {
		t.Fatal(err)
	}
	// The link itself is old too (its own times, not its target's).
	old := unix.NsecToTimespec(time.Now().Add(-2 * staleTempAge).UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, filepath.Join(mem, tempPrefix+"link"), []unix.Timespec{old, old}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatal(err)
	}

	m, err := New(Config{ProjectRoot: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	var left []string
	filepath.WalkDir(mem, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(mem, p)
			left = append(left, rel)
		}
		return nil
	})
	if want := []string{"arch/.tmp-live", "arch/db.md"}; fmt.Sprint(left) != fmt.Sprint(want) {
		t.Fatalf("after start the store holds %q, want %q", left, want)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Fatalf("the link's target was touched: %v", err)
	}
}
