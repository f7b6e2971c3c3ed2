package osfile

import (
	"io/fs"
	"os"
)

// OpenFile is os.OpenFile that does not follow a symbolic link (on Windows,
// any name-surrogate reparse point: a symlink or a junction) in name's last
// component: it fails with an *fs.PathError whose Err is syscall.ELOOP, as
// open(O_NOFOLLOW) does on Linux and macOS. Links in the components before
// the last are followed as usual.
func OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return openNoFollow(name, flag, perm, opener{os.OpenFile, os.Lstat})
}

// OpenFileIn is OpenFile for a name inside root. (*os.Root).OpenFile
// itself follows a link that stays inside the root whatever the flags say
// (it resolves links component by component to keep them inside), so a
// no-follow flag passed to it is ignored; OpenFileIn is the open that
// refuses the link.
func OpenFileIn(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	return openNoFollowIn(root, name, flag, perm)
}

// Links is the number of names (hard links) a file has. info describes it;
// f, when not nil, is the file opened: Windows keeps the count out of
// FileInfo and reads it from the open file. Where the system does not say,
// Links is 1.
func Links(info fs.FileInfo, f *os.File) uint64 { return links(info, f) }

// opener opens and lstats names in one place: the working directory (os)
// or a root.
type opener struct {
	open  func(name string, flag int, perm fs.FileMode) (*os.File, error)
	lstat func(name string) (fs.FileInfo, error)
}
