//go:build windows

package codecache

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnsafeDirRefusedWindows: a cache dir whose DACL lets the Users group
// write is refused, naming the group's SID and the icacls command that
// makes it private; made private that way, it is accepted.
func TestUnsafeDirRefusedWindows(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	openGuard(t, dir) // a new dir under the user's temp dir is private
	if out, err := exec.Command("icacls", dir, "/grant", "*S-1-5-32-545:(OI)(CI)M").CombinedOutput(); err != nil {
		t.Fatalf("icacls /grant: %v\n%s", err, out)
	}
	_, err := Open(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "writable by others") || !strings.Contains(err.Error(), "S-1-5-32-545") ||
		!strings.Contains(err.Error(), `icacls "`+dir+`" /inheritance:r`) {
		t.Fatalf("Open of a dir Users may write = %v", err)
	}
	if out, err := exec.Command("icacls", dir, "/inheritance:r", "/grant:r", os.Getenv("USERNAME")+":(OI)(CI)F").CombinedOutput(); err != nil {
		t.Fatalf("icacls (the fix the message gives): %v\n%s", err, out)
	}
	if _, err := Open(dir, nil); err != nil {
		t.Fatalf("Open after the fix: %v", err)
	}
}
