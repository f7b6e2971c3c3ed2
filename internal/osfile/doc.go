// Package osfile holds the file primitives whose system calls differ per
// OS, behind one API: an exclusive lock on an open file (TryLock, Lock), an
// open that never follows a symbolic link in its last component (OpenFile,
// OpenFileIn), a file's link count (Links), who owns a file and who else
// may write it (Owner, CheckPrivate), and the one atomic replacement of a
// file warden's stores use (WriteAtomic), whose steps a crash test can
// kill the writer at.
//
// Unix uses flock, O_NOFOLLOW, the inode's uid and its mode bits. Windows
// uses LockFileEx, CreateFile with FILE_FLAG_OPEN_REPARSE_POINT, and the
// owner SID and DACL of the file's security descriptor. The decisions taken
// on Windows security descriptors are pure functions of the owner and the
// access-control entries (acl.go), so that they are tested on every system;
// the system-call glue around them is thin.
//
// Errors keep each system's own kinds: a link refused by a no-follow open
// is syscall.ELOOP everywhere, a lock held elsewhere is ErrLocked.
package osfile
