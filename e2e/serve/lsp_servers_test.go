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

// wardenWithPath runs the real binary like wardenCLI, with PATH replaced:
// the language servers installed are exactly those in path.
func wardenWithPath(t *testing.T, e *env, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(built.warden, append(args, "--config", e.config)...)
	var env []string
	for _, kv := range childEnv() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+path)
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

// TestToolsMarksMissingLanguageServers: `warden tools` names every LSP tool
// granted a language whose server is not installed, with the command that
// installs it (in the table and in -o json), and a call in that language
// gets the same answer; a granted language whose server is installed is
// not named.
func TestToolsMarksMissingLanguageServers(t *testing.T) {
	e := newEnv(t, "")
	wasm, err := os.ReadFile(filepath.Join(bundledTools(t), "lsp.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.tools, "lsp.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "app.py"), []byte("def main():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A PATH holding a "gopls" and nothing else: go is installed, python
	// (pyright-langserver) is not.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "gopls"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"symbols", "hover"} {
		if _, stderr, code := wardenCLI(t, e, "grant", tool, "--module", "lsp", "lsp=go", "lsp=python", "fs.read=."); code != 0 {
			t.Fatalf("grant %s: exit %d: %s", tool, code, stderr)
		}
	}
	const missing = "the python language server is not installed (pyright-langserver is not in PATH); install it with: npm i -g pyright"

	stdout, stderr, code := wardenWithPath(t, e, bin, "tools")
	if code != 0 {
		t.Fatalf("warden tools: exit %d\n%s\n%s", code, stdout, stderr)
	}
	want := "\nLANGUAGE SERVERS NOT INSTALLED (2; the tool's calls in that language fail until installed):\n" +
		"  hover lsp=python: " + missing + "\n" +
		"  symbols lsp=python: " + missing + "\n"
	if !strings.HasSuffix(stdout, want) {
		t.Fatalf("warden tools does not end with the missing servers:\n%s\nwant the end:\n%s", stdout, want)
	}

	stdout, stderr, code = wardenWithPath(t, e, bin, "tools", "-o", "json")
	if code != 0 {
		t.Fatalf("warden tools -o json: exit %d\n%s", code, stderr)
	}
	var list struct {
		ServersMissing []struct{ Tool, Language, Error string } `json:"serversMissing"`
	}
	if err := json.Unmarshal([]byte(stdout), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.ServersMissing) != 2 || list.ServersMissing[0].Tool != "hover" || list.ServersMissing[1].Tool != "symbols" ||
		list.ServersMissing[1].Language != "python" || list.ServersMissing[1].Error != missing {
		t.Fatalf("serversMissing: %+v", list.ServersMissing)
	}

	// A call in that language: the same words. (The tool passes on the
	// capability's unavailable error; warden reports a kind a tool names
	// as failed, "reported by tool".)
	stdout, _, code = wardenWithPath(t, e, bin, "call", "symbols", `{"path":"app.py"}`)
	if code != 1 || !strings.Contains(stdout, `"kind": "failed"`) || !strings.Contains(stdout, "unavailable: "+missing) {
		t.Fatalf("warden call symbols app.py: exit %d\n%s", code, stdout)
	}
}
