package osfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenFileNoFollow: a symbolic link as the last component is refused
// with ELOOP, whether it points at a file, a directory or nothing, and
// whether the open would create; a regular file opens.
func TestOpenFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Relative targets: they stay inside the root, which would follow them.
	for name, target := range map[string]string{"to-file": "file", "to-dir": ".", "dangling": "missing"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, name := range []string{"to-file", "to-dir", "dangling"} {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE} {
			if f, err := OpenFile(filepath.Join(dir, name), flag, 0o600); !errors.Is(err, syscall.ELOOP) {
				f.Close()
				t.Errorf("OpenFile(%s, %#x) = %v, want ELOOP", name, flag, err)
			}
			if f, err := OpenFileIn(root, name, flag, 0o600); !errors.Is(err, syscall.ELOOP) {
				f.Close()
				t.Errorf("OpenFileIn(%s, %#x) = %v, want ELOOP", name, flag, err)
			}
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an open through the dangling link created its target: %v", err)
	}
	f, err := OpenFile(file, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("OpenFile(file): %v", err)
	}
	f.Close()
	f, err = OpenFileIn(root, "new", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("OpenFileIn(new, O_CREATE): %v", err)
	}
	f.Close()
}

// TestLinks counts a file's names.
func TestLinks(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.WriteFile(a, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if n := Links(info, f); n != 2 {
		t.Fatalf("Links = %d, want 2", n)
	}
}
