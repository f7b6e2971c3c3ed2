//go:build linux

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir    string // data, socket and log live below it
	port   int
	bin    string
	cred   *syscall.Credential // nil when not root
	nextDB atomic.Int64
	// once starts the server on the first DB; startErr is how it failed.
	once     sync.Once
	startErr error
	lock     *os.File // flocked while this process uses dir (sweep)
	proc     *os.Process
	exited   chan error
	// forker holds the OS thread postgres was forked from until Stop
	// (see startPostgres); closing it lets that thread exit.
	forker  chan struct{}
	missing string // why there is no server; Server is otherwise unused
}

// New returns a server that starts on the first DB call, so that a test
// binary whose selected tests need no database (or a test's subprocess
// running the same binary) starts none. Stop it in TestMain after m.Run.
func New() *Server { return &Server{} }

// start initializes and starts the server. With PostgreSQL not installed it
// sets missing, so that DB skips (or fails under CI) each test.
func (s *Server) start() error {
	bin, err := findBin()
	if err != nil {
		s.missing = err.Error()
		return nil
	}
	base := os.TempDir()
	if os.Geteuid() == 0 && !traversable(base) {
		// The server's user must reach its directory: a root-only TMPDIR
		// will not do, /tmp (sticky, world-writable) will.
		base = "/tmp"
	}
	sweep(base)
	// The lock, held while this process lives, tells a sweep that the
	// directory is in use; the kernel drops it when the process dies. The
	// directory gets the name sweeps look at only once it is locked.
	tmp, err := os.MkdirTemp(base, "warden-pginit-")
	if err != nil {
		return err
	}
	lock, err := os.Create(filepath.Join(tmp, lockName))
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	}
	dir := filepath.Join(base, "warden-pg-"+strings.TrimPrefix(filepath.Base(tmp), "warden-pginit-"))
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("pgtest: lock %s: %w", tmp, err)
	}
	s.dir, s.bin, s.lock = dir, bin, lock
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			s.Stop()
			return fmt.Errorf("pgtest: running as root, and there is no user nobody to run postgres as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			s.Stop()
			return err
		}
	}
	if out, err := s.cmd("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		s.Stop()
		return fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// A port picked free can be taken before postgres binds it: retry.
	for attempt := 0; ; attempt++ {
		err := s.startPostgres()
		if err == nil {
			return nil
		}
		if attempt == 3 {
			logData, _ := os.ReadFile(filepath.Join(dir, "log"))
			s.Stop()
			return fmt.Errorf("pgtest: postgres: %v\n%s", err, logData)
		}
	}
}

// lockName is the file whose flock marks a server directory in use.
const lockName = "owner.lock"

// startPostgres runs postgres as this process's child (not daemonized by
// pg_ctl) with a parent-death signal: if the test binary dies without
// Stop (a panic, a go test timeout), the kernel sends the postmaster
// SIGQUIT, its immediate shutdown, and no server outlives the tests.
func (s *Server) startPostgres() error {
	var err error
	if s.port, err = freePort(); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(s.dir, "log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := s.cmd("postgres", "-D", s.data(), "-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Go sets the parent-death signal after switching credentials, which
	// would otherwise clear it.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	// Pdeathsig fires when the thread that forked postgres exits, not the
	// process (go.dev/issue/27505), and Go ends a thread when a goroutine
	// locked to it exits: the LSP manager's spawner does that on Close, and
	// a test binary's goroutines share threads. Forking from a goroutine
	// that locks its thread and holds it until Stop keeps postgres alive
	// exactly as long as the tests need it.
	forker := make(chan struct{})
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		started <- cmd.Start()
		<-forker
	}()
	if err := <-started; err != nil {
		close(forker)
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-exited:
			close(forker)
			return fmt.Errorf("exited before accepting connections: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL())
		cancel()
		if err == nil {
			conn.Close(context.Background())
			s.proc, s.exited, s.forker = cmd.Process, exited, forker
			return nil
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			close(forker)
			return fmt.Errorf("not accepting connections after a minute: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling for readiness, not a wait for luck
	}
}

// Stop stops the server (immediate shutdown: the data is thrown away) and
// removes its files.
func (s *Server) Stop() {
	if s == nil || s.dir == "" {
		return
	}
	if s.proc != nil {
		s.proc.Signal(syscall.SIGQUIT)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			s.proc.Kill()
			<-s.exited
		}
	}
	if s.forker != nil {
		close(s.forker)
		s.forker = nil
	}
	os.RemoveAll(s.dir)
	s.lock.Close()
	s.dir = ""
}

// sweep removes the server directories under base whose owner died without
// Stop (its lock is free); their servers died with it (Pdeathsig).
func sweep(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, "warden-pg-*"))
	for _, d := range dirs {
		f, err := os.Open(filepath.Join(d, lockName))
		if err != nil {
			continue // not ours, or still being created
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if _, err := os.Stat(filepath.Join(d, "data", "postmaster.pid")); err != nil || !alive(d) {
				os.RemoveAll(d)
			}
		}
		f.Close()
	}
}

// alive reports whether the postmaster recorded in dir still runs.
func alive(dir string) bool {
	raw, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
	if err != nil {
		return false
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return err == nil && syscall.Kill(pid, 0) == nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred} // nil: this process's own
	return cmd
}

// URL is the server's admin URL (database postgres).
func (s *Server) URL() string { return s.url("postgres") }

func (s *Server) url(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// DB creates a fresh database for t and returns its URL; it is dropped at
// cleanup. Without PostgreSQL it skips t, or fails it when CI is set.
func (s *Server) DB(t testing.TB) string {
	t.Helper()
	s.once.Do(func() { s.startErr = s.start() })
	if s.startErr != nil {
		t.Fatalf("%v", s.startErr)
	}
	if s.missing != "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required under CI: %s", s.missing)
		}
		t.Skipf("PostgreSQL is not installed (%s): apt-get install postgresql to run this test", s.missing)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.nextDB.Add(1))
	s.admin(t, "CREATE DATABASE "+name)
	t.Cleanup(func() { s.admin(t, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return s.url(name)
}

func (s *Server) admin(t testing.TB, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// findBin returns the newest /usr/lib/postgresql/<v>/bin holding initdb,
// or the directory of initdb on PATH; postgres must be beside it.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if d := filepath.Dir(p); isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres under /usr/lib/postgresql/*/bin or on PATH")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// traversable reports whether every directory from / to dir lets others
// through (x for others).
func traversable(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil || info.Mode().Perm()&0o001 == 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func isExec(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	_, port, _ := strings.Cut(ln.Addr().String(), ":")
	return strconv.Atoi(port)
}
