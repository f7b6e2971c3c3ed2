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
// .env, and the gate refuses it by the .env rule; an upper-cased absolute
// spelling of a file finds its root and resolves to a file that opens; a
// grant of src does not reach SRC (on a case-sensitive volume another
// directory).
func TestHostFileSystemIgnoresCaseAsTheRulesDo(t *testing.T) {
	g, proj := caselessProject(t)
	if _, err := g.Check("read", Read, "t", []string{"."}, ".ENV"); err == nil || err.Error() != ruleDenial(".ENV", ".env", SourceBuiltin) {
		t.Errorf(".ENV: %v", err)
	}
	if _, err := g.Check("read", Read, "t", []string{"src"}, "SRC/a.go"); err == nil {
		t.Error("grant src reaches SRC/a.go")
	}
	upper := strings.ToUpper(filepath.Join(proj, "src", "a.go"))
	tg, err := g.Check("read", Read, "t", []string{"."}, upper)
	if err != nil || tg.Rel != "SRC/A.GO" {
		t.Fatalf("%s: %q, %v", upper, tg.Rel, err)
	}
	real, err := g.Resolve("read", Read, "t", []string{"."}, tg, true)
	if err != nil {
		t.Fatalf("resolve %s: %v", upper, err)
	}
	if _, err := os.Stat(real); err != nil {
		t.Errorf("%s resolves to %s, which does not open: %v", upper, real, err)
	}
}
