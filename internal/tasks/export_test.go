package tasks

import "github.com/warden-run/warden/internal/osfile"

// The advisory lock keys, for tests that hold a lock to line up waiters.
var (
	SchemaLock = pgSchema.Lock
	CreateLock = createLock
)

// SetMaxResult sets what s reads of a stored result, so that a test need
// not write a GiB to pass it.
func SetMaxResult(s *FileStore, n int) { s.maxResult = n }

// ListQuery is the query of a List page (listQuery).
var ListQuery = listQuery

// OpenFileObserved is OpenFile telling step of each step it completes.
func OpenFileObserved(dir string, step func(string)) (*FileStore, error) {
	return openFile(dir, nil, func(s osfile.Step) { step(string(s)) })
}
