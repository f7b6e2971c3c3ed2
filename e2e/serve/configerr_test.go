package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestConfigErrorsWhereWritten: a config.yaml with a mistake is refused
// at start naming its file and line, the key path, a did-you-mean, and no
// Go type; every problem of the file is reported, in the file's order; and
// warden grant, which edits the file, says the same.
func TestConfigErrorsWhereWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(body string) {
		if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("tools:\n  dir: tools\ntool:\n  grants: {}\n")
	_, stderr, code := wardenIn(t, dir, nil, "tools", "--config", "config.yaml")
	if want := "warden: config.yaml:3: unknown key \"tool\" under the top level (did you mean \"tools\"?)\n"; stderr != want || code != 2 {
		t.Errorf("warden tools: exit %d, stderr\n%q\nwant exit 2 and\n%q", code, stderr, want)
	}

	write("tools:\n  grants:\n    linecount:\n      fs: {raed: [data]}\n  defaults:\n    timeout: soon\nservr: {}\n")
	_, stderr, code = wardenIn(t, dir, nil, "tools", "--config", "config.yaml")
	at := -1
	for _, want := range []string{
		`config.yaml:4: unknown key "raed" under "tools.grants.linecount.fs" (did you mean "read"?)`,
		`config.yaml:6: tools.defaults.timeout: want a duration like "30s", got "soon"`,
		`config.yaml:7: unknown key "servr" under the top level (did you mean "server"?)`,
	} {
		i := strings.Index(stderr, want)
		if i < 0 || i < at {
			t.Errorf("warden tools: stderr\n%s\nlacks, or has out of the file's order, %s", stderr, want)
		}
		at = i
	}
	if code != 2 || strings.Contains(stderr, "config.Config") || strings.Contains(stderr, "time.Duration") {
		t.Errorf("warden tools: exit %d, stderr\n%s", code, stderr)
	}

	write("tools: {}\ntool: {}\n")
	_, stderr, code = wardenIn(t, dir, nil, "grant", "echo", "net=api.example.com", "--config", "config.yaml")
	if want := `config.yaml:2: unknown key "tool" under the top level (did you mean "tools"?)`; !strings.Contains(stderr, want) || code == 0 {
		t.Errorf("warden grant: exit %d, stderr\n%s\nwant it to say %s", code, stderr, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); string(b) != "tools: {}\ntool: {}\n" {
		t.Errorf("warden grant wrote config.yaml:\n%s", b)
	}

	// An environment override has no line: its variable is named.
	write("tools: {}\n")
	cmd := exec.Command(built.warden, "tools", "--config", "config.yaml")
	cmd.Dir = dir
	cmd.Env = childEnv("WARDEN_SERVER_PAGE_SIZE=abc")
	out, err := cmd.CombinedOutput()
	if want := "warden: WARDEN_SERVER_PAGE_SIZE: server.page_size: want a whole number, got \"abc\"\n"; string(out) != want || err == nil {
		t.Errorf("warden tools with WARDEN_SERVER_PAGE_SIZE=abc: %v\n%q\nwant\n%q", err, out, want)
	}
}

// TestConfigErrorOnReload: an edit of config.yaml under a running serve is
// refused with the same file:line message as at start, in the log line and
// in /healthz's config_error, and the previous config stays in force; once
// the file is fixed, config_error is gone.
func TestConfigErrorOnReload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "", "echo")
	hs := startHTTP(t, e)
	cs := hs.connect(t, "2025-11-25", nil, nil)
	body, err := os.ReadFile(e.config)
	if err != nil {
		t.Fatal(err)
	}
	line := strconv.Itoa(bytes.Count(body, []byte("\n")) + 1)
	if err := os.WriteFile(e.config, append(body, "tool: {}\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	want := e.config + ":" + line + `: unknown key "tool" under the top level (did you mean "tools"?)`
	eventually(t, "the edit refused", func() bool {
		return len(hs.stderr.lines("config change refused", strings.ReplaceAll(want, `"`, `\"`))) > 0
	})
	if got := configError(t, hs.addr); got != want {
		t.Errorf("/healthz config_error = %q, want %q", got, want)
	}
	wantEcho(t, cs, "still serving")

	if err := os.WriteFile(e.config, body, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fixed file reloaded", func() bool { return configError(t, hs.addr) == "" })
}

// configError is /healthz's config_error.
func configError(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		ConfigError string `json:"config_error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.ConfigError
}
