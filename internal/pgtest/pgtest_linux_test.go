//go:build linux

package pgtest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestServerOutlivesTheStartingThread: postgres's parent-death signal is
// tied to the OS thread that forked it; a test goroutine that starts the
// server from a thread it then abandons (a goroutine locked to its thread
// exits: the thread ends, as the LSP manager's spawner does on Close) must
// not take the server down with that thread.
func TestServerOutlivesTheStartingThread(t *testing.T) {
	s := New()
	t.Cleanup(s.Stop) // after the database's own cleanup, which needs the server
	type started struct {
		url string
		tid int
	}
	done := make(chan started)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if syscall.Gettid() == os.Getpid() {
			// Go never ends the main thread; another goroutine gets one.
			go func() { runtime.LockOSThread(); done <- started{s.DB(t), syscall.Gettid()} }()
			select {} // holds the main thread so that the goroutine above cannot run on it
		}
		done <- started{s.DB(t), syscall.Gettid()}
	}()
	st := <-done
	task := fmt.Sprintf("/proc/self/task/%d", st.tid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) { // polling for the thread's exit, not a wait for luck
		if _, err := os.Stat(task); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d did not exit", st.tid)
		}
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, st.url)
	if err != nil {
		t.Fatalf("the server died with the thread that started it: %v", err)
	}
	defer conn.Close(ctx)
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}
