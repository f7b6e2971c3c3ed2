//go:build unix

package osfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckPrivateUnix: a dir of the user's with no group or other write
// bit is private; one others may write to is refused with its mode.
func TestCheckPrivateUnix(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stat := func() os.FileInfo {
		info, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	if err := CheckPrivate(dir, stat()); err != nil {
		t.Fatalf("CheckPrivate(0700) = %v", err)
	}
	if err := os.Chmod(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	var we *WritableError
	if err := CheckPrivate(dir, stat()); !errors.As(err, &we) || we.Mode != 0o775 || we.Path != dir {
		t.Fatalf("CheckPrivate(0775) = %v, want a WritableError with mode 0775", err)
	}
	owner, user, mine, err := Owner(dir, stat())
	if err != nil || !mine || owner != user || owner.UID != os.Geteuid() {
		t.Fatalf("Owner = %v, %v, %v, %v; want this user's", owner, user, mine, err)
	}
}

// TestCheckPrivateForeign (attacker): a dir another uid owns is refused,
// and so is a file (Owner says whose).
func TestCheckPrivateForeign(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	dir := filepath.Join(t.TempDir(), "c")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	var no *NotOwnedError
	if err := CheckPrivate(dir, info); !errors.As(err, &no) || no.Owner.UID != 4242 || no.User.UID != 0 {
		t.Fatalf("CheckPrivate = %v, want a NotOwnedError naming uid 4242", err)
	}
	if owner, _, mine, err := Owner(dir, info); err != nil || mine || owner.UID != 4242 {
		t.Fatalf("Owner = %v, mine %v, %v; want uid 4242, not mine", owner, mine, err)
	}
}
