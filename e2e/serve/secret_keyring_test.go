//go:build linux

package serve

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keyringSession runs script under a D-Bus session of its own with GNOME
// Keyring's Secret Service unlocked in it (a fresh keyring under a
// temporary HOME), as sh -c with the given environment. It skips the test
// when no Secret Service can start here.
func keyringSession(t *testing.T, script string, stdin io.Reader, stderr io.Writer, env ...string) (string, string) {
	t.Helper()
	for _, bin := range []string{"dbus-run-session", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no Secret Service can start here: %s is not on PATH (Debian: apt-get install dbus-daemon gnome-keyring; .ci/run installs them)", bin)
		}
	}
	home := t.TempDir()
	cmd := exec.Command("dbus-run-session", "--", "sh", "-c",
		`printf e2e-password | gnome-keyring-daemon --unlock --components=secrets >/dev/null || { echo "gnome-keyring-daemon did not start" >&2; exit 97; }
`+script)
	cmd.Env = childEnv(append([]string{"HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "data"), "XDG_RUNTIME_DIR=" + home, "WARDEN=" + built.warden}, env...)...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(&errb, stderr)
	}
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code == 97 {
		t.Skipf("no Secret Service can start here: %s", errb.String())
	}
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// TestSecretKeyring, against a real Secret Service (GNOME Keyring on its
// own D-Bus session): warden secret set stores a value read from stdin,
// the bound tool reads it through warden call, a second set (rotation) is
// what the next call reads, and neither value is in any byte warden
// writes to stderr (debug level) or in warden secret list.
func TestSecretKeyring(t *testing.T) {
	t.Parallel()
	const v1, v2 = "ring-v1-Kq2sT3cretK3yring", "ring-v2-Mn4sT3cretK3yring"
	e := newEnv(t, "", "hostcalls", "shouty")
	e.withConfig(t, "secrets:\n  RING_KEY: {keyring: e2e-ring, tools: [hostcalls]}\n")
	out, errs := keyringSession(t, `set -e
printf '%s\n' "$V1" | "$WARDEN" secret set e2e-ring
"$WARDEN" call hostcalls '{"env":{"op":"get","key":"RING_KEY"}}' --config "$CFG" --log-level debug
echo "-- rotated"
printf '%s' "$V2" | "$WARDEN" secret set e2e-ring
"$WARDEN" call hostcalls '{"env":{"op":"get","key":"RING_KEY"}}' --config "$CFG" --log-level debug
echo "-- other tool"
"$WARDEN" call READER '{"key":"RING_KEY"}' --config "$CFG" --log-level debug || true
echo "-- list"
"$WARDEN" secret list --config "$CFG"
`, strings.NewReader(""), nil, "V1="+v1, "V2="+v2, "CFG="+e.config)
	first, rest, _ := strings.Cut(out, "-- rotated\n")
	second, rest, _ := strings.Cut(rest, "-- other tool\n")
	other, list, _ := strings.Cut(rest, "-- list\n")
	if !strings.Contains(first, v1) || !strings.Contains(second, v2) || strings.Contains(second, v1) {
		t.Fatalf("the bound tool read, before and after a second set:\n%s\n---\n%s", first, second)
	}
	if !strings.Contains(other, `env: secret \"RING_KEY\" is not bound to tool \"READER\"`) || strings.Contains(other, v1) || strings.Contains(other, v2) {
		t.Fatalf("another tool's read:\n%s", other)
	}
	if !strings.Contains(list, "RING_KEY  keyring e2e-ring  hostcalls  readable") {
		t.Fatalf("warden secret list:\n%s", list)
	}
	for where, text := range map[string]string{"stderr": errs, "secret list": list} {
		if strings.Contains(text, v1) || strings.Contains(text, v2) {
			t.Errorf("%s holds a keyring value:\n%s", where, text)
		}
	}
	if !strings.Contains(out, `Stored e2e-ring in the keyring (service "warden")`) {
		t.Errorf("warden secret set said:\n%s", out)
	}
}

// TestSecretSetOnATerminal: on a terminal, warden secret set asks for the
// value and reads it with the terminal's echo off: what is typed is not
// on the terminal, and it is what the keyring then holds.
func TestSecretSetOnATerminal(t *testing.T) {
	t.Parallel()
	const typed = "typed-Tt9sT3cretN0echo"
	control, term := openPTY(t)
	e := newEnv(t, "", "hostcalls")
	e.withConfig(t, "secrets:\n  TYPED: {keyring: e2e-typed, tools: [hostcalls]}\n")
	// The terminal side: wait for the prompt, then for the echo to be
	// turned off (polled on the terminal's own state, not timed), then
	// type. Everything the terminal shows is kept.
	var shown bytes.Buffer
	done := make(chan error, 1)
	go func() {
		r := bufio.NewReader(control)
		const prompt = "Value of e2e-typed (not shown): "
		for !strings.Contains(shown.String(), prompt) {
			b, err := r.ReadByte()
			if err != nil {
				done <- fmt.Errorf("no prompt; the terminal showed %q: %w", shown.String(), err)
				return
			}
			shown.WriteByte(b)
		}
		// A warden that never turns the echo off would keep this waiting:
		// past the bound, type anyway, and the echo fails the test.
		for bound := time.Now().Add(10 * time.Second); time.Now().Before(bound); time.Sleep(time.Millisecond) {
			tio, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS)
			if err != nil {
				done <- err
				return
			}
			if tio.Lflag&unix.ECHO == 0 {
				break
			}
		}
		if _, err := control.Write([]byte(typed + "\n")); err != nil {
			done <- err
			return
		}
		_, err := io.Copy(&shown, r) // until the terminal closes
		done <- err
	}()
	out, _ := keyringSession(t, `set -e
"$WARDEN" secret set e2e-typed
"$WARDEN" call hostcalls '{"env":{"op":"get","key":"TYPED"}}' --config "$CFG"
`, term, term, "CFG="+e.config)
	term.Close() // the terminal side's reader ends
	if err := <-done; err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	if !strings.Contains(out, typed) {
		t.Fatalf("the tool did not read what was typed:\n%s", out)
	}
	if strings.Contains(shown.String(), typed) {
		t.Fatalf("the terminal echoed the value:\n%q", shown.String())
	}
}
