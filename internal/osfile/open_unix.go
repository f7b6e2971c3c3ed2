//go:build unix

package osfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

func openNoFollow(name string, flag int, perm fs.FileMode, o opener) (*os.File, error) {
	return o.open(name, flag|syscall.O_NOFOLLOW, perm)
}

// openNoFollowIn opens the directory holding name's last component through
// root (so it stays inside), then the component with openat(O_NOFOLLOW).
func openNoFollowIn(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(name)
	if base == "" || base == "." || base == ".." {
		return root.OpenFile(name, flag, perm) // a directory, never a link
	}
	if dir == "" {
		dir = "."
	}
	d, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var fd int
	for {
		fd, err = unix.Openat(int(d.Fd()), base, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(root.Name(), name)), nil
}

func links(info fs.FileInfo, _ *os.File) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
