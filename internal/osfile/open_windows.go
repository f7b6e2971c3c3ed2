//go:build windows

package osfile

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileAttributeTagInfo is FILE_ATTRIBUTE_TAG_INFO.
type fileAttributeTagInfo struct {
	FileAttributes uint32
	ReparseTag     uint32
}

// reparseTagNameSurrogate marks a reparse point that names another file
// (symlinks, junctions), as IsReparseTagNameSurrogate tests it.
const reparseTagNameSurrogate = 0x20000000

// openNoFollow opens name's last component itself, not what a reparse
// point there refers to (FILE_FLAG_OPEN_REPARSE_POINT), and refuses it if
// it is a link. A reparse point that is not a link (a cloud-files
// placeholder, a deduplicated file) is opened again normally, so that its
// filter serves the content, and must be the same file.
func openNoFollow(name string, flag int, perm fs.FileMode, o opener) (*os.File, error) {
	f, err := o.open(name, flag|syscall.FILE_FLAG_OPEN_REPARSE_POINT, perm)
	if err != nil {
		// Opening a directory link for writing fails before any check
		// here can run (access denied, reported as EISDIR): it is still
		// a link, refused as one.
		if info, lerr := o.lstat(name); lerr == nil && info.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
		}
		return nil, err
	}
	var tag fileAttributeTagInfo
	if err := windows.GetFileInformationByHandleEx(windows.Handle(f.Fd()), windows.FileAttributeTagInfo,
		(*byte)(unsafe.Pointer(&tag)), uint32(unsafe.Sizeof(tag))); err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if tag.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT == 0 {
		return f, nil
	}
	if tag.ReparseTag&reparseTagNameSurrogate != 0 {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
	}
	g, err := o.open(name, flag&^(os.O_CREATE|os.O_EXCL|os.O_TRUNC), perm)
	if err != nil {
		f.Close()
		return nil, err
	}
	same, err := sameFile(f, g)
	f.Close()
	if err != nil || !same {
		g.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
	}
	return g, nil
}

func sameFile(a, b *os.File) (bool, error) {
	var x, y windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(a.Fd()), &x); err != nil {
		return false, err
	}
	if err := windows.GetFileInformationByHandle(windows.Handle(b.Fd()), &y); err != nil {
		return false, err
	}
	return x.VolumeSerialNumber == y.VolumeSerialNumber && x.FileIndexHigh == y.FileIndexHigh && x.FileIndexLow == y.FileIndexLow, nil
}

func openNoFollowIn(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	return openNoFollow(name, flag, perm, opener{root.OpenFile, root.Lstat})
}

func links(_ fs.FileInfo, f *os.File) uint64 {
	if f == nil {
		return 1
	}
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &d); err != nil {
		return 1
	}
	return uint64(d.NumberOfLinks)
}
