package osfile

import (
	"errors"
	"io/fs"
	"os"
)

// OpenDirIn's refusals: name is not a directory it will open.
var (
	ErrSymlink = errors.New("is a symbolic link")
	ErrNotDir  = errors.New("is not a directory")
	ErrSwapped = errors.New("changed while it was being opened")
)

// DirError is an OpenDirIn failure of the system's: Op says which step
// ("create", "lstat" or "open"), Err the system's error without its path,
// so that the caller names the directory as it shows it.
type DirError struct {
	Op  string
	Err error
}

func (e *DirError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *DirError) Unwrap() error { return e.Err }

// OpenDirIn opens name, a single path component, below parent without
// following a symbolic link: (*os.Root).OpenRoot follows links that stay
// inside the root, which a store of warden's own files must not do (a link
// to ".." or to another project stays inside a parent root). name is
// checked with Lstat and the directory opened must be the very one Lstat
// saw, which closes the window in which it could be swapped for a link.
// With create, a missing directory is made with perm (Mkdir never follows
// a link); made reports whether it was, and the caller then syncs parent
// (SyncDir) for the new entry to survive a crash.
//
// Its errors are ErrSymlink, ErrNotDir, ErrSwapped, or a *DirError.
func OpenDirIn(parent *os.Root, name string, create bool, perm fs.FileMode) (dir *os.Root, made bool, err error) {
	before, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := parent.Mkdir(name, perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, false, &DirError{"create", StripPath(err)}
		}
		made = true
		before, err = parent.Lstat(name)
	}
	if err != nil {
		return nil, false, &DirError{"lstat", StripPath(err)}
	}
	if before.Mode()&fs.ModeSymlink != 0 {
		return nil, false, ErrSymlink
	}
	if !before.IsDir() {
		return nil, false, ErrNotDir
	}
	r, err := parent.OpenRoot(name)
	if err != nil {
		return nil, false, &DirError{"open", StripPath(err)}
	}
	after, err := r.Stat(".")
	if err != nil || !os.SameFile(before, after) {
		r.Close()
		return nil, false, ErrSwapped
	}
	return r, made, nil
}

// SyncDir makes dir's entries (one created, renamed or removed) durable.
// Its error carries no path: the caller names dir.
func SyncDir(dir *os.Root) error {
	d, err := dir.Open(".")
	if err != nil {
		return StripPath(err)
	}
	defer d.Close()
	return StripPath(d.Sync())
}

// StripPath is err without the path an *fs.PathError carries, for a
// message that names the file as its caller shows it (relative to a store,
// never a host path).
func StripPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
