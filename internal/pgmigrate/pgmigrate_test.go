package pgmigrate_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/internal/pgmigrate"
	"github.com/warden-run/warden/internal/pgtest"
)

var pg *pgtest.Server

func TestMain(m *testing.M) {
	pg = pgtest.New()
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// TestRunAtOnceUnderRepeatableRead: replicas migrating at once each find
// the schema the first one made, whatever the database's default
// isolation (here REPEATABLE READ, whose snapshot, taken before the lock
// is granted, would miss it). The racers are lined up exactly: the test
// holds the schema's lock until every one of them waits for it.
func TestRunAtOnceUnderRepeatableRead(t *testing.T) {
	const racers = 4
	schema := pgmigrate.Schema{Table: "test_migrations", Lock: 42,
		Steps: []string{`CREATE TABLE t1 (id integer)`, `CREATE TABLE t2 (id integer)`}}
	url := pg.DB(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), 'repeatable read'); END $$`); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_lock($1)`, schema.Lock); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { errs[i] = pgmigrate.Run(t.Context(), pool, schema) })
	}
	for waiting := 0; waiting < racers; {
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_unlock($1)`, schema.Lock); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d of %d at once: %v", i+1, racers, err)
		}
	}
	var versions int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM test_migrations`).Scan(&versions); err != nil || versions != 2 {
		t.Errorf("versions recorded: %d, %v; want 2", versions, err)
	}
}
