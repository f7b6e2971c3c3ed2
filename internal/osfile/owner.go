package osfile

import (
	"fmt"
	"io/fs"
	"strings"
)

// Principal is who owns a file or runs this process: a uid on Unix, a
// security identifier (SID) on Windows.
type Principal struct {
	UID  int    // Unix; -1 on Windows
	SID  string // Windows: "S-1-5-21-…"; empty on Unix
	Name string // Windows: DOMAIN\name when the account is known
}

// String is "uid 1000" on Unix, "DOMAIN\name (S-1-5-21-…)" on Windows.
func (p Principal) String() string {
	switch {
	case p.SID == "":
		return fmt.Sprintf("uid %d", p.UID)
	case p.Name != "":
		return p.Name + " (" + p.SID + ")"
	}
	return p.SID
}

// Owner returns who owns the file at path that info describes (from Lstat
// or Stat of path: when info is a symbolic link's, the link's owner). The
// second result reports whether that is this process's user; on Windows
// the Administrators group also counts as the user for a process running
// elevated as one of them, as files it creates belong to the group.
func Owner(path string, info fs.FileInfo) (owner, user Principal, mine bool, err error) {
	return ownerOf(path, info)
}

// CheckPrivate checks that the file or directory at path, which info
// describes (from Stat: a link is judged by its target), belongs to this
// process's user and that no one else may write to it. It returns nil, a
// *NotOwnedError or a *WritableError.
//
// Unix: the uid must be the process's real uid and the mode must have no
// group or other write bit. Windows: the owner SID must be the user's (see
// Owner) and no allow entry of the DACL may give write access to a SID but
// the owner's, the user's, SYSTEM's, the Administrators', OWNER RIGHTS' or
// CREATOR OWNER's (a directory:
// nor to what will be created in it, through inheritable entries).
func CheckPrivate(path string, info fs.FileInfo) error { return checkPrivate(path, info) }

// NotOwnedError is CheckPrivate's error for a file another user owns.
type NotOwnedError struct {
	Path        string
	Owner, User Principal
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s belongs to %s, not to this user (%s)", e.Path, e.Owner, e.User)
}

// WritableError is CheckPrivate's error for a file others may write to.
type WritableError struct {
	Path string
	// Mode is the file's permission bits on Unix.
	Mode fs.FileMode
	// Writers, on Windows, are the SIDs the DACL lets write.
	Writers []Principal
}

// Who says who may write: "mode 0777" on Unix, the writers on Windows.
func (e *WritableError) Who() string {
	if len(e.Writers) == 0 {
		return fmt.Sprintf("mode %04o", e.Mode)
	}
	names := make([]string, len(e.Writers))
	for i, w := range e.Writers {
		names[i] = w.String()
	}
	return strings.Join(names, ", ") + " may write to it"
}

// Fix is the command that makes the file the user's alone.
func (e *WritableError) Fix() string {
	if len(e.Writers) == 0 {
		return "chmod go-w " + e.Path
	}
	return `icacls "` + e.Path + `" /inheritance:r /grant:r "%USERNAME%":(OI)(CI)F`
}

func (e *WritableError) Error() string {
	return fmt.Sprintf("%s is writable by others (%s)", e.Path, e.Who())
}
