package memory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/warden-run/warden/internal/osfile"
)

// errRefused is a store entry the store will not use: a symbolic link, a
// file with other hard links, or an entry that changed while it was being
// opened. Path is store-relative (".warden/memories/leak.md"); the message
// never names what a link points to, nor anything of its content.
type errRefused struct {
	Path   string
	Reason string
}

func (e *errRefused) Error() string { return fmt.Sprintf("%s %s", e.Path, e.Reason) }

const (
	reasonSymlink   = "is a symbolic link; the memory store never follows links (replace it with a regular file or directory)"
	reasonHardLink  = "has %d hard links; the memory store reads only files with one name (copy it instead of linking it)"
	reasonSwapped   = "changed while it was being opened (replaced by a link or another file); try again"
	reasonNotDir    = "is not a directory"
	reasonNotRegual = "is not a regular file"
)

// dirChain is a chain of directories opened from the project root down,
// each component checked not to be a symlink. dirs[0] is the first opened
// below the project; names[i] is dirs[i]'s store-relative path.
type dirChain struct {
	dirs  []*os.Root
	names []string
}

func (c *dirChain) leaf() *os.Root { return c.dirs[len(c.dirs)-1] }
func (c *dirChain) path() string   { return c.names[len(c.names)-1] }

func (c *dirChain) close() {
	for _, d := range c.dirs {
		d.Close()
	}
}

// child is the store-relative path of name inside the chain's leaf.
func (c *dirChain) child(name string) string { return c.path() + "/" + name }

// openDirNoFollow opens name, a single path component, below parent without
// following a symlink (osfile.OpenDirIn, which the task store shares), and
// names a refusal or failure by display, name's store-relative path. With
// create, a missing directory is made; the returned bool reports whether it
// was.
func openDirNoFollow(parent *os.Root, name, display string, create bool) (*os.Root, bool, error) {
	r, made, err := osfile.OpenDirIn(parent, name, create, 0o755)
	var de *osfile.DirError
	switch {
	case err == nil:
		return r, made, nil
	case errors.Is(err, osfile.ErrSymlink):
		return nil, false, &errRefused{Path: display, Reason: reasonSymlink}
	case errors.Is(err, osfile.ErrNotDir):
		return nil, false, &errRefused{Path: display, Reason: reasonNotDir}
	case errors.Is(err, osfile.ErrSwapped):
		return nil, false, &errRefused{Path: display, Reason: reasonSwapped}
	case errors.As(err, &de) && de.Op == "lstat":
		return nil, false, fmt.Errorf("%s: %w", display, de.Err)
	case errors.As(err, &de):
		return nil, false, fmt.Errorf("%s %s: %w", de.Op, display, de.Err)
	}
	return nil, false, err
}

// openFileNoFollow opens name, a single component in dir, for reading,
// refusing a symlink and a file with more than one hard link (a hard link to
// a file outside the store, say .env, is indistinguishable from a memory
// otherwise). The file opened must be the one Lstat saw.
func openFileNoFollow(dir *os.Root, name, display string) (*os.File, os.FileInfo, error) {
	before, err := dir.Lstat(name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", display, unwrapPath(err))
	}
	if err := checkEntry(before, display, nil); err != nil {
		return nil, nil, err
	}
	f, err := osfile.OpenFileIn(dir, name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		// Lstat saw no link: one was put there since.
		return nil, nil, &errRefused{Path: display, Reason: reasonSwapped}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", display, unwrapPath(err))
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, nil, &errRefused{Path: display, Reason: reasonSwapped}
	}
	if err := checkEntry(after, display, f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, after, nil
}

// checkEntry judges what Lstat says of a topic file: a symlink or a file with
// other names is refused, anything else but a regular file does not exist
// as far as memories go. f, when not nil, is the file opened: Windows tells
// a file's link count only through it.
func checkEntry(info os.FileInfo, display string, f *os.File) error {
	switch n := osfile.Links(info, f); {
	case info.Mode()&fs.ModeSymlink != 0:
		return &errRefused{Path: display, Reason: reasonSymlink}
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s %s: %w", display, reasonNotRegual, fs.ErrNotExist)
	case n > 1:
		return &errRefused{Path: display, Reason: fmt.Sprintf(reasonHardLink, n)}
	}
	return nil
}

// unwrapPath drops the host path an *os.PathError carries, so that no
// message names a host path; callers add the store-relative one.
func unwrapPath(err error) error { return osfile.StripPath(err) }
