//go:build unix

package codecache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cache dir's ownership and permissions as Unix has them: mode bits
// and uids (guard_windows_test.go has the Windows DACL's).

func TestUnsafeDirRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	os.Mkdir(dir, 0o700)
	os.Chmod(dir, 0o777)
	_, err := Open(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "writable by others") || !strings.Contains(err.Error(), "chmod go-w "+dir) {
		t.Fatalf("world-writable dir: %v", err)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := Open(file, nil); err == nil {
		t.Fatal("a file as cache dir was accepted")
	}
}

func TestNewDirIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "cache")
	openGuard(t, dir)
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		t.Fatalf("new cache dir has mode %04o", perm)
	}
}

// TestUnsafeDirMessage pins the whole refusal: what is wrong, why it
// matters and the command that fixes it.
func TestUnsafeDirMessage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	os.Mkdir(dir, 0o700)
	os.Chmod(dir, 0o775)
	_, err := Open(dir, nil)
	want := "compile cache " + dir + " is writable by others (mode 0775): compiled code is run as trusted, so warden refuses it (chmod go-w " + dir + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v\nwant %s", err, want)
	}
}

// TestForeignDirRefused (attacker): a cache dir another user owns, even
// private to them, is refused: they could write the code warden runs.
func TestForeignDirRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a dir to another user needs root")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	want := "compile cache " + dir + " belongs to uid 4242, not to this user (uid 0): compiled code is run as trusted, so warden only uses a cache dir of its own (chown it, or set tools.cache_dir)"
	if err == nil || err.Error() != want {
		t.Fatalf("Open = %v\nwant %s", err, want)
	}
}
