//go:build windows

package osfile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// allBytes is the locked range: every byte a file can have, as LockFileEx
// takes it (low and high halves of a 64-bit length).
const allBytes = ^uint32(0)

func tryLock(f *os.File) error {
	err := lockFileEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrLocked
	}
	return err
}

func lock(f *os.File) error { return lockFileEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK) }

func lockFileEx(f *os.File, flags uint32) error {
	var ol windows.Overlapped // offset 0
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, allBytes, allBytes, &ol)
}

func unlock(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, allBytes, allBytes, &ol)
}
