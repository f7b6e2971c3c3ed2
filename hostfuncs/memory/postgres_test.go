package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/warden-run/warden/tool"
)

// TestPostgresConcurrentStartsMigrateOnce: replicas starting at once on an
// empty database all come up, and the schema is migrated exactly once.
func TestPostgresConcurrentStartsMigrateOnce(t *testing.T) {
	url := pg.DB(t)
	dir := t.TempDir()
	const replicas = 6
	var wg sync.WaitGroup
	ms := make([]*Memory, replicas)
	for i := range replicas {
		wg.Go(func() {
			m, err := NewContext(t.Context(), Config{ProjectRoot: dir, Backend: url}, nil)
			if err != nil {
				t.Errorf("replica %d: %v", i, err)
				return
			}
			ms[i] = m
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for _, m := range ms {
		defer m.Close()
	}
	mustServe(t, ms[0], rw, req{"op": "set", "topic": "a", "value": "x"})
	if r := mustServe(t, ms[replicas-1], rw, req{"op": "get", "topic": "a"}); r["value"] != "x" {
		t.Fatalf("get on another replica: %v", r)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var rows, max int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM warden_schema_migrations`).Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != len(migrations) || max != len(migrations) {
		t.Fatalf("migrations table: %d rows, max version %d; want %d", rows, max, len(migrations))
	}
	// A schema newer than this warden is refused, naming both versions.
	if _, err := conn.Exec(t.Context(), `INSERT INTO warden_schema_migrations (version) VALUES (999)`); err != nil {
		t.Fatal(err)
	}
	_, err = NewContext(t.Context(), Config{ProjectRoot: dir, Backend: url}, nil)
	if err == nil || !strings.Contains(err.Error(), "schema is at version 999, newer than this warden's 2") {
		t.Fatalf("newer schema: %v", err)
	}
}

// TestPostgresQueryTimeout: an append blocked on a row another session holds
// fails with timeout once memory.postgres.query_timeout passes, the call's
// own cancellation is told apart, and the next request works.
func TestPostgresQueryTimeout(t *testing.T) {
	url := pg.DB(t)
	// Operations expected to succeed (connecting included) run under a
	// generous bound, since a loaded machine may take longer than 300 ms
	// for them; only the append that must block past it gets the short one.
	m, err := NewContext(t.Context(), Config{ProjectRoot: t.TempDir(), Backend: url, QueryTimeout: time.Minute, MaxConns: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	backend := m.front.Load().backend.(*pgBackend)
	// setTimeout changes the bound as if the backend had been configured
	// with d: the server's statement_timeout on each pooled connection (the
	// test holds all of them, so it reaches each) and the client's own.
	// Nothing runs concurrently, so the bound may change in place.
	setTimeout := func(d time.Duration) {
		t.Helper()
		var held []*pgxpool.Conn
		for range backend.pool.Config().MaxConns {
			c, err := backend.pool.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
			if _, err := c.Exec(t.Context(), fmt.Sprintf("SET statement_timeout = %d", d.Milliseconds())); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range held {
			c.Release()
		}
		backend.timeout = d
	}
	mustServe(t, m, rw, req{"op": "set", "topic": "log", "value": "a"})

	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM warden_memories WHERE topic = 'log' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	setTimeout(300 * time.Millisecond)
	_, err = serve(t, m, rw, req{"op": "append", "topic": "log", "value": "b"})
	wantKind(t, err, tool.KindTimeout)
	if want := `timeout: memory append "log": the memory backend did not answer within 300ms (config key memory.postgres.query_timeout)`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = m.Serve(ctx, rw, []byte(`{"op":"append","topic":"log","value":"c"}`))
	wantKind(t, err, tool.KindCancelled)
	tx.Rollback(t.Context())
	setTimeout(time.Minute)

	mustServe(t, m, rw, req{"op": "append", "topic": "log", "value": "d"})
	if r := mustServe(t, m, rw, req{"op": "get", "topic": "log"}); r["value"] != "ad" {
		t.Fatalf("after the timeouts: %v", r)
	}
}

func TestPostgresBadBackend(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ backend, want string }{
		{"mysql://x", `memory: config key memory.backend: must be "file" or a postgres:// URL`},
		{"postgres://u:hunter2@127.0.0.1:bad/db", "config key memory.backend"},
		// Nobody listens on port 1.
		{"postgres://u:hunter2@127.0.0.1:1/db?connect_timeout=5", "memory: postgres://u@127.0.0.1:1/db: migrate the schema"},
		// A / in the password ends pgx's userinfo: hunter2 would be the
		// database name its connection error shows. Refused, unquoted.
		{"postgres://u:12/hunter2@127.0.0.1:1/db", "memory: config key memory.backend: the postgres:// URL has an @ outside its user:password@ part"},
		{"postgres://u:hun@ter2@127.0.0.1:1/db", "has an @ outside its user:password@ part"},
		// A ? in the password is pgx's userinfo still (net/url would read
		// port 12 and a query): the id names user, host and database only.
		{"postgres://u:12?hunter2@127.0.0.1:1/db?connect_timeout=5", "memory: postgres://u@127.0.0.1:1/db: migrate the schema"},
	} {
		_, err := NewContext(t.Context(), Config{ProjectRoot: dir, Backend: c.backend}, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("backend %q: %v (want it to contain %q and no password)", c.backend, err, c.want)
		}
	}
}

// TestPostgresReloadKeepsBackend: a reload naming another backend keeps the
// running one (it is read at start), while the other keys apply.
func TestPostgresReloadKeepsBackend(t *testing.T) {
	url := pg.DB(t)
	dir := t.TempDir()
	m, err := NewContext(t.Context(), Config{ProjectRoot: dir, Backend: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	mustServe(t, m, rw, req{"op": "set", "topic": "a", "value": "in postgres"})
	if err := m.SetConfig(Config{ProjectRoot: dir, MaxValueBytes: 3}); err != nil {
		t.Fatal(err)
	}
	if r := mustServe(t, m, rw, req{"op": "get", "topic": "a"}); r["value"] != "in " || r["truncated"] != true {
		t.Fatalf("after reload: %v", r)
	}
}

// TestPostgresSpentStates: a requestState nonce is fresh once across every
// capability on the database (replicas); the file backend has no ledger.
func TestPostgresSpentStates(t *testing.T) {
	url := pg.DB(t)
	dir := t.TempDir()
	a, err := NewContext(t.Context(), Config{ProjectRoot: dir, Backend: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewContext(t.Context(), Config{ProjectRoot: dir, Backend: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	expires := time.Now().Add(time.Minute)
	if fresh, err := a.SpentStates().Spend(t.Context(), "n1", expires); !fresh || err != nil {
		t.Fatalf("first spend: %v, %v", fresh, err)
	}
	if fresh, err := b.SpentStates().Spend(t.Context(), "n1", expires); fresh || err != nil {
		t.Fatalf("second spend on another replica: %v, %v", fresh, err)
	}
	// Expired nonces are forgotten by later spends.
	if _, err := a.SpentStates().Spend(t.Context(), "old", time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SpentStates().Spend(t.Context(), "n2", expires); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM warden_spent_states WHERE nonce = 'old'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("expired nonce kept: %d, %v", n, err)
	}
	file, err := New(Config{ProjectRoot: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if file.SpentStates() != nil {
		t.Fatal("the file backend offers a ledger")
	}
}
