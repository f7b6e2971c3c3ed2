// Package codecache guards the directory wazero keeps compiled code in.
//
// A compiled entry is native machine code that wazero maps executable and
// runs inside the host process, trusting it as its own output ("the embedder
// must safeguard this directory from external changes", wazero's docs say).
// wazero checks a CRC of the code, which catches some accidental damage but
// nothing deliberate, and not the metadata around the code. Guard is that
// safeguard:
//
//   - a cache dir that is not a directory owned by the user, or that others
//     may write to, is refused (Open fails; the runtime then compiles in
//     memory only);
//   - every entry a load of this process made is hashed and recorded in an
//     index with its size and stamp; the index carries its own checksum;
//   - before a load may read the cache, every entry is checked against the
//     index: one unknown to it, or whose bytes no longer match, is removed,
//     with a warning naming the file, so that wazero compiles afresh. An
//     unchanged stamp (ctime included, which no unprivileged call can set
//     back) stands for unchanged bytes, so a warm start reads no entry.
//
// Whoever runs as the same user can change config, binaries and this index
// alike; that is outside what a cache check can stop (docs/security.md).
package codecache

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/warden-run/warden/internal/osfile"
)

// Files of the guard's own, next to wazero's version directories.
const (
	indexFile = "warden-codecache.index"
	lockFile  = "warden-codecache.lock"
)

// Guard watches one cache dir. It is safe for concurrent use.
type Guard struct {
	dir string
	log *slog.Logger

	mu sync.Mutex
	// known are the entries verified by this process, by name relative to
	// dir.
	known map[string]entry
	// inflight counts loads between Begin and their end: while one runs,
	// an entry unknown to the index may be its own, not yet recorded.
	inflight int
	// used lists the entries used since the last flush of the usage
	// journal, in the order of their last use; grew is set when an entry
	// was written meanwhile; max bounds the cache's size (0: no bound,
	// for tests of the guard alone). See prune.go.
	used []string
	grew bool
	max  int64
	// files is wazero's file cache Observe wrapped (nil before), which
	// CompileVerified relies on; beforeVerified, a test's, runs just before
	// a verified compile asks wazero's engine.
	files          *observedFiles
	beforeVerified func()
	verified       atomic.Int64
	// indexStamp is the stamp of the index file when last read, so that a
	// check rereads it only when another process has written it.
	indexStamp stamp
}

// Open checks that dir is safe to run code from, creating it (mode 0700)
// if it does not exist, and removes every entry that is not recorded in
// its index as it is now. The error says what is wrong and how to fix it.
func Open(dir string, log *slog.Logger) (*Guard, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("compile cache %s: %w", dir, err)
	}
	if err := checkOwnership(dir); err != nil {
		return nil, err
	}
	g := &Guard{dir: dir, log: log, known: make(map[string]entry)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.sweepLocked(); err != nil {
		return nil, err
	}
	return g, nil
}

// checkOwnership refuses a dir that is not the user's, or that someone else
// could write entries into (osfile.CheckPrivate: mode bits on Unix, the
// DACL on Windows).
func checkOwnership(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("compile cache %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("compile cache %s is not a directory", dir)
	}
	err = osfile.CheckPrivate(dir, info)
	var foreign *osfile.NotOwnedError
	var writable *osfile.WritableError
	switch {
	case errors.As(err, &foreign):
		fix := "chown it"
		if foreign.Owner.SID != "" {
			fix = "take ownership of it"
		}
		return fmt.Errorf("compile cache %s belongs to %s, not to this user (%s): compiled code is run as trusted, so warden only uses a cache dir of its own (%s, or set tools.cache_dir)",
			dir, foreign.Owner, foreign.User, fix)
	case errors.As(err, &writable):
		return fmt.Errorf("compile cache %s is writable by others (%s): compiled code is run as trusted, so warden refuses it (%s)",
			dir, writable.Who(), writable.Fix())
	case err != nil:
		return fmt.Errorf("compile cache %s: %w", dir, err)
	}
	return nil
}

// Begin is called before a load that may read or write the cache. It
// verifies the cache as Open does, taking in entries another process
// recorded meanwhile; the returned end records the entries the load wrote.
func (g *Guard) Begin() (end func()) {
	g.mu.Lock()
	if err := g.sweepLocked(); err != nil {
		g.log.Warn("compile cache check failed", "dir", g.dir, "error", err)
	}
	g.inflight++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.inflight--
			if err := g.recordLocked(); err != nil {
				g.log.Warn("compile cache index not written", "dir", g.dir, "error", err)
			}
			g.pruneIfGrewLocked()
		})
	}
}

// sweepLocked checks every entry: kept when its stamp is the one verified
// (by this process, or in the index), or when its bytes hash to what the
// index says; otherwise removed. Unknown entries are removed only while no
// load of this process runs (one may be writing its own).
func (g *Guard) sweepLocked() error {
	index := g.readIndexLocked()
	// With no index at all (a cache written before warden kept one, or by
	// wazero alone), every entry is unknown: say so once, not per file.
	_, statErr := os.Lstat(filepath.Join(g.dir, indexFile))
	unindexed := errors.Is(statErr, fs.ErrNotExist) && len(g.known) == 0
	dropped := 0
	defer func() {
		if dropped > 0 {
			g.log.Info("compile cache has no index yet; its entries will be compiled again", "dir", g.dir, "removed", dropped)
		}
	}()
	return g.walk(func(name, path string, info fs.FileInfo) {
		st := stampOf(info)
		if e, ok := g.known[name]; ok && stampsReliable && e.stamp == st && e.size == info.Size() {
			return
		}
		e, listed := index[name]
		if !listed {
			if g.inflight > 0 {
				return
			}
			if unindexed {
				if os.Remove(path) == nil {
					dropped++
				}
				return
			}
			g.remove(name, path, "not recorded in the cache index")
			return
		}
		if stampsReliable && e.stamp == st && e.size == info.Size() {
			g.known[name] = e
			return
		}
		if e.size != info.Size() {
			g.remove(name, path, fmt.Sprintf("is %d bytes, the index recorded %d", info.Size(), e.size))
			return
		}
		sum, err := hashFile(path)
		switch {
		case err != nil:
			g.remove(name, path, "unreadable: "+err.Error())
		case sum != e.sha256:
			g.remove(name, path, "its bytes do not match the sha256 the index recorded")
		default:
			e.stamp = st
			g.known[name] = e
		}
	})
}

