package osfile

import (
	"errors"
	"os"
)

// ErrLocked is TryLock's error when another open file holds the lock.
var ErrLocked = errors.New("locked by another open file")

// TryLock takes an exclusive lock on f without waiting. The lock belongs to
// the open file, not to the process: two opens of the same file exclude
// each other even in one process (so it serializes goroutines too), and the
// system drops it when the file is closed or its process dies, even by
// kill -9. With another open file holding it, the error is ErrLocked.
//
// Unix: flock(LOCK_EX|LOCK_NB) on the whole file. Windows: LockFileEx on
// every byte the file can have. Windows locks are mandatory: lock a file
// that holds no data, kept for locking only.
func TryLock(f *os.File) error { return tryLock(f) }

// Lock takes the same lock as TryLock, waiting for it as long as it takes.
func Lock(f *os.File) error { return lock(f) }

// Unlock releases a lock taken by TryLock or Lock. Closing f releases it
// too.
func Unlock(f *os.File) error { return unlock(f) }
