//go:build !windows && (aix || !unix)

package osfile

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// Without a lock call warden knows, locking fails: callers that need the
// lock (the memory store, the compile cache index) refuse to go on rather
// than let two writers in at once.
var errNoLock = fmt.Errorf("file locking on %s: %w", runtime.GOOS, errors.ErrUnsupported)

func tryLock(*os.File) error { return errNoLock }
func lock(*os.File) error    { return errNoLock }
func unlock(*os.File) error  { return errNoLock }
