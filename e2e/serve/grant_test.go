package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// wardenCLI runs the real binary with --config e.config and returns its
// stdout, stderr and exit code.
func wardenCLI(t *testing.T, e *env, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return wardenCLIEnv(t, e, childEnv(), args...)
}

// wardenCLIEnv is wardenCLI with the child's environment env.
func wardenCLIEnv(t *testing.T, e *env, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(built.warden, append(args, "--config", e.config)...)
	cmd.Env = env
	cmd.Dir = e.dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("warden %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// `warden grant` refuses an fs grant that no call could ever use (outside
// every root, leaving its root, a symlink out of the root), with the
// call-time denial's words and its project.roots hint, and writes nothing;
// it writes one naming a path that does not exist yet, with a warning. A
// grant no call can use that is in config.yaml anyway (written by hand) is
// not shown as granted by `warden tools` or `warden grant`, and a call
// under it is denied: the screen and the gate agree.
func TestGrantRefusesWhatNoCallCanUse(t *testing.T) {
	e := newEnv(t, "", "hostcalls")
	if err := os.Mkdir(filepath.Join(e.dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(e.dir, "etclink")); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want string }{
		{"fs.read=/etc", `warden: tools.grants.hostcalls.fs.read: grant fs.read "/etc": outside every root (roots: project); add its directory to project.roots to grant it` + "\n"},
		{"fs.read=../..", `warden: tools.grants.hostcalls.fs.read: grant fs.read "../..": outside root "project"; paths may not leave their root` + "\n"},
		{"fs.write=etclink", `warden: tools.grants.hostcalls.fs.write: grant fs.write "etclink": resolves outside root "project"; symlinks may not leave their root` + "\n"},
		{"fs.read=config.yaml", `warden: tools.grants.hostcalls.fs.read: grant fs.read "config.yaml": warden's own config file; no grant can allow a tool to read or write it` + "\n"},
	} {
		stdout, stderr, code := wardenCLI(t, e, "grant", "hostcalls", tc.arg)
		if code != 1 || stdout != "" || stderr != tc.want {
			t.Errorf("grant hostcalls %s: exit %d\nstdout %q\nstderr %q\nwant exit 1, stderr %q", tc.arg, code, stdout, stderr, tc.want)
		}
		if after, _ := os.ReadFile(e.config); !bytes.Equal(after, before) {
			t.Fatalf("grant hostcalls %s wrote config.yaml:\n%s", tc.arg, after)
		}
	}

	// A path that does not exist (yet) is granted, with a warning.
	stdout, stderr, code := wardenCLI(t, e, "grant", "hostcalls", "fs.read=dta,data")
	wantErr := `warden: warning: tools.grants.hostcalls.fs.read: "dta" does not exist (yet); the grant works once it is created` + "\n"
	if code != 0 || stderr != wantErr || !strings.Contains(stdout, "  fs.read     .          dta, data  ") {
		t.Fatalf("grant hostcalls fs.read=dta,data: exit %d\nstdout %s\nstderr %q\nwant stderr %q", code, stdout, stderr, wantErr)
	}

	// Written by hand: /etc is in config, but no call can use it.
	cfg, _ := os.ReadFile(e.config)
	cfg = bytes.Replace(cfg, []byte("read: [dta, data]"), []byte("read: [dta, data, /etc]"), 1)
	if err := os.WriteFile(e.config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = wardenCLI(t, e, "tools")
	const unusable = `hostcalls fs.read=/etc: grant fs.read "/etc": outside every root (roots: project); add its directory to project.roots to grant it`
	if code != 0 || !strings.Contains(stdout, "fs.read=dta,data ") || strings.Contains(stdout, "fs.read=dta,data,/etc") ||
		!strings.Contains(stdout, "\nGRANTS NO CALL CAN USE (1; not granted):\n  "+unusable+"\n") {
		t.Fatalf("warden tools: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// grant's own table says the same.
	stdout, _, code = wardenCLI(t, e, "grant", "hostcalls", "fs.write=data")
	if code != 0 || strings.Contains(stdout, "/etc,") || strings.Contains(stdout, ", /etc") ||
		!strings.Contains(stdout, "\nnot granted: tools.grants.hostcalls.fs.read: grant fs.read \"/etc\": outside every root") {
		t.Fatalf("grant hostcalls fs.write=data: exit %d\n%s", code, stdout)
	}
	// And the call is denied, in the same words.
	stdout, _, _ = wardenCLI(t, e, "call", "hostcalls", `{"fs":{"op":"read","path":"/etc/hostname"}}`)
	if !strings.Contains(stdout, `read \"/etc/hostname\": outside every root (roots: project); add its directory to project.roots to grant it`) {
		t.Fatalf("call hostcalls read /etc/hostname:\n%s", stdout)
	}
}

// `warden revoke TOOL memory=LEVEL` with the level granted takes memory
// back (its topics too), and says what remains; a mistyped tool name in
// `warden grant` is refused with the served name it is close to.
func TestRevokeMemoryAndGrantDidYouMean(t *testing.T) {
	e := newEnv(t, "", "echo")
	if _, stderr, code := wardenCLI(t, e, "grant", "echo", "memory=read-write", "memory.topics=notes"); code != 0 {
		t.Fatalf("grant: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := wardenCLI(t, e, "revoke", "echo", "memory=read-write")
	want := "echo: tools.grants.echo (module echo) in " + e.config + "\n" +
		"  CAPABILITY  REQUESTED  GRANTED  \n" +
		"  (none)      -          -        \n"
	if code != 0 || stderr != "" || stdout != want {
		t.Fatalf("revoke echo memory=read-write: exit %d\nstdout %q\nstderr %q\nwant %q", code, stdout, stderr, want)
	}
	if cfg, _ := os.ReadFile(e.config); bytes.Contains(cfg, []byte("memory")) {
		t.Fatalf("memory left in config:\n%s", cfg)
	}

	before, _ := os.ReadFile(e.config)
	stdout, stderr, code = wardenCLI(t, e, "grant", "ehco", "fs.read=.")
	wantErr := "warden: no installed tool is named ehco; did you mean echo? (to grant a tool before it is installed, name its module: --module ehco)\n"
	if code != 2 || stdout != "" || !strings.HasPrefix(stderr, wantErr) {
		t.Fatalf("grant ehco: exit %d\nstdout %q\nstderr %q\nwant exit 2, %q", code, stdout, stderr, wantErr)
	}
	if after, _ := os.ReadFile(e.config); !bytes.Equal(after, before) {
		t.Fatal("grant ehco wrote config.yaml")
	}
	// Named with --module, the grant ahead of an install is written.
	if _, stderr, code := wardenCLI(t, e, "grant", "ehco", "--module", "ehco", "fs.read=."); code != 0 {
		t.Fatalf("grant ehco --module ehco: exit %d: %s", code, stderr)
	}
}

// A call-time denial names the `warden grant` command beside the config
// key (built by internal/grantcmd, as install's suggestion is), and that
// command, run as printed, makes the call succeed.
func TestDenialOffersTheGrantCommand(t *testing.T) {
	e := newEnv(t, "", "hostcalls")
	if err := os.Mkdir(filepath.Join(e.dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "data", "todo.txt"), []byte("milk"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() (errMsg string) {
		t.Helper()
		stdout, stderr, _ := wardenCLI(t, e, "call", "hostcalls", `{"fs":{"op":"read","path":"data/todo.txt"}}`)
		var out struct {
			StructuredContent struct {
				FS struct {
					Error *struct{ Kind, Message string }
				}
			}
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("call: %v\n%s\n%s", err, stdout, stderr)
		}
		if out.StructuredContent.FS.Error == nil {
			return ""
		}
		return out.StructuredContent.FS.Error.Message
	}
	const want = `read "data/todo.txt": not granted; grant it with tools.grants.hostcalls.fs.read: ["data"] (warden grant hostcalls fs.read=data)`
	got := read()
	if got != want {
		t.Fatalf("denial:\n got %q\nwant %q", got, want)
	}
	cmd := strings.TrimSuffix(got[strings.Index(got, "(warden grant ")+1:], ")")
	args := strings.Fields(cmd)[1:]
	if _, stderr, code := wardenCLI(t, e, args...); code != 0 {
		t.Fatalf("%s: exit %d: %s", cmd, code, stderr)
	}
	if got := read(); got != "" {
		t.Fatalf("after %s: still denied: %s", cmd, got)
	}
}
