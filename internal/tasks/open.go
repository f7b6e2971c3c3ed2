package tasks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/warden-run/warden/internal/backendurl"
)

// Options say which store to open, as config has it (tasks.backend and
// memory.postgres; see config.Config.TasksBackend).
type Options struct {
	// Backend is "file" (or empty) for the file store in Dir, or a
	// postgres:// URL.
	Backend string
	// Dir is the file store's directory: DefaultDir of the project root.
	Dir string
	// MaxConns and QueryTimeout bound PostgreSQL's connections and
	// statements (memory.postgres.max_conns, .query_timeout).
	MaxConns     int
	QueryTimeout time.Duration
	// Now is the clock of Created and Updated stamps; nil is time.Now.
	Now func() time.Time
	// Logger is told of records the file store leaves out (unreadable);
	// nil is slog.Default().
	Logger *slog.Logger
}

// OperatorStore is a store with the operator's view of it (the CLI's).
type OperatorStore interface {
	Store
	Operator
}

// Open opens the store o names. Its errors never show a backend URL's
// password.
func Open(ctx context.Context, o Options) (Store, error) { return OpenOperator(ctx, o) }

// OpenOperator is Open for the `warden tasks` CLI, which sees every
// owner's tasks.
func OpenOperator(ctx context.Context, o Options) (OperatorStore, error) {
	if err := backendurl.Check(o.Backend); err != nil {
		return nil, fmt.Errorf("tasks: config key tasks.backend: %w", err)
	}
	if o.Backend == "" || o.Backend == "file" {
		if o.Dir == "" {
			return nil, fmt.Errorf("tasks: the file store has no directory")
		}
		s, err := OpenFile(o.Dir, o.Now)
		if err != nil {
			return nil, err
		}
		s.logger = o.Logger
		return s, nil
	}
	return OpenPostgres(ctx, o.Backend, PostgresOptions{MaxConns: o.MaxConns, QueryTimeout: o.QueryTimeout, Now: o.Now})
}
