package tasks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/internal/osfile"
)

// The file store: one directory, one file per task (<id>.task), and a lock
// file. Every operation takes the lock (osfile.TryLock on the lock file,
// which the system drops when its holder dies, even by kill -9), so that a
// second process on the same directory (another `warden serve`, or the
// `warden tasks` CLI) waits rather than interleaves. Every write is atomic
// and durable before it returns: the record goes to a temp file, is
// synced, renamed over the record, and the directory is synced.
//
// A record file is the task's JSON without its result, a newline, then
// the result's bytes verbatim: the counts Create needs and the pages List
// returns read the first line only, however large the results. A record
// the store cannot read is left out (and logged), never an error of
// another owner's request.

const (
	// fileDir is the store's directory below a project root, beside the
	// memory store's .warden/memories.
	fileDir = ".warden/tasks"
	// lockName is the lock file, inside the directory.
	lockName = ".lock"
	// recordExt ends every record's file name (<id>.task).
	recordExt = ".task"
	// tempPrefix starts a record being written; no id starts with '.'.
	tempPrefix = ".tmp-"
	// maxHeader bounds a record's first line (a task without its result).
	maxHeader = 1 << 20
	// fileVersion is the record format.
	fileVersion = 1
)

// DefaultDir is the file store's directory for a project: .warden/tasks
// under its root, beside the memory store's .warden/memories.
func DefaultDir(projectRoot string) string {
	return filepath.Join(projectRoot, filepath.FromSlash(fileDir))
}

// FileStore is the Store of one directory. Every method is safe for
// concurrent use, by goroutines and by other processes opening the same
// directory.
type FileStore struct {
	dir string
	now func() time.Time
	// mu serializes this store's goroutines: they share one lock file,
	// and a lock held through an open file does not exclude the holder's
	// other uses of that file.
	mu     sync.Mutex
	root   *os.Root // nil once closed
	lockFd *os.File
	// maxResult is the most of a result read puts in memory.
	maxResult int
	// logger is told of records left out; nil is slog.Default().
	logger *slog.Logger
	// warned holds the records logger was told of (under mu).
	warned map[string]bool
	// reached, when set, is told each step of a write as it completes
	// (osfile.WriteAtomic's, then StepDirSynced). Only the crash test
	// sets it, to kill the writer at an exact step.
	reached func(step osfile.Step)
}

// OpenFile opens (creating it when missing) the file store in dir. now is
// the clock of Created and Updated stamps; nil means time.Now.
//
// The directories warden makes are opened as the memory store opens its
// own (osfile.OpenDirIn): never through a symbolic link, each one made
// synced into its parent so that it survives a crash. They are .warden and
// tasks when dir is DefaultDir of a project (the project root itself is
// the operator's, links and all), else dir's last element.
func OpenFile(dir string, now func() time.Time) (*FileStore, error) {
	return openFile(dir, now, nil)
}

