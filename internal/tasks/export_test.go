package tasks

// The advisory lock keys, for tests that hold a lock to line up waiters.
var (
	SchemaLock = pgSchema.Lock
	CreateLock = createLock
)
