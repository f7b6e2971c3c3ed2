//go:build !unix && !windows

package osfile

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow, without a no-follow flag: the name is checked with Lstat
// and the file opened must be the one Lstat saw. A link swapped in between
// is caught by the comparison (the file opened is then the link's target).
func openNoFollow(name string, flag int, perm fs.FileMode, o opener) (*os.File, error) {
	before, lerr := o.lstat(name)
	if lerr == nil && before.Mode()&fs.ModeSymlink != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
	}
	f, err := o.open(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if lerr == nil {
		if after, err := f.Stat(); err != nil || !os.SameFile(before, after) {
			f.Close()
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
		}
	}
	return f, nil
}

func openNoFollowIn(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	return openNoFollow(name, flag, perm, opener{root.OpenFile, root.Lstat})
}

func links(fs.FileInfo, *os.File) uint64 { return 1 }
