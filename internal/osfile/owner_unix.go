//go:build unix

package osfile

import (
	"io/fs"
	"os"
	"syscall"
)

// ownerOf compares with the effective uid: the one files are created and
// opened as.
func ownerOf(_ string, info fs.FileInfo) (owner, user Principal, mine bool, err error) {
	user = Principal{UID: os.Geteuid()}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return user, user, true, nil // no uid to compare
	}
	owner = Principal{UID: int(st.Uid)}
	return owner, user, owner.UID == user.UID, nil
}

func checkPrivate(path string, info fs.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no uid to compare
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return &NotOwnedError{Path: path, Owner: Principal{UID: int(st.Uid)}, User: Principal{UID: uid}}
	}
	if perm := info.Mode().Perm(); perm&0o022 != 0 {
		return &WritableError{Path: path, Mode: perm}
	}
	return nil
}
