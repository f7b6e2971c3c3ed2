package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/warden-run/warden/hostfuncs/internal/pathguard"
	"github.com/warden-run/warden/internal/osfile"
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

// LockPath is the lock file of the file backend's store of projectRoot:
// the one file of the store that is not a memory. Warden denies it to
// tools' fs access (removing it would let two writers in at once).
func LockPath(projectRoot string) string { return filepath.Join(projectRoot, lockFile) }

// store is the memories directory of one project. It holds no open files:
// each operation opens the project root afresh, so that a config change (a
// new project root) never has to wait for or invalidate in-flight calls.
type store struct {
	projectRoot string
	// reached, when set, is told each step of a write as it completes
	// (osfile.WriteAtomic's, then StepDirSynced once the directories
	// holding it are synced). Only the crash test sets it, to kill the
	// writer at an exact step.
	reached func(step osfile.Step)
}

// Entry describes one stored memory.
type Entry struct {
	Topic    string    `json:"topic"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

// Skipped counts what a listing left out, so that nothing is dropped
// silently. Names and link targets are not reported.
type Skipped struct {
	// Symlinks are links in the store, to files or directories.
	Symlinks int `json:"symlinks,omitempty"`
	// HardLinks are topic files with more than one name.
	HardLinks int `json:"hardLinks,omitempty"`
	// Denied are topics whose file matches a deny rule.
	Denied int `json:"denied,omitempty"`
}

func (s Skipped) any() bool { return s != Skipped{} }

// open returns the chain of directories from the project root to the
// memories directory, each opened without following a symlink (see
// openDirNoFollow): os.Root alone keeps paths inside the project, but
// ".warden/memories -> .." stays inside it too. create makes missing
// directories; otherwise a missing one is reported as fs.ErrNotExist.
func (s *store) open(create bool) (*dirChain, error) {
	project, err := os.OpenRoot(s.projectRoot)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", unwrapPath(err))
	}
	chain := &dirChain{dirs: []*os.Root{project}, names: []string{"<project>"}}
	display := ""
	for _, name := range strings.Split(memoriesDir, "/") {
		display = path.Join(display, name)
		d, _, err := openDirNoFollow(chain.leaf(), name, display, create)
		if err != nil {
			chain.close()
			return nil, err
		}
		chain.dirs, chain.names = append(chain.dirs, d), append(chain.names, display)
	}
	return chain, nil
}

// openTopicDir extends chain (open on the memories directory) down to the
// directory holding topic's file, and returns that file's name. created
// counts the directories it made.
func openTopicDir(chain *dirChain, topic string, create bool) (base string, created int, err error) {
	dirs := strings.Split(fileName(topic), "/")
	base, dirs = dirs[len(dirs)-1], dirs[:len(dirs)-1]
	for _, name := range dirs {
		d, made, err := openDirNoFollow(chain.leaf(), name, chain.child(name), create)
		if err != nil {
			return "", 0, err
		}
		if made {
			created++
		}
		chain.dirs, chain.names = append(chain.dirs, d), append(chain.names, chain.child(name))
	}
	return base, created, nil
}

func (s *store) id() string { return "file" }

func (s *store) close() {}

// redact keeps host paths out of messages: the project root is named
// <project>.
func (s *store) redact(msg string) string {
	return strings.ReplaceAll(msg, s.projectRoot, "<project>")
}

type errDenyRule struct {
	path string
	rule *pathguard.Rule
}

func (e *errDenyRule) Error() string {
	return fmt.Sprintf("%s %s; deny rules apply to memories too", e.path, e.rule.Reason())
}

// lock takes the store's exclusive lock, shared by every process that opens
// the same project, polling so that ctx can end the wait. The lock belongs
// to an open file (osfile.TryLock), so it also serializes goroutines of
// this process, and the system drops it when a holder dies, even by
// kill -9. The lock file is opened through the .warden directory checked
// like the store's own; a lock file that is a symlink is refused.
func (s *store) lock(ctx context.Context) (unlock func(), err error) {
	project, err := os.OpenRoot(s.projectRoot)
	if err != nil {
		return nil, fmt.Errorf("open project root: %w", unwrapPath(err))
	}
	defer project.Close()
	warden, _, err := openDirNoFollow(project, path.Dir(lockFile), path.Dir(lockFile), true)
	if err != nil {
		return nil, err
	}
	defer warden.Close()
	name := path.Base(lockFile)
	if info, err := warden.Lstat(name); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return nil, &errRefused{Path: lockFile, Reason: reasonSymlink}
	}
	f, err := osfile.OpenFileIn(warden, name, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &errRefused{Path: lockFile, Reason: reasonSymlink}
	}
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", unwrapPath(err))
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, &errRefused{Path: lockFile, Reason: reasonNotRegual}
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := osfile.TryLock(f)
		if err == nil {
			// Unlocked explicitly before the close: Windows releases a
			// closed file's locks only when it gets to it.
			return func() { osfile.Unlock(f); f.Close() }, nil
		}
		if !errors.Is(err, osfile.ErrLocked) {
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
func (s *store) get(_ context.Context, topic string, limit int) (value []byte, truncated bool, modified time.Time, err error) {
	chain, err := s.open(false)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	defer chain.close()
	base, _, err := openTopicDir(chain, topic, false)
	if err != nil {
		return nil, false, time.Time{}, err
	}
	f, info, err := openFileNoFollow(chain.leaf(), base, chain.child(base))
	if err != nil {
		return nil, false, time.Time{}, err
	}
	defer f.Close()
	value, err = io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, false, time.Time{}, err
	}
	if len(value) > limit {
		value, truncated = value[:limit], true
	}
	return value, truncated, info.ModTime(), nil
}

// put replaces a memory with value, or with its current value followed by
// value when appending. It returns the new size. A topic file that is a
// symlink is refused for both (replacing the link would be harmless, but a
// store that never acts on a link is simpler to reason about); a hard-linked
// one is refused when appending, which reads it.
func (s *store) put(ctx context.Context, topic string, value []byte, appending bool, limit int) (int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	chain, err := s.open(true)
	if err != nil {
		return 0, err
	}
	defer chain.close()
	base, created, err := openTopicDir(chain, topic, true)
	if err != nil {
		return 0, err
	}
	dir, display := chain.leaf(), chain.child(base)
	if appending {
		old, err := readExisting(dir, base, display, limit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, err
		case len(old)+len(value) > limit:
			return 0, errTooLarge{size: len(old) + len(value), limit: limit}
		default:
			value = append(old, value...)
		}
	} else if info, err := dir.Lstat(base); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return 0, &errRefused{Path: display, Reason: reasonSymlink}
	}
	if len(value) > limit {
		return 0, errTooLarge{size: len(value), limit: limit}
	}
	if err := s.writeAtomic(dir, base, value); err != nil {
		return 0, err
	}
	if err := syncChain(chain, created); err != nil {
		return 0, err
	}
	if s.reached != nil {
		s.reached(osfile.StepDirSynced)
	}
	return len(value), nil
}

// readExisting reads the current value of a memory for an append; one over
// the limit is read only far enough to know.
func readExisting(dir *os.Root, base, display string, limit int) ([]byte, error) {
	f, _, err := openFileNoFollow(dir, base, display)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(limit)+1))
}

type errTooLarge struct{ size, limit int }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("value would be %d bytes, over the limit of %d", e.size, e.limit)
}

// writeAtomic replaces name in dir with data (osfile.WriteAtomic: the old
// content or data, never a mix or nothing); the caller then syncs the
// directories. The caller holds the lock, so any temp file it finds was
// left by a writer that died, and is removed.
func (s *store) writeAtomic(dir *os.Root, name string, data []byte) error {
	removeStaleTemps(dir)
	err := osfile.WriteAtomic(dir, name, data, osfile.Write{Perm: 0o644, TempPrefix: tempPrefix, Reached: s.reached})
	return unwrapPath(err)
}

// syncChain syncs the chain's leaf directory, which holds a new or removed
// entry, and the parents of the created directories below the memories
// directory, whose own entries are new.
func syncChain(chain *dirChain, created int) error {
	for i := len(chain.dirs) - 1; i >= len(chain.dirs)-1-created && i >= 0; i-- {
		if err := osfile.SyncDir(chain.dirs[i]); err != nil {
			return fmt.Errorf("sync %s: %w", chain.names[i], err)
		}
	}
	return nil
}

func removeStaleTemps(dir *os.Root) {
	entries, err := fs.ReadDir(dir.FS(), ".")
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			dir.Remove(e.Name()) // removes a link itself, never its target
		}
	}
}

// remove deletes a memory and then any directories the deletion left empty.
// A topic file that is a symlink is refused, not deleted.
func (s *store) remove(ctx context.Context, topic string) (bool, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	chain, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer chain.close()
	memories := len(chain.dirs) - 1
	base, _, err := openTopicDir(chain, topic, false)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	info, err := chain.leaf().Lstat(base)
	if err != nil {
		return false, nil
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		return false, &errRefused{Path: chain.child(base), Reason: reasonSymlink}
	}
	if !info.Mode().IsRegular() {
		return false, nil
	}
	if err := chain.leaf().Remove(base); err != nil {
		return false, unwrapPath(err)
	}
	// Remove the directories left empty, deepest first; Remove fails on a
	// directory that is not empty.
	i := len(chain.dirs) - 1
	for ; i > memories; i-- {
		removeStaleTemps(chain.dirs[i])
		if chain.dirs[i-1].Remove(path.Base(chain.names[i])) != nil {
			break
		}
	}
	d, err := chain.dirs[i].Open(".")
	if err != nil {
		return true, unwrapPath(err)
	}
	defer d.Close()
	return true, d.Sync()
}

// list returns the memories below prefix ("" for all) that filter shows,
// sorted by topic, at most maxListed of them. It opens every directory
// without following a link and counts, in skipped, the links and
// hard-linked or denied files it left out.
func (s *store) list(_ context.Context, prefix string, filter func(topic string) verdict) (entries []Entry, truncated bool, skipped Skipped, err error) {
	chain, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return []Entry{}, false, skipped, nil
	}
	if err != nil {
		return nil, false, skipped, err
	}
	defer chain.close()
	entries = []Entry{}
	// relevant reports whether a topic or topic directory could hold
	// something this listing shows.
	relevant := func(topic string, dir bool) bool {
		if prefix != "" && !within(topic, prefix) && !(dir && within(prefix, topic)) {
			return false
		}
		return dir || filter(topic) != hide
	}
	var walk func(dir *os.Root, rel string, depth int) error
	walk = func(dir *os.Root, rel string, depth int) error {
		f, err := dir.Open(".")
		if err != nil {
			return unwrapPath(err)
		}
		des, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return unwrapPath(err)
		}
		for _, d := range des {
			name := d.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := path.Join(rel, name)
			if d.Type()&fs.ModeSymlink != 0 {
				topic := strings.TrimSuffix(p, ".md")
				if ValidateTopic(topic) == nil && relevant(topic, !strings.HasSuffix(p, ".md")) {
					skipped.Symlinks++
				}
				continue
			}
			if d.IsDir() {
				if depth+1 >= MaxTopicDepth || validateComponent(name) != nil || !relevant(p, true) {
					continue
				}
				sub, _, err := openDirNoFollow(dir, name, p, false)
				var refused *errRefused
				switch {
				case errors.As(err, &refused):
					skipped.Symlinks++ // swapped for a link while listing
					continue
				case err != nil:
					continue // removed under us
				}
				err = walk(sub, p, depth+1)
				sub.Close()
				if err != nil {
					return err
				}
				continue
			}
			topic, ok := strings.CutSuffix(p, ".md")
			if !d.Type().IsRegular() || !ok || ValidateTopic(topic) != nil || !relevant(topic, false) {
				continue // stray files are not memories
			}
			info, err := dir.Lstat(name)
			if err != nil {
				continue
			}
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				skipped.Symlinks++
				continue
			case !info.Mode().IsRegular():
				continue
			case osfile.Links(info, nil) > 1: // on Windows, counted only when read
				skipped.HardLinks++
				continue
			case filter(topic) == denied:
				skipped.Denied++
				continue
			}
			entries = append(entries, Entry{Topic: topic, Size: info.Size(), Modified: info.ModTime().UTC()})
		}
		return nil
	}
	if err := walk(chain.leaf(), "", 0); err != nil {
		return nil, false, skipped, err
	}
	// "a.md" sorts after "a-b.md" but before "a/...": sort by topic.
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Topic, b.Topic) })
	if len(entries) > maxListed {
		entries, truncated = entries[:maxListed], true
	}
	return entries, truncated, skipped, nil
}

// staleTempAge is how old a temp file must be before a starting warden
// removes it: a write holds its temp file for milliseconds, so one a
// minute old belongs to a writer that died (kill -9), never to another
// warden writing right now.
const staleTempAge = time.Minute

// maxSweepEntries bounds the start-up sweep of a store some other program
// filled with millions of entries.
const maxSweepEntries = 100_000

// sweepStaleTemps removes the temp files of writers that died (warden's
// own, by name prefix, older than age) anywhere in the store, at start:
// writeAtomic cleans a topic directory only when that directory is
// written again, which may be never. It follows no link (a link is
// removed itself, never its target), and any error just ends the sweep:
// a leftover temp file costs disk, not correctness.
func (s *store) sweepStaleTemps(age time.Duration, now time.Time) (removed int) {
	chain, err := s.open(false)
	if err != nil {
		return 0
	}
	defer chain.close()
	root := chain.leaf()
	seen := 0
	fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if seen++; seen > maxSweepEntries {
			return fs.SkipAll
		}
		if d.IsDir() || !strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		info, err := root.Lstat(p)
		if err != nil || now.Sub(info.ModTime()) < age {
			return nil
		}
		if root.Remove(p) == nil {
			removed++
		}
		return nil
	})
	return removed
}
