package lsp

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warden-run/warden/tool"
)

// TestMissingServer checks the answer when a language's server is not
// installed: every default language names its command and the exact
// install command, a query gets the same, and nothing counts against the
// breaker.
func TestMissingServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // nothing installed
	m := newManager(t, Config{})
	want := map[string]string{
		"go":         "the go language server is not installed (gopls is not in PATH); install it with: go install golang.org/x/tools/gopls@latest",
		"python":     "the python language server is not installed (pyright-langserver is not in PATH); install it with: npm i -g pyright",
		"typescript": "the typescript language server is not installed (typescript-language-server is not in PATH); install it with: npm i -g typescript-language-server typescript@5",
		"javascript": "the javascript language server is not installed (typescript-language-server is not in PATH); install it with: npm i -g typescript-language-server typescript@5",
		"c":          "the c language server is not installed (clangd is not in PATH); install it with: apt install clangd",
		"cpp":        "the cpp language server is not installed (clangd is not in PATH); install it with: apt install clangd",
		"rust":       "the rust language server is not installed (rust-analyzer is not in PATH); install it with: rustup component add rust-analyzer",
	}
	for lang, msg := range want {
		err := m.Installed(context.Background(), lang)
		wantKind(t, err, tool.KindUnavailable, msg)
	}
	wantKind(t, m.Installed(context.Background(), "cobol"), tool.KindNotFound, `no language server is configured for "cobol"`)

	// A query: the same answer, through the capability, with the language
	// picked by extension.
	root := t.TempDir()
	writeFile(t, root, "a.py", "x = 1\n")
	c, err := NewCapability(m, func() string { return root }, fakeGate{allow: []string{""}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = serve(t, c, []string{"python"}, `{"op":"documentSymbol","path":"a.py"}`)
	wantKind(t, err, tool.KindUnavailable, want["python"])
	if starts, failures := slotStats(m, Target{Language: "python", Root: root}); starts != 1 || failures != 0 {
		t.Fatalf("starts %d, failures %d; want 1 start and no failure", starts, failures)
	}
}

// TestProbeFails checks a command that is on PATH but does not run (a
// rustup proxy without its component): not installed, with the command's
// own last line.
func TestProbeFails(t *testing.T) {
	e := newFakeEnv(t)
	langs := e.languages("crash")
	l := langs["fake"]
	l.Probe = []string{"-test.run=^$"}
	l.Install = "fake-install --now"
	langs["fake"] = l
	m := newManager(t, Config{Languages: langs})
	_, err := m.DocumentSymbols(context.Background(), e.target(), "a.fk")
	wantKind(t, err, tool.KindUnavailable, "the fake language server is not installed ("+l.Command+" -test.run=^$ fails: fake: crashing on purpose); install it with: fake-install --now")
	if _, failures := slotStats(m, e.target()); failures != 0 {
		t.Fatalf("a server that is not installed counted %d failures", failures)
	}
	// Without a Probe the same crash is a crash: failed, and counted.
	l.Probe = nil
	langs["fake"] = l
	m = newManager(t, Config{Languages: langs})
	_, err = m.DocumentSymbols(context.Background(), e.target(), "a.fk")
	wantKind(t, err, tool.KindFailed, "fake: crashing on purpose")
	if _, failures := slotStats(m, e.target()); failures != 1 {
		t.Fatalf("a crash counted %d failures, want 1", failures)
	}
}

// TestRustupProxy runs the machine's rust-analyzer when it is a rustup
// proxy whose toolchain lacks the component: the default rust language
// says it is not installed and how to add it.
func TestRustupProxy(t *testing.T) {
	bin, err := exec.LookPath("rust-analyzer")
	if err != nil {
		t.Skip("no rust-analyzer on PATH")
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err == nil {
		t.Skipf("rust-analyzer is installed (%s)", strings.TrimSpace(string(out)))
	}
	m := newManager(t, Config{})
	err = m.Installed(context.Background(), "rust")
	wantKind(t, err, tool.KindUnavailable, "the rust language server is not installed (rust-analyzer --version fails: error: Unknown binary 'rust-analyzer' in official toolchain")
	wantKind(t, err, tool.KindUnavailable, "); install it with: rustup component add rust-analyzer")
	t.Logf("%v", err)
}

// writeFile writes content to rel under root, making its directories.
func writeFile(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
