package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/testwasm"
)

// TestTaskExamplesBuild: the Go and the C example of docs/tasks.md are,
// byte for byte, the long-running fixtures the tests serve
// (tools-wasm/longrun, guest-sdk/c/examples/longrun.c), and both build:
// the Go one as a wasip1 reactor, the C one compiled from the document's
// own text with the C SDK's build line. A reader copying either gets code
// that compiles and that the task tests run.
func TestTaskExamplesBuild(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "tasks.md"))
	if err != nil {
		t.Fatal(err)
	}
	goSrc := block(t, string(doc), "## The Go example", "go")
	cSrc := block(t, string(doc), "## The C example", "c")
	for _, c := range []struct{ src, file string }{
		{goSrc, "tools-wasm/longrun/main.go"},
		{cSrc, "guest-sdk/c/examples/longrun.c"},
	} {
		want, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if c.src != string(want) {
			t.Errorf("docs/tasks.md's example is not %s: copy the file into the document again", c.file)
		}
	}
	if wasm := testwasm.BuildGo(t, filepath.Join(root, "tools-wasm", "longrun")); len(wasm) == 0 {
		t.Fatal("the Go example built to nothing")
	}

	clang, err := exec.LookPath("clang")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("clang not found: CI installs it (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)")
		}
		t.Skip("clang not found: the C example is not compiled")
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"warden.h", "warden.c"} {
		b, err := os.ReadFile(filepath.Join(root, "guest-sdk", "c", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(dir, "examples", "longrun.c")
	if err := os.WriteFile(src, []byte(cSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "longrun.wasm")
	args := []string{"--target=wasm32-wasi", "--sysroot=/usr", "-std=c11", "-Wall", "-Wextra", "-Werror",
		"-mexec-model=reactor", "-Wl,--strip-debug", "-O2", "-o", out, src, filepath.Join(dir, "warden.c")}
	if msg, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		t.Fatalf("the C example of docs/tasks.md does not compile: %v\n%s", err, msg)
	}
}

// block returns the text of the first fenced block of language lang after
// the heading in doc.
func block(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("docs/tasks.md has no heading %q", heading)
	}
	m := regexp.MustCompile("(?ms)^```" + lang + "\n(.*?)^```").FindStringSubmatch(doc[i:])
	if m == nil {
		t.Fatalf("docs/tasks.md has no %s block under %q", lang, heading)
	}
	return m[1]
}
