package osfile_test

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/warden-run/warden/internal/osfile"
)

// TestWriteAtomicSteps: a write reports its four steps in order, the file
// then holds the data with the mode asked for (where the system has Unix
// modes), and no temp file is left.
// (Both callers' crash tests kill a writer at each step in a subprocess.)
func TestWriteAtomicSteps(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var steps []osfile.Step
	w := osfile.Write{Perm: 0o600, TempPrefix: ".tmp-", Reached: func(s osfile.Step) { steps = append(steps, s) }}
	if err := osfile.WriteAtomic(root, "f", []byte("the new content"), w); err != nil {
		t.Fatal(err)
	}
	if want := osfile.WriteSteps()[:4]; !slices.Equal(steps, want) {
		t.Errorf("steps %q, want %q", steps, want)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(got) != "the new content" {
		t.Errorf("file holds %q (%v)", got, err)
	}
	info, err := os.Stat(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	// Windows has no Unix modes: Go reports a writable file as 0666
	// whatever Perm asked for.
	if perm := info.Mode().Perm(); runtime.GOOS != "windows" && perm&^0o600 != 0 {
		t.Errorf("mode %v, want at most 0600 (the rename kept the new file's mode)", perm)
	}
	assertNoTemp(t, dir)
}

// TestWriteAtomicFailureRemovesTemp: a rename that fails (over a
// directory) leaves name as it was and no temp file behind.
func TestWriteAtomicFailureRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d", "inside"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var steps []osfile.Step
	err = osfile.WriteAtomic(root, "d", []byte("x"), osfile.Write{Perm: 0o644, TempPrefix: ".tmp-", Reached: func(s osfile.Step) { steps = append(steps, s) }})
	if err == nil {
		t.Fatal("a rename over a directory that is not empty succeeded")
	}
	if slices.Contains(steps, osfile.StepRenamed) {
		t.Errorf("steps %q include %q after a failed rename", steps, osfile.StepRenamed)
	}
	if info, err := os.Lstat(filepath.Join(dir, "d")); err != nil || !info.IsDir() {
		t.Errorf("d after the failed write: %v, %v", info, err)
	}
	assertNoTemp(t, dir)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}
}
