package lsp

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"
)

// readDirFS counts the directories read and runs onRead after each one.
type readDirFS struct {
	fs.FS
	reads  []string
	onRead func(name string)
}

func (r *readDirFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r.reads = append(r.reads, name)
	if r.onRead != nil {
		r.onRead(name)
	}
	return fs.ReadDir(r.FS, name)
}

func tree() fstest.MapFS {
	return fstest.MapFS{
		"a/x.txt":     {Data: []byte("x")},
		"b/y.txt":     {Data: []byte("y")},
		"c/d/main.go": {Data: []byte("package main")},
	}
}

func TestFindFile(t *testing.T) {
	got, complete := findFile(context.Background(), tree(), []string{".go"})
	if got != "c/d/main.go" || !complete {
		t.Fatalf("findFile = %q, %v; want c/d/main.go, true", got, complete)
	}
	got, complete = findFile(context.Background(), tree(), []string{".py"})
	if got != "" || !complete {
		t.Fatalf("findFile of an absent extension = %q, %v; want \"\", true", got, complete)
	}
}

// TestFindFileStopsWhenContextEnds ends the context while the walk reads
// directory "a" and checks that no further directory is read and that the
// answer says the walk was incomplete (so noFiles never concludes "no
// files" from a walk the deadline cut short).
func TestFindFileStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fsys := &readDirFS{FS: tree()}
	fsys.onRead = func(name string) {
		if name == "a" {
			cancel()
		}
	}
	got, complete := findFile(ctx, fsys, []string{".go"})
	if got != "" || complete {
		t.Fatalf("findFile after cancel = %q, %v; want \"\", false", got, complete)
	}
	if want := []string{".", "a"}; len(fsys.reads) != len(want) || fsys.reads[0] != want[0] || fsys.reads[1] != want[1] {
		t.Fatalf("directories read = %q; want %q (nothing after the cancel)", fsys.reads, want)
	}

	// An already-ended context reads nothing at all.
	fsys = &readDirFS{FS: tree()}
	if _, complete := findFile(ctx, fsys, []string{".go"}); complete || len(fsys.reads) != 0 {
		t.Fatalf("findFile with an ended context: complete %v, read %q; want false, nothing", complete, fsys.reads)
	}
}
