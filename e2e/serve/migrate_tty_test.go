//go:build linux

package serve

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair: the controlling side the test
// types into, the terminal side the child reads as its stdin.
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	if err := unix.IoctlSetPointerInt(int(control.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(control.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { term.Close() })
	return control, term
}

// TestMigrateAsksOnATerminal: on a terminal migrate asks before writing;
// "n" (or anything but y) writes nothing, "y" writes the binding.
func TestMigrateAsksOnATerminal(t *testing.T) {
	for _, c := range []struct {
		answer string
		wrote  bool
	}{{"n", false}, {"", false}, {"y", true}} {
		dir, _ := migrateEnv(t, legacyConfig, []string{"plugin"}, "plugin")
		cfg := filepath.Join(dir, "config.yaml")
		before, _ := os.ReadFile(cfg)
		control, term := openPTY(t)
		cmd := exec.Command(built.warden, "migrate")
		cmd.Dir = dir
		cmd.Env = childEnv()
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = term, &out, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, control) // the terminal's echo
		// The question comes once the tools are loaded; a line typed
		// before it waits in the terminal's buffer.
		time.Sleep(100 * time.Millisecond)
		if _, err := control.Write([]byte(c.answer + "\n")); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		question := "\nWrite 1 binding to " + cfg + "? [y/N] "
		if err != nil || !strings.Contains(out.String(), question) {
			t.Fatalf("answer %q: %v, stdout:\n%s\nstderr:\n%s", c.answer, err, out.String(), errb.String())
		}
		now, _ := os.ReadFile(cfg)
		if wrote := !bytes.Equal(now, before); wrote != c.wrote || (wrote && !strings.Contains(string(now), "      module: plugin\n")) {
			t.Fatalf("answer %q: config now:\n%s", c.answer, now)
		}
		if !c.wrote && !strings.HasSuffix(out.String(), "Nothing written.\n") {
			t.Fatalf("answer %q: stdout:\n%s", c.answer, out.String())
		}
	}
}
