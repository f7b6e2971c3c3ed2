//go:build windows

package pathguard

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestHostShortNames runs on a real Windows volume with 8.3 names: the
// short name of secrets.json is refused, and longPath expands it to the
// long name the deny-list is written in.
func TestHostShortNames(t *testing.T) {
	g, proj := caselessProject(t)
	long := filepath.Join(proj, "secrets.json")
	in, err := windows.UTF16PtrFromString(long)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]uint16, 1024)
	n, err := windows.GetShortPathName(in, &buf[0], uint32(len(buf)))
	if err != nil || n == 0 {
		t.Skipf("no short name: %v", err)
	}
	short := windows.UTF16ToString(buf[:n])
	if strings.EqualFold(short, long) {
		t.Skip("8.3 names are disabled on this volume")
	}
	if got := longPath(short); !strings.EqualFold(filepath.Clean(got), filepath.Clean(long)) {
		t.Errorf("longPath(%s) = %s; want %s", short, got, long)
	}
	name := filepath.Base(short)
	if _, err := g.Check("read", Read, "t", []string{"."}, name); err == nil {
		t.Errorf("%s (short for secrets.json) allowed", name)
	}
}

// TestHostWindowsPaths: the gate takes this machine's paths in every
// Windows spelling.
func TestHostWindowsPaths(t *testing.T) {
	g, proj := caselessProject(t)
	for _, p := range []string{
		filepath.Join(proj, "src", "a.go"),
		filepath.ToSlash(filepath.Join(proj, "src", "a.go")),
		`\\?\` + filepath.Join(proj, "src", "a.go"),
		filepath.Join(proj, "src", "a.go") + "::$DATA",
	} {
		if tg, err := g.Check("read", Read, "t", []string{"src"}, p); err != nil || tg.Rel != "src/a.go" {
			t.Errorf("%s: %q, %v", p, tg.Rel, err)
		}
	}
}
