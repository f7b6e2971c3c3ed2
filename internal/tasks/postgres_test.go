package tasks_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	// The task schema's two steps ran although the memory store's table
	// said 2 already: each counts its own.
	if memory != 2 || task != 2 {
		t.Errorf("versions: memory %d, tasks %d; want 2 and 2", memory, task)
	}
	if _, err := conn.Exec(t.Context(), `INSERT INTO warden_task_migrations (version) VALUES (99)`); err != nil {
		t.Fatal(err)
	}
	_, err = tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err == nil || !strings.Contains(err.Error(), "tasks: postgres: migrate the schema: the database's schema is at version 99, newer than this warden's 2") {
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

// repeatableRead is a fresh database whose sessions default to REPEATABLE
// READ, as an operator may set it, and a connection to it.
func repeatableRead(t *testing.T) (url string, conn *pgx.Conn) {
	t.Helper()
	url = pg.DB(t)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_isolation = %L', current_database(), 'repeatable read'); END $$`); err != nil {
		t.Fatal(err)
	}
	return url, conn
}

// waitForWaiters returns once n sessions wait for a lock in conn's
// database: lined up behind the lock the test holds, their transactions
// have begun.
func waitForWaiters(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	for {
		var waiting int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.datname = current_database()`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestPostgresRepeatableRead: a database whose default isolation is
// REPEATABLE READ changes nothing. Each race is lined up exactly: the test
// holds the lock the racers need, waits until every one of them waits for
// it (their transactions begun, so a REPEATABLE READ snapshot would already
// be taken), then lets them go.
func TestPostgresRepeatableRead(t *testing.T) {
	const racers = 6
	url, conn := repeatableRead(t)
	lock := func(key int64) {
		if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_lock($1)`, key); err != nil {
			t.Fatal(err)
		}
	}
	unlock := func(key int64) {
		if _, err := conn.Exec(t.Context(), `SELECT pg_advisory_unlock($1)`, key); err != nil {
			t.Fatal(err)
		}
	}
	open := func() (*tasks.PGStore, error) {
		s, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{MaxConns: racers})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}

	// First opens at once: each migrates or finds the schema migrated.
	lock(tasks.SchemaLock)
	stores := make([]*tasks.PGStore, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { stores[i], errs[i] = open() })
	}
	waitForWaiters(t, conn, racers)
	unlock(tasks.SchemaLock)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once: %v", i+1, racers, err)
		}
	}

	// Creates at once, one task per owner: one is stored.
	lock(tasks.CreateLock)
	created, refused := 0, 0
	var mu sync.Mutex
	for i := range racers {
		wg.Go(func() {
			task := tasks.Task{ID: tasks.NewID(), Owner: "local:a", Tool: "t", TTL: time.Hour, Replica: "r"}
			err := stores[i].Create(t.Context(), task, tasks.Bounds{PerOwner: 1})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, tasks.ErrTooMany):
				refused++
			default:
				t.Error(err)
			}
		})
	}
	waitForWaiters(t, conn, racers)
	unlock(tasks.CreateLock)
	wg.Wait()
	if created != 1 || refused != racers-1 {
		t.Fatalf("%d creates at once under PerOwner 1: %d stored, %d refused; want 1 and %d", racers, created, refused, racers-1)
	}

	// Updates at once of the row another transaction changed: each waits
	// for the one before and applies its change to what that one left.
	page, _, err := stores[0].List(t.Context(), "local:a", "", 0)
	if err != nil || len(page) != 1 {
		t.Fatalf("list: %d tasks, %v", len(page), err)
	}
	id := page[0].ID
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `UPDATE warden_tasks SET status_message = '0' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	for i := range racers {
		wg.Go(func() {
			if _, err := stores[i].Update(t.Context(), "local:a", id, tasks.Bounds{}, func(t *tasks.Task) {
				n, _ := strconv.Atoi(t.StatusMessage)
				t.StatusMessage = strconv.Itoa(n + 1)
			}); err != nil {
				t.Error(err)
			}
		})
	}
	waitForWaiters(t, conn, racers)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got, err := stores[0].Get(t.Context(), "local:a", id); err != nil || got.StatusMessage != strconv.Itoa(racers) {
		t.Errorf("after %d updates at once: message %q, %v; want %q", racers, got.StatusMessage, err, strconv.Itoa(racers))
	}
}

// TestPostgresListUsesOwnerIndex: an owner's List finds its rows through
// the (owner, created, id) index even under a generic plan (the one a
// prepared statement settles on), which a condition "owner = $2 OR <all>"
// would defeat.
func TestPostgresListUsesOwnerIndex(t *testing.T) {
	url := pg.DB(t)
	s, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, after := range []bool{false, true} {
		query := tasks.ListQuery(false, after)
		args := "1000, 'token'"
		if after {
			args += ", now(), 'x'"
		}
		var plan strings.Builder
		for _, stmt := range []string{`SET plan_cache_mode = force_generic_plan`, `SET enable_seqscan = off`, `DEALLOCATE ALL`, `PREPARE q AS ` + query} {
			if _, err := conn.Exec(t.Context(), stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		rows, err := conn.Query(t.Context(), `EXPLAIN EXECUTE q(`+args+`)`, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan.WriteString(line + "\n")
		}
		if rows.Err() != nil {
			t.Fatal(rows.Err())
		}
		if !strings.Contains(plan.String(), "warden_tasks_owner") || !regexp.MustCompile(`Index Cond: \(+owner = \$2\)`).MatchString(plan.String()) {
			t.Errorf("the generic plan of %s does not find the owner's rows through the index:\n%s", query, plan.String())
		}
	}
}

// TestPostgresListSkipsBadRows: rows written past the store that are no
// task records (an id with a terminal escape, a status none has) are left
// out of a List, and paging past them loses no task.
func TestPostgresListSkipsBadRows(t *testing.T) {
	url := pg.DB(t)
	s, err := tasks.OpenPostgres(t.Context(), url, tasks.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var good []string
	for i := range 2 {
		task := tasks.Task{ID: tasks.NewID(), Owner: "token", Tool: "t", TTL: time.Hour, Created: taskstest.Base.Add(time.Duration(2*i) * time.Second)}
		if err := s.Create(t.Context(), task, tasks.Bounds{}); err != nil {
			t.Fatal(err)
		}
		good = append(good, task.ID)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, row := range []struct{ id, status string }{{"\x1b[2J" + strings.Repeat("0", 28), "working"}, {tasks.NewID(), "paused"}} {
		if _, err := conn.Exec(t.Context(), `INSERT INTO warden_tasks (id, owner, tool, status, status_message, created, updated, ttl, expires,
			poll_interval, replica, cancel_requested) VALUES ($1, 'token', 't', $2, '', $3::timestamptz, $3::timestamptz, 3600000000000, $3::timestamptz + interval '1 hour', 0, '', false)`,
			row.id, row.status, taskstest.Base.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	var listed []string
	for cursor := ""; ; {
		page, next, err := s.List(t.Context(), "token", cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range page {
			listed = append(listed, task.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if !slices.Equal(listed, good) {
		t.Errorf("listed %q, want the task rows %q", listed, good)
	}
}
