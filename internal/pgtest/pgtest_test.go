package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

var server *Server

func TestMain(m *testing.M) {
	server = New()
	code := m.Run()
	server.Stop()
	os.Exit(code)
}

// TestDatabasesAreSeparate checks that a test's database is its own and
// answers queries.
func TestDatabasesAreSeparate(t *testing.T) {
	a, b := server.DB(t), server.DB(t)
	if a == b {
		t.Fatalf("two tests got the same database %s", a)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

// recorder is the testing.TB DB reports to: it records the first Skipf or
// Fatalf and stops DB there, as they would, by panicking with itself.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	panic(r)
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r)
}

func dbWithout(t *testing.T) (r *recorder) {
	r = &recorder{TB: t}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	s := &Server{missing: "no initdb"}
	s.once.Do(func() {}) // as if start had found no PostgreSQL
	s.DB(r)
	return r
}

// TestMissingPostgres: without PostgreSQL a test skips saying what to
// install, but fails under CI.
func TestMissingPostgres(t *testing.T) {
	t.Setenv("CI", "")
	if r := dbWithout(t); r.failed != "" || !strings.Contains(r.skipped, "apt-get install postgresql") {
		t.Fatalf("without CI: skipped %q, failed %q", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	if r := dbWithout(t); r.skipped != "" || !strings.Contains(r.failed, "PostgreSQL is required under CI: no initdb") {
		t.Fatalf("under CI: skipped %q, failed %q", r.skipped, r.failed)
	}
}
