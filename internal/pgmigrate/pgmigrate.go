// Package pgmigrate brings a PostgreSQL schema up to date for replicas that
// may start at once: the memory store's tables and the task store's, each
// a numbered list of migrations recorded in a table of its own.
package pgmigrate

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema is one component's tables.
type Schema struct {
	// Table records the versions run (created when missing). Each schema
	// has its own, so that one component's versions never read as
	// another's.
	Table string
	// Lock is the pg_advisory_xact_lock key that serializes the schema's
	// migrations across replicas.
	Lock int64
	// Steps are the migrations, in order: Steps[i] takes the schema from
	// version i to i+1. Append only: a started database has run the
	// earlier ones.
	Steps []string
}

// Run runs the migrations the database lacks, in one transaction that
// first takes the schema's advisory lock: replicas starting at once wait
// for each other instead of racing to create the same tables, and each
// finds the versions the first one recorded. Running it again changes
// nothing. A database whose schema is newer than s is refused.
//
// The transaction is READ COMMITTED whatever the database's
// default_transaction_isolation: under REPEATABLE READ or SERIALIZABLE its
// snapshot would be taken at its first statement, the lock's, before the
// lock is granted, and a replica that waited would not see the tables and
// versions the first one committed ("relation already exists").
func Run(ctx context.Context, pool *pgxpool.Pool, s Schema) error {
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.Lock); err != nil {
		return fmt.Errorf("advisory lock: %w", err)
	}
	// The table name is the caller's constant, never input.
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.Table+` (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return err
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+s.Table).Scan(&current); err != nil {
		return err
	}
	if current > len(s.Steps) {
		return fmt.Errorf("the database's schema is at version %d, newer than this warden's %d: upgrade warden", current, len(s.Steps))
	}
	for v := current + 1; v <= len(s.Steps); v++ {
		if _, err := tx.Exec(ctx, s.Steps[v-1]); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.Table+` (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("record version %d: %w", v, err)
		}
	}
	return tx.Commit(ctx)
}
