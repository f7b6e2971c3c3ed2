package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// bundledTools returns the directory `make tools` builds the bundled tools
// into, failing the test when it has not been built: these tests call the
// tools exactly as a person following the README does.
func bundledTools(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(built.root, "bin", "tools")
	for _, name := range []string{"echo", "hash", "jq", "lsp"} {
		if _, err := os.Stat(filepath.Join(dir, name+".wasm")); err != nil {
			t.Fatalf("the bundled tools are not built (run `make tools`): %v", err)
		}
	}
	return dir
}

// runShell runs a shell command line in dir, as make runs a recipe line,
// and returns its stdout, stderr and exit code.
func runShell(t *testing.T, dir, line string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = childEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return out.String(), errb.String(), code
}

// durationMs is the one field of a call's output that changes run to run.
var durationMs = regexp.MustCompile(`"warden/durationMs": [0-9.e+-]+`)

// TestHashRefusesAnUnknownKey: issue 16's `warden call hash
// '{"algorithm":"md5",...}'` returned a sha256 digest, the misspelt key
// ignored. Every bundled tool's input schema is closed, so the call is an
// invalid_arguments error naming the key, and exits 1 (a tool error).
func TestHashRefusesAnUnknownKey(t *testing.T) {
	t.Parallel()
	bundledTools(t)
	stdout, stderr, code := runShell(t, built.root,
		shellQuote(built.warden)+` call --log-level error hash '{"algorithm":"md5","text":"x"}'`)
	msg := `arguments do not match the input schema of hash: unknown argument \"algorithm\" (the input schema allows no others)`
	want := `{
  "content": [
    {
      "type": "text",
      "text": "invalid_arguments: ` + msg + `"
    }
  ],
  "isError": true,
  "error": {
    "kind": "invalid_arguments",
    "message": "` + msg + `"
  },
  "_meta": {
    "warden/durationMs": 0,
    "warden/kind": "invalid_arguments"
  }
}
`
	if got := durationMs.ReplaceAllString(stdout, `"warden/durationMs": 0`); got != want || stderr != "" || code != 1 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1, stdout:\n%s\nand no stderr", code, stdout, stderr, want)
	}
}

// TestBundledSchemasAreClosed: an unknown key is refused by every bundled
// tool (a misspelt key is a mistake that must not be ignored), checked on
// the descriptors the built modules serve.
func TestBundledSchemasAreClosed(t *testing.T) {
	t.Parallel()
	bundledTools(t)
	calls := map[string]string{
		"echo":              `{"text":"x","txt":"y"}`,
		"hash":              `{"text":"x","algorithm":"md5"}`,
		"jq":                `{"filter":".","input":1,"filters":"."}`,
		"definition":        `{"path":"x.go","line":1,"column":1,"colum":1}`,
		"hover":             `{"path":"x.go","line":1,"column":1,"colum":1}`,
		"references":        `{"path":"x.go","line":1,"column":1,"colum":1}`,
		"symbols":           `{"path":".","recursve":true}`,
		"workspace_symbols": `{"query":"X","knd":"func"}`,
	}
	for name, args := range calls {
		var extra string
		for _, k := range []string{"txt", "algorithm", "filters", "colum", "recursve", "knd"} {
			if strings.Contains(args, `"`+k+`"`) {
				extra = k
			}
		}
		stdout, stderr, code := runShell(t, built.root,
			shellQuote(built.warden)+" call --log-level error "+name+" "+shellQuote(args))
		want := `unknown argument \"` + extra + `\" (the input schema allows no others)`
		if code != 1 || !strings.Contains(stdout, `"kind": "invalid_arguments"`) || !strings.Contains(stdout, want) || stderr != "" {
			t.Errorf("%s %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1, invalid_arguments naming %q, no stderr", name, args, code, stdout, stderr, extra)
		}
	}
}

// TestMakeDemoCallsSucceed runs the calls of the Makefile's demo target, as
// make runs them (from the repository, with its config.yaml): each exits 0
// with a result that is not an error, so the demo teaches keys that work.
func TestMakeDemoCallsSucceed(t *testing.T) {
	t.Parallel()
	bundledTools(t)
	lines := demoRecipe(t)
	var calls int
	for _, line := range lines {
		rest, ok := strings.CutPrefix(line, "bin/warden ")
		if !ok {
			t.Fatalf("demo line %q does not run bin/warden", line)
		}
		stdout, stderr, code := runShell(t, built.root, shellQuote(built.warden)+" --log-level error "+rest)
		if code != 0 || stderr != "" || strings.Contains(stdout, `"isError"`) {
			t.Errorf("%s: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, no error, no stderr", line, code, stdout, stderr)
		}
		if strings.HasPrefix(rest, "call ") {
			calls++
		}
	}
	if calls < 3 {
		t.Fatalf("the demo makes %d calls, want the 3 of echo, jq and hash: %q", calls, lines)
	}
}

// demoRecipe returns the recipe lines of the Makefile's demo target.
func demoRecipe(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(built.root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	in := false
	for s := bufio.NewScanner(f); s.Scan(); {
		line := s.Text()
		switch {
		case strings.HasPrefix(line, "demo:"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			lines = append(lines, strings.TrimPrefix(line, "\t"))
		case in:
			return lines
		}
	}
	if len(lines) == 0 {
		t.Fatal("no demo target in the Makefile")
	}
	return lines
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
