// Package pgtest runs a throwaway PostgreSQL server for tests: initdb in a
// temp directory, postgres on a free loopback port (and a unix socket in the
// same directory), stopped at the end. One server serves a whole test binary
// (start it from TestMain); each test takes a fresh database of its own.
//
// It finds initdb and pg_ctl under /usr/lib/postgresql/*/bin (Debian's
// postgresql package) or on PATH. PostgreSQL refuses to run as root, so as
// root the server runs as the unprivileged user "nobody" (present on every
// Debian and most other systems), through the exec package's credential
// switch: no sudo, runuser or setpriv is needed, and no user is created.
//
// When PostgreSQL is missing, tests skip with a message naming the package
// to install, except when the environment variable CI is set: then they
// fail, so that CI cannot pass by testing nothing.
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
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir     string // data, socket and log live below it
	port    int
	bin     string
	cred    *syscall.Credential // nil when not root
	nextDB  atomic.Int64
	missing string // why there is no server; Server is otherwise unused
}

// Start initializes and starts a server. With PostgreSQL not installed it
// returns a Server whose DB skips (or fails under CI) each test, and a nil
// error; other failures are errors.
func Start() (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return &Server{missing: err.Error()}, nil
	}
	base := os.TempDir()
	if os.Geteuid() == 0 && !traversable(base) {
		// The server's user must reach its directory: a root-only TMPDIR
		// will not do, /tmp (sticky, world-writable) will.
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "warden-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: running as root, and there is no user nobody to run postgres as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if out, err := s.cmd("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v\n%s", err, out)
	}
	// A port picked free can be taken before postgres binds it: retry.
	for attempt := 0; ; attempt++ {
		if s.port, err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", s.port, dir)
		out, err := s.cmd("pg_ctl", "-D", s.data(), "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 3 {
			logData, _ := os.ReadFile(filepath.Join(dir, "log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("pgtest: pg_ctl start: %v\n%s\n%s", err, out, logData)
		}
	}
	return s, nil
}

// Stop stops the server and removes its files.
func (s *Server) Stop() {
	if s == nil || s.dir == "" {
		return
	}
	s.cmd("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop").Run()
	os.RemoveAll(s.dir)
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
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
	if s == nil || s.missing != "" {
		why := "no server started"
		if s != nil {
			why = s.missing
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required under CI: %s", why)
		}
		t.Skipf("PostgreSQL is not installed (%s): apt-get install postgresql to run this test", why)
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
// or the directory of initdb on PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if d := filepath.Dir(p); isExec(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb and pg_ctl under /usr/lib/postgresql/*/bin or on PATH")
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
