package tasks

import "context"

// Operator is a store as the person who runs the server sees it, through
// the `warden tasks` CLI on the server's own backend: every owner's tasks,
// each shown with its owner. No client request reaches it: the protocol
// holds a Store, which answers an owner its own tasks only.
type Operator interface {
	// ListAll is Store.List over every owner.
	ListAll(ctx context.Context, cursor string, limit int) ([]Task, string, error)
	// GetAny is Store.Get whoever owns the task.
	GetAny(ctx context.Context, id string) (Task, error)
	// CancelAny is Store.Cancel whoever owns the task.
	CancelAny(ctx context.Context, id string) (Task, error)
}
