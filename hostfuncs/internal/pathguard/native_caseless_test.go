//go:build windows || darwin

package pathguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These run only where the file system itself ignores case (the hosted
// macOS and Windows runners): they check that the host's rules agree with
// what the file system really opens.

func caselessProject(t *testing.T) (*Guard, string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(tmp, "proj")
	for _, f := range []string{"src/a.go", ".env", "secrets.json"} {
		p := filepath.Join(proj, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, ".ENV")); err != nil {
		t.Skipf("the file system under %s is case-sensitive: %v", tmp, err)
	}
	g, err := New(Config{ProjectDir: proj, Home: filepath.Join(tmp, "home"), Deny: []string{"secrets.json"}})
	if err != nil {
		t.Fatal(err)
	}
	return g, proj
}

// TestHostFileSystemIgnoresCaseAsTheRulesDo: the file system opens .ENV as
// .env, and the gate refuses it by the .env rule; a grant of src covers
// SRC/a.go, which is the same file, and the real path of an upper-cased
// absolute spelling lies in the project root.
func TestHostFileSystemIgnoresCaseAsTheRulesDo(t *testing.T) {
	g, proj := caselessProject(t)
	if _, err := g.Check("read", Read, "t", []string{"."}, ".ENV"); err == nil || err.Error() != ruleDenial(".ENV", ".env", SourceBuiltin) {
		t.Errorf(".ENV: %v", err)
	}
	tg, err := g.Check("read", Read, "t", []string{"src"}, "SRC/a.go")
	if err != nil {
		t.Fatalf("SRC/a.go under grant src: %v", err)
	}
	real, err := g.Resolve("read", Read, "t", []string{"src"}, tg, true)
	if err != nil {
		t.Fatalf("resolve SRC/a.go: %v", err)
	}
	if _, err := os.Stat(real); err != nil {
		t.Errorf("SRC/a.go resolves to %s, which does not open: %v", real, err)
	}
	upper := strings.ToUpper(filepath.Join(proj, "src", "a.go"))
	if tg, err := g.Check("read", Read, "t", []string{"src"}, upper); err != nil || tg.Rel != "src/a.go" && tg.Rel != "SRC/A.GO" {
		t.Errorf("%s: %q, %v", upper, tg.Rel, err)
	}
}