// recordLocked hashes the entries not known yet (a load just wrote them)
// and merges them into the index on disk, under the cross-process lock.
func (g *Guard) recordLocked() error {
	added := false
	err := g.walk(func(name, path string, info fs.FileInfo) {
		if e, ok := g.known[name]; ok && e.stamp == stampOf(info) {
			return
		}
		sum, err := hashFile(path)
		if err != nil {
			return
		}
		// The stamp is the one read before hashing: a file that changed
		// meanwhile no longer has it, so the next check hashes it again
		// (and removes it, as its bytes are no longer the ones hashed).
		g.known[name] = entry{size: info.Size(), sha256: sum, stamp: stampOf(info)}
		g.touchLocked(name)
		g.grew = true
		added = true
	})
	if err != nil || !added {
		return err
	}
	return g.writeIndexLocked()
}

// walk calls fn for every regular file in wazero's version directories.
// Anything else there (a link, a directory, a device) is removed: wazero
// writes only files. Files wazero is still writing (*.tmp) are skipped.
func (g *Guard) walk(fn func(name, path string, info fs.FileInfo)) error {
	tops, err := os.ReadDir(g.dir)
	if err != nil {
		return fmt.Errorf("compile cache %s: %w", g.dir, err)
	}
	for _, top := range tops {
		if !strings.HasPrefix(top.Name(), "wazero-") {
			continue
		}
		sub := filepath.Join(g.dir, top.Name())
		if !top.IsDir() || !validSubdir(top.Name()) {
			g.removeAll(sub, "not a wazero cache directory")
			continue
		}
		files, err := os.ReadDir(sub)
		if err != nil {
			return fmt.Errorf("compile cache %s: %w", sub, err)
		}
		for _, f := range files {
			path := filepath.Join(sub, f.Name())
			if strings.HasSuffix(f.Name(), ".tmp") && f.Type().IsRegular() {
				continue
			}
			name := top.Name() + "/" + f.Name()
			if !f.Type().IsRegular() || !validName(name) {
				g.removeAll(path, "not a compiled entry wazero writes")
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue // removed meanwhile
			}
			fn(name, path, info)
		}
	}
	return nil
}

func (g *Guard) remove(name, path, why string) {
	g.log.Warn("compile cache entry removed; it will be compiled again", "file", path, "reason", why)
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		g.log.Warn("compile cache entry could not be removed", "file", path, "error", err)
	}
	delete(g.known, name)
}

func (g *Guard) removeAll(path, why string) {
	g.log.Warn("compile cache: removed what wazero did not write", "file", path, "reason", why)
	if err := os.RemoveAll(path); err != nil {
		g.log.Warn("compile cache: could not remove", "file", path, "error", err)
	}
}

// readIndexLocked returns the index on disk. A damaged index is reported
// and read as empty: every entry is then unknown and compiled again.
func (g *Guard) readIndexLocked() map[string]entry {
	path := filepath.Join(g.dir, indexFile)
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !info.Mode().IsRegular() {
		g.log.Warn("compile cache index is not a regular file; entries will be compiled again", "file", path)
		return nil
	}
	if info.Size() > maxIndexBytes {
		g.log.Warn("compile cache index is too large; entries will be compiled again", "file", path, "bytes", info.Size())
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		g.log.Warn("compile cache index unreadable; entries will be compiled again", "file", path, "error", err)
		return nil
	}
	entries, err := decodeIndex(data)
	if err != nil {
		g.log.Warn("compile cache index damaged; entries will be compiled again", "file", path, "error", err)
		return nil
	}
	g.indexStamp = stampOf(info)
	return entries
}

// writeIndexLocked merges what this process verified into the index on
// disk (another process may have recorded entries of its own) and replaces
// it atomically, holding the cross-process lock.
func (g *Guard) writeIndexLocked() error {
	return g.withFileLock(g.writeIndexHeld)
}

// withFileLock runs fn holding the cross-process lock of the cache dir.
func (g *Guard) withFileLock(fn func() error) error {
	lock, err := osfile.OpenFile(filepath.Join(g.dir, lockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := osfile.Lock(lock); err != nil {
		return err
	}
	// Released explicitly: Windows releases a closed file's locks only
	// when it gets to it.
	defer osfile.Unlock(lock)
	return fn()
}

// writeIndexHeld is writeIndexLocked with the cross-process lock held.
func (g *Guard) writeIndexHeld() error {
	merged := make(map[string]entry)
	// Entries of the disk index that still exist stay listed: they are
	// checked against their hash before use like any other.
	for name, e := range g.readIndexLocked() {
		if _, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(name))); err == nil {
			merged[name] = e
		}
	}
	for name, e := range g.known {
		merged[name] = e
	}
	tmp, err := os.CreateTemp(g.dir, indexFile+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(encodeIndex(merged)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(g.dir, indexFile))
}

func hashFile(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	f, err := osfile.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
