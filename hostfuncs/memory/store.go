package memory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// memoriesDir and lockFile are relative to the project root.
	memoriesDir = ".warden/memories"
	lockFile    = ".warden/memories.lock"
	// tempPrefix starts with '.', which no topic component may, so temp
	// files can never be mistaken for (or collide with) a memory.
	tempPrefix = ".tmp-"
	// maxListed bounds a list reply.
	maxListed = 1000
)

// store is the memories directory of one project. It holds no open files:
// each operation opens the project root afresh, so that a config change (a
// new project root) never has to wait for or invalidate in-flight calls.
type store struct {
	projectRoot string
	maxValue    int
}

// Entry describes one stored memory.
type Entry struct {
	Topic    string    `json:"topic"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// open returns the memories directory as an os.Root, so nothing below can
// resolve outside it, even through a symlink a tool planted with fs access.
// create makes the directory if it is missing; otherwise a missing directory
// is reported as fs.ErrNotExist.
func (s *store) open(create bool) (*os.Root, error) {
	project, err := os.OpenRoot(s.projectRoot)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", err)
	}
	defer project.Close()
	if create {
		if err := project.MkdirAll(memoriesDir, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", memoriesDir, err)
		}
	}
	return project.OpenRoot(memoriesDir)
}

// lock takes the store's exclusive lock, shared by every process that opens
// the same project, polling so that ctx can end the wait. The lock is an
// flock on an open file description, so it also serializes goroutines of
// this process, and the kernel drops it when a holder dies, even by kill -9.
func (s *store) lock(ctx context.Context) (unlock func(), err error) {
	project, err := os.OpenRoot(s.projectRoot)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", err)
	}
	defer project.Close()
	if err := project.MkdirAll(path.Dir(lockFile), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", path.Dir(lockFile), err)
	}
	f, err := project.OpenFile(lockFile, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	fd := int(f.Fd())
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing the last descriptor releases the lock
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lockFile, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// get reads a memory. A file larger than the value limit (edited by hand,
// or written under a larger limit) is returned cut at the limit.
func (s *store) get(topic string) (value []byte, truncated bool, modified time.Time, err error) {
	root, err := s.open(false)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	defer root.Close()
	f, err := root.Open(fileName(topic))
	if err != nil {
		return nil, false, time.Time{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, time.Time{}, err
	}
	if !info.Mode().IsRegular() {
		return nil, false, time.Time{}, fmt.Errorf("%s is not a regular file: %w", fileName(topic), fs.ErrNotExist)
	}
	value, err = io.ReadAll(io.LimitReader(f, int64(s.maxValue)+1))
	if err != nil {
		return nil, false, time.Time{}, err
	}
	if len(value) > s.maxValue {
		value, truncated = value[:s.maxValue], true
	}
	return value, truncated, info.ModTime(), nil
}

// put replaces a memory with value, or with its current value followed by
// value when appending. It returns the new size.
func (s *store) put(ctx context.Context, topic string, value []byte, appending bool) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	root, err := s.open(true)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	name := fileName(topic)
	if appending {
		old, err := root.ReadFile(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, err
		case len(old)+len(value) > s.maxValue:
			return 0, errTooLarge{size: len(old) + len(value), limit: s.maxValue}
		default:
			value = append(old, value...)
		}
	}
	if len(value) > s.maxValue {
		return 0, errTooLarge{size: len(value), limit: s.maxValue}
	}
	if err := writeAtomic(root, name, value); err != nil {
		return 0, err
	}
	return len(value), nil
}

type errTooLarge struct{ size, limit int }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("value would be %d bytes, over the limit of %d", e.size, e.limit)
}

// writeAtomic replaces name with data so that, whatever instant the process
// dies at, name holds either its old content or data, never a mix or
// nothing: data goes to a temp file in the same directory, is synced, and is
// renamed over name; the directory is then synced so the rename itself
// survives a power loss. The caller holds the lock, so any temp file it
// finds was left by a writer that died, and is removed.
func writeAtomic(root *os.Root, name string, data []byte) error {
	dir := path.Dir(name)
	created, err := mkdirAll(root, dir)
	if err != nil {
		return err
	}
	removeStaleTemps(root, dir)
	var suffix [8]byte
	rand.Read(suffix[:])
	tmp := path.Join(dir, tempPrefix+hex.EncodeToString(suffix[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return err
	}
	// Sync the directory holding the new entry, and each directory this
	// write created, whose own entry lives in its parent.
	return syncDirs(root, dir, created)
}

// mkdirAll creates dir and its missing parents and returns how many levels
// it created.
func mkdirAll(root *os.Root, dir string) (created int, err error) {
	for d := dir; d != "."; d = path.Dir(d) {
		if _, err := root.Lstat(d); err == nil {
			break
		}
		created++
	}
	if created > 0 {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
	}
	return created, nil
}

func syncDirs(root *os.Root, dir string, created int) error {
	for i := 0; i <= created; i++ {
		d, err := root.Open(dir)
		if err != nil {
			return err
		}
		err = d.Sync()
		d.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", dir, err)
		}
		if dir == "." {
			break
		}
		dir = path.Dir(dir)
	}
	return nil
}

func removeStaleTemps(root *os.Root, dir string) {
	entries, err := fs.ReadDir(root.FS(), dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			root.Remove(path.Join(dir, e.Name()))
		}
	}
}

// remove deletes a memory and then any directories the deletion left empty.
func (s *store) remove(ctx context.Context, topic string) (bool, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	root, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer root.Close()
	name := fileName(topic)
	if info, err := root.Lstat(name); err != nil || !info.Mode().IsRegular() {
		return false, nil
	}
	if err := root.Remove(name); err != nil {
		return false, err
	}
	dir := path.Dir(name)
	for ; dir != "."; dir = path.Dir(dir) {
		removeStaleTemps(root, dir)
		if root.Remove(dir) != nil {
			break // not empty
		}
	}
	return true, syncDirs(root, dir, 0)
}

// list returns the memories below prefix ("" for all) that keep(topic)
// accepts, sorted by topic, at most maxListed of them.
func (s *store) list(prefix string, keep func(topic string) bool) (entries []Entry, truncated bool, err error) {
	root, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return []Entry{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	entries = []Entry{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == "." {
				return err
			}
			return nil // a directory removed under us: skip it
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") || strings.Count(p, "/") >= MaxTopicDepth {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		topic, ok := strings.CutSuffix(p, ".md")
		if d.IsDir() || !d.Type().IsRegular() || !ok || ValidateTopic(topic) != nil {
			return nil // symlinks, stray files and directories are not memories
		}
		if prefix != "" && !within(topic, prefix) || !keep(topic) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		entries = append(entries, Entry{Topic: topic, Size: info.Size(), Modified: info.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	// WalkDir visits "a.md" after "a-b.md" but before "a/...": sort by topic.
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Topic, b.Topic) })
	if len(entries) > maxListed {
		entries, truncated = entries[:maxListed], true
	}
	return entries, truncated, nil
}
