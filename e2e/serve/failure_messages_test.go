package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// callFailure runs `warden call` and returns what it printed of the
// failure: the text a client reads, and the error's typed fields. The call
// must exit 1 and print the failure once, on stdout: whatever it writes to
// stderr is log lines, none of them the failure again.
func callFailure(t *testing.T, config, name, args string) (text string, kind, trap, message string) {
	t.Helper()
	out, stderr, code := runWarden(t, "call", "--config", config, name, args)
	if code != 1 {
		t.Fatalf("warden call %s: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", name, code, out, stderr)
	}
	var res struct {
		Content []struct{ Text string }
		Error   struct{ Kind, Message, Trap string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("warden call %s printed no result: %v\n%s", name, err, out)
	}
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "time=") || strings.Contains(line, res.Error.Message) {
			t.Errorf("warden call %s: stderr line that is not a log line, or repeats the failure: %q", name, line)
		}
	}
	return res.Content[0].Text, res.Error.Kind, res.Error.Trap, res.Error.Message
}

// TestCallTrapNamesFunction: a module that traps in a named function (its
// name section kept) is reported with the function, once, and the class as
// its own field: no "trapped (unreachable): x trapped: unreachable".
func TestCallTrapNamesFunction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "")
	wasm := testwasm.WATNamed(t, filepath.Join(built.root, "runtime", "testdata", "trap", "panicky.wat"))
	if err := os.WriteFile(filepath.Join(e.tools, "panicky.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	text, kind, trap, message := callFailure(t, e.config, "panicky", `{"x":1}`)
	if want := "trapped (unreachable): panicky failed in function panicky"; text != want {
		t.Errorf("text:\n got %q\nwant %q", text, want)
	}
	if kind != "trapped" || trap != "unreachable" || message != "panicky failed in function panicky" {
		t.Errorf("error = %s/%s %q", kind, trap, message)
	}
}

// TestCallOutOfFuelNamesSetting: out_of_fuel names the setting that raises
// the budget, and that the module's own entry sets it now.
func TestCallOutOfFuelNamesSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "loop: {fuel: 20000000}", "loop")
	text, kind, _, message := callFailure(t, e.config, "loop", `{}`)
	const want = "loop ran out of fuel after 20000000 units; raise tools.limits.loop.fuel (now 20000000)"
	if text != "out_of_fuel: "+want || kind != "out_of_fuel" || message != want {
		t.Errorf("text %q, kind %s, message %q; want %q", text, kind, message, want)
	}
}