// openFile is OpenFile telling reached of each step (the crash test's).
func openFile(dir string, now func() time.Time, reached func(osfile.Step)) (*FileStore, error) {
	if now == nil {
		now = time.Now
	}
	root, err := openDirs(dir, reached)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	lockFd, err := osfile.OpenFileIn(root, lockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("tasks: open the lock file of %s: %w", dir, err)
	}
	s := &FileStore{dir: dir, now: now, root: root, lockFd: lockFd, maxResult: limits.MaxTaskResult, reached: reached}
	// A temp file found under the lock was left by a writer that died.
	if err := s.locked(context.Background(), func() error { return s.removeTemps() }); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// stepParentSynced is reported, with the directory's path, once a
// directory the store made is synced into its parent.
const stepParentSynced osfile.Step = "parent-synced"

// openDirs opens dir, making what is missing, without following a link in
// the directories warden makes (see OpenFile).
func openDirs(dir string, reached func(osfile.Step)) (*os.Root, error) {
	dir = filepath.Clean(dir)
	base, own := filepath.Dir(dir), []string{filepath.Base(dir)}
	if rest, ok := strings.CutSuffix(filepath.ToSlash(dir), "/"+fileDir); ok && rest != "" {
		base, own = filepath.FromSlash(rest), strings.Split(fileDir, "/")
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	parent, err := os.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	shown := base
	for _, name := range own {
		shown = filepath.Join(shown, name)
		// The records hold results and who created them: private to the
		// user running warden.
		d, made, err := osfile.OpenDirIn(parent, name, true, 0o700)
		if err == nil && made {
			if err = osfile.SyncDir(parent); err == nil && reached != nil {
				reached(stepParentSynced + osfile.Step(" "+shown))
			}
		}
		parent.Close()
		if err != nil {
			if d != nil {
				d.Close()
			}
			if errors.Is(err, osfile.ErrSymlink) {
				return nil, fmt.Errorf("%s %w: the task store never follows links (make it a directory)", shown, err)
			}
			return nil, fmt.Errorf("%s: %w", shown, err)
		}
		parent = d
	}
	return parent, nil
}

// Dir is the store's directory.
func (s *FileStore) Dir() string { return s.dir }

// errClosed is the error of a method called after Close.
var errClosed = errors.New("tasks: the store is closed")

// locked runs f holding the store's lock, waiting for another holder (in
// this process or another) as long as ctx allows.
func (s *FileStore) locked(ctx context.Context, f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return errClosed
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := osfile.TryLock(s.lockFd)
		if err == nil {
			break
		}
		if !errors.Is(err, osfile.ErrLocked) {
			return fmt.Errorf("tasks: lock %s: %w", s.dir, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	defer osfile.Unlock(s.lockFd)
	return f()
}

// fileRecord is a record's first line.
type fileRecord struct {
	Version int `json:"v"`
	Task
}

// fileName is the file of task id; id has passed ParseID.
func fileName(id string) string { return id + recordExt }

// unreadableError is a record the store cannot read: not a task record
// (corrupt, written by hand or by a later warden), or a file this user
// may not open (rewritten by `sudo warden tasks`, say). Its text names the
// file, so it is for the operator and the server's log only: a client
// asking for a task gets ErrNotFound (the record may be another owner's),
// and a scan leaves the record out instead of failing every owner.
type unreadableError struct {
	name   string
	reason string
}

func (e *unreadableError) Error() string {
	return fmt.Sprintf("tasks: record %s: %s", e.name, e.reason)
}

// read returns the task in name's file, with its result when full.
func (s *FileStore) read(name string, full bool) (Task, error) {
	// A link in place of a record is not followed, even to a record.
	f, err := osfile.OpenFileIn(s.root, name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, &unreadableError{name, osfile.StripPath(err).Error()}
	}
	defer f.Close()
	r := bufio.NewReader(io.LimitReader(f, maxHeader+1))
	header, err := r.ReadBytes('\n')
	if err != nil {
		return Task{}, &unreadableError{name, fmt.Sprintf("no header line (%v)", err)}
	}
	var rec fileRecord
	if err := json.Unmarshal(header, &rec); err != nil || rec.Version != fileVersion {
		return Task{}, &unreadableError{name, fmt.Sprintf("not a version %d task record", fileVersion)}
	}
	if name != fileName(rec.ID) {
		return Task{}, &unreadableError{name, "holds another task"}
	}
	t := rec.Task
	t.Result = nil
	if full {
		// The reader has the rest of the header's buffer; the file, what
		// follows: no more than a result may be, however large the file.
		rest, err := io.ReadAll(io.LimitReader(io.MultiReader(r, f), int64(s.maxResult)+1))
		if err != nil {
			return Task{}, &unreadableError{name, osfile.StripPath(err).Error()}
		}
		if len(rest) > s.maxResult {
			return Task{}, &unreadableError{name, fmt.Sprintf("holds a result of more than %d bytes, the most a task keeps", s.maxResult)}
		}
		if len(rest) > 0 {
			t.Result = rest
		}
	}
	return t, nil
}

// skipUnreadable reports whether err is a record to leave out (telling
// the log, once per record and store: Sweep meets it at every sweep), and
// otherwise passes err on. The caller holds s.mu.
func (s *FileStore) skipUnreadable(err error) bool {
	var u *unreadableError
	if !errors.As(err, &u) {
		return false
	}
	if s.warned[u.name] {
		return true
	}
	if s.warned == nil {
		s.warned = map[string]bool{}
	}
	s.warned[u.name] = true
	s.log().Warn("tasks: a record of the file store cannot be read; it is left out until it is repaired or removed",
		"dir", s.dir, "err", u.Error())
	return true
}

func (s *FileStore) log() *slog.Logger {
	if s.logger != nil {
		return s.logger
	}
	return slog.Default()
}

// write stores t atomically and durably (see the package's file format).
func (s *FileStore) write(t Task) error {
	if err := s.writeRecord(t); err != nil {
		return err
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if s.reached != nil {
		s.reached(osfile.StepDirSynced)
	}
	return nil
}

// writeRecord is write without the directory's sync, for a batch of
// writes that syncs it once after the last: the record file itself is
// synced before its rename, so a crash leaves the old record or the new.
func (s *FileStore) writeRecord(t Task) error {
	rec := fileRecord{Version: fileVersion, Task: t}
	rec.Result = nil
	header, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	data := slices.Concat(header, []byte{'\n'}, t.Result)
	err = osfile.WriteAtomic(s.root, fileName(t.ID), data, osfile.Write{Perm: 0o600, TempPrefix: tempPrefix, Reached: s.reached})
	if err != nil {
		return fmt.Errorf("tasks: write task %s: %w", t.ID, err)
	}
	return nil
}

// syncDir makes the directory's entries (a rename, a removal) durable.
func (s *FileStore) syncDir() error {
	if err := osfile.SyncDir(s.root); err != nil {
		return fmt.Errorf("tasks: sync %s: %w", s.dir, err)
	}
	return nil
}

// names lists the record files, sorted.
func (s *FileStore) names() ([]string, error) {
	entries, err := fs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	var names []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), recordExt)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if _, err := ParseID(id); err == nil {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// scan returns every task (without results) for which keep is true.
func (s *FileStore) scan(keep func(*Task) bool) ([]Task, error) {
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, name := range names {
		t, err := s.read(name, false)
		if errors.Is(err, ErrNotFound) || s.skipUnreadable(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if keep(&t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (s *FileStore) removeTemps() error {
	entries, err := fs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return fmt.Errorf("tasks: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			s.root.Remove(e.Name())
		}
	}
	return nil
}

// Create implements Store.
func (s *FileStore) Create(ctx context.Context, t Task, b Bounds) error {
	t, err := prepareCreate(t, s.now(), b)
	if err != nil {
		return err
	}
	return s.locked(ctx, func() error {
		if _, err := s.root.Lstat(fileName(t.ID)); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tasks: create task %s: the id is taken", t.ID)
		}
		// Every header is read (not the results): the records are bounded
		// by b.Records, so this is too.
		var c counts
		if _, err := s.scan(func(u *Task) bool {
			c.add(u, t.Owner)
			return false
		}); err != nil {
			return err
		}
		if err := checkCount(c, b); err != nil {
			return err
		}
		return s.write(t)
	})
}

// get reads owner's task id under the lock; another owner's is ErrNotFound.
func (s *FileStore) get(owner, id string, anyOwner bool) (Task, error) {
	if _, err := ParseID(id); err != nil {
		return Task{}, ErrNotFound
	}
	t, err := s.read(fileName(id), true)
	if !anyOwner && s.skipUnreadable(err) {
		return Task{}, ErrNotFound // whose it is cannot be told
	}
	if err != nil {
		return Task{}, err
	}
	if !anyOwner && t.Owner != owner {
		return Task{}, ErrNotFound
	}
	return t, nil
}

// Get implements Store.
func (s *FileStore) Get(ctx context.Context, owner, id string) (Task, error) {
	var t Task
	err := s.locked(ctx, func() (err error) {
		t, err = s.get(owner, id, false)
		return err
	})
	return t, err
}

// GetAny implements Operator.
func (s *FileStore) GetAny(ctx context.Context, id string) (Task, error) {
	var t Task
	err := s.locked(ctx, func() (err error) {
		t, err = s.get("", id, true)
		return err
	})
	return t, err
}

// List implements Store.
func (s *FileStore) List(ctx context.Context, owner, cursor string, limit int) ([]Task, string, error) {
	return s.list(ctx, func(t *Task) bool { return t.Owner == owner && listable(owner) }, cursor, limit)
}

// ListAll implements Operator.
func (s *FileStore) ListAll(ctx context.Context, cursor string, limit int) ([]Task, string, error) {
	return s.list(ctx, func(*Task) bool { return true }, cursor, limit)
}

func (s *FileStore) list(ctx context.Context, mine func(*Task) bool, cursor string, limit int) ([]Task, string, error) {
	var from position
	if cursor != "" {
		var err error
		if from, err = parseCursor(cursor); err != nil {
			return nil, "", err
		}
	}
	limit = pageLimit(limit)
	var page []Task
	next := ""
	err := s.locked(ctx, func() error {
		found, err := s.scan(func(t *Task) bool { return mine(t) && (cursor == "" || from.after(t)) })
		if err != nil {
			return err
		}
		slices.SortFunc(found, compareListed)
		if len(found) > limit {
			found = found[:limit]
			next = encodeCursor(&found[limit-1])
		}
		page = found // headers only: a listed task has no result
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return page, next, nil
}

// compareListed is List's order: oldest first, then by id.
func compareListed(a, b Task) int {
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// Update implements Store.
func (s *FileStore) Update(ctx context.Context, owner, id string, b Bounds, change func(*Task)) (Task, error) {
	var out Task
	err := s.locked(ctx, func() error {
		old, err := s.get(owner, id, false)
		if err != nil {
			return err
		}
		t, err := applyUpdate(old, s.now(), b, change)
		out = t
		if err != nil {
			return err
		}
		return s.write(t)
	})
	return out, err
}

// Cancel implements Store.
func (s *FileStore) Cancel(ctx context.Context, owner, id string) (Task, error) {
	return s.cancel(ctx, owner, id, false)
}

// CancelAny implements Operator.
func (s *FileStore) CancelAny(ctx context.Context, id string) (Task, error) {
	return s.cancel(ctx, "", id, true)
}

func (s *FileStore) cancel(ctx context.Context, owner, id string, anyOwner bool) (Task, error) {
	var out Task
	err := s.locked(ctx, func() error {
		t, err := s.get(owner, id, anyOwner)
		out = t
		if err != nil {
			return err
		}
		if t.Status.Terminal() {
			return ErrTerminal
		}
		if t.CancelRequested {
			return nil
		}
		t.CancelRequested, t.Updated = true, stamp(s.now())
		if err := s.write(t); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

// Renew implements Store. Among the ids it returns are, besides those
// whose cancellation was requested, those that no longer run here: ended
// (by Sweep, say, after this replica stalled), removed, or claimed by
// another replica. The replica stops each of them all the same.
func (s *FileStore) Renew(ctx context.Context, replica string, ids []string, until time.Time) ([]string, error) {
	var stop []string
	err := s.locked(ctx, func() error {
		changed := false
		for _, id := range ids {
			t, err := s.get("", id, true)
			if errors.Is(err, ErrNotFound) || s.skipUnreadable(err) {
				stop = append(stop, id)
				continue
			}
			if err != nil {
				return err
			}
			if t.Status.Terminal() || t.Replica != replica {
				stop = append(stop, id)
				continue
			}
			if t.CancelRequested {
				stop = append(stop, id)
			}
			t.LeaseUntil = stamp(until)
			if err := s.writeRecord(t); err != nil {
				return err
			}
			changed = true
		}
		if changed {
			return s.syncDir()
		}
		return nil
	})
	return stop, err
}

// Sweep implements Store.
func (s *FileStore) Sweep(ctx context.Context, now time.Time) (failed, removed int, err error) {
	now = stamp(now)
	err = s.locked(ctx, func() error {
		names, err := s.names()
		if err != nil {
			return err
		}
		for _, name := range names {
			t, err := s.read(name, false)
			if errors.Is(err, ErrNotFound) || s.skipUnreadable(err) {
				continue
			}
			if err != nil {
				return err
			}
			switch {
			case expired(&t, now):
				if err := s.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return fmt.Errorf("tasks: remove %s: %w", name, err)
				}
				removed++
			case lapsed(&t, now):
				if t, err = s.read(name, true); errors.Is(err, ErrNotFound) || s.skipUnreadable(err) {
					continue
				} else if err != nil {
					return err
				}
				t.Status, t.StatusMessage, t.Updated = Failed, LeaseLapsed, stamp(now)
				t.InputRequests, t.InputResponses = nil, nil
				if expired(&t, now) {
					// Ended past its TTL: removed now, as PGStore's sweep
					// deletes the rows it has just failed.
					if err := s.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return fmt.Errorf("tasks: remove %s: %w", name, err)
					}
					failed++
					removed++
					continue
				}
				if err := s.writeRecord(t); err != nil {
					return err
				}
				failed++
			}
		}
		if removed+failed > 0 {
			return s.syncDir()
		}
		return nil
	})
	return failed, removed, err
}

// Close implements Store.
func (s *FileStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return nil
	}
	err := s.lockFd.Close()
	s.root.Close()
	s.root = nil
	return err
}

var (
	_ Store    = (*FileStore)(nil)
	_ Operator = (*FileStore)(nil)
)
