package tasks_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/warden-run/warden/internal/pgtest"
	"github.com/warden-run/warden/internal/tasks"
	"github.com/warden-run/warden/internal/tasks/taskstest"
)

// pg is the PostgreSQL server of this test binary (pgtest).
var pg *pgtest.Server

func TestMain(m *testing.M) {
	pg = pgtest.New() // started by the first test that asks for a database
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// TestPostgresStoreContract: the PostgreSQL store keeps the Store
// contract; each instance opened on one database stands for a replica.
func TestPostgresStoreContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) func() tasks.Store {
		url := pg.DB(t)
		return func() tasks.Store {
			s, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestPostgresSchemaBesideMemory: the task tables record their versions
// apart from the memory store's, so that either migrates a database the
// other already uses; a task schema newer than this warden is refused.
func TestPostgresSchemaBesideMemory(t *testing.T) {
	url := pg.DB(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The memory store's versions, as a database it migrated holds them.
	if _, err := conn.Exec(t.Context(), `CREATE TABLE warden_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
		INSERT INTO warden_schema_migrations (version) VALUES (1), (2)`); err != nil {
		t.Fatal(err)
	}
	s, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{}) // again: nothing to do
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var memory, task int
	if err := conn.QueryRow(t.Context(), `SELECT (SELECT max(version) FROM warden_schema_migrations), (SELECT max(version) FROM warden_task_migrations)`).Scan(&memory, &task); err != nil {
		t.Fatal(err)
	}
	if memory != 2 || task != 1 {
		t.Errorf("versions: memory %d, tasks %d; want 2 and 1", memory, task)
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO warden_task_migrations (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	_, err = tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err == nil || !strings.Contains(err.Error(), "tasks: postgres: migrate the schema: the database's schema is at version 99, newer than this warden's 1") {
		t.Errorf("a newer task schema: %v", err)
	}
}

// TestPostgresPasswordNotShown: a store that cannot connect says so
// without the URL's password.
func TestPostgresPasswordNotShown(t *testing.T) {
	_, err := tasks.OpenPostgres(t.Context(), "postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5", tasks.PostgresOptions{})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("open an unreachable database: %v", err)
	}
}
