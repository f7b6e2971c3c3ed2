package codecache

import (
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Pruning. A cache dir grows by an entry per module, per version of it,
// per warden and wazero version: without a bound it fills a disk (it
// did, on a CI machine). The guard keeps it under a size (SetMax) by
// removing whole entries, least recently used first, under the
// cross-process lock: after a load that wrote to it (Begin's end), and on
// demand (Prune, `warden cache prune`). Recency is the usage journal's
// (usage.go), which the entries' users feed through Touch: wazero's reads
// and writes of compiled code (Observe), the instrumented modules', the
// manifests' and the tier marks' stores.

// SetMax bounds the size of the cache's entries to max bytes; 0 leaves
// them unbounded (the guard's own tests; warden always sets a bound).
func (g *Guard) SetMax(max int64) {
	g.mu.Lock()
	g.max = max
	g.mu.Unlock()
}

// Touch records a use of the entry at path, a file inside the cache dir;
// a path that is not an entry (Prunable) is ignored. The use reaches the
// journal at the next Flush, or with the next write to the cache.
func (g *Guard) Touch(path string) {
	rel, err := filepath.Rel(g.dir, path)
	if err != nil {
		return
	}
	g.mu.Lock()
	g.touchLocked(filepath.ToSlash(rel))
	g.mu.Unlock()
}

// Wrote records that an entry was written at path: the cache grew, so the
// next load's end checks its size.
func (g *Guard) Wrote(path string) {
	g.Touch(path)
	g.mu.Lock()
	g.grew = true
	g.mu.Unlock()
}

func (g *Guard) touchLocked(name string) {
	if !Prunable(name) {
		return
	}
	// The last use is what counts: an entry used again moves to the end.
	if i := slices.Index(g.used, name); i >= 0 {
		g.used = slices.Delete(g.used, i, i+1)
	}
	g.used = append(g.used, name)
}

// Flush writes the uses recorded since the last flush into the journal.
func (g *Guard) Flush() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.used) == 0 {
		return nil
	}
	return g.withFileLock(func() error {
		_, err := g.flushHeld()
		return err
	})
}

// flushHeld merges the uses recorded into the journal, numbering them
// after its highest use, drops the lines of entries that are gone, writes
// it, and returns it. It holds g.mu and the cross-process lock.
func (g *Guard) flushHeld() (map[string]uint64, error) {
	path := filepath.Join(g.dir, usageFile)
	var data []byte
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() && info.Size() <= maxUsageBytes {
		data, _ = os.ReadFile(path)
	}
	uses := decodeUsage(data)
	var next uint64
	for _, use := range uses {
		next = max(next, use)
	}
	for _, name := range g.used {
		next++
		uses[name] = next
	}
	g.used = g.used[:0]
	for name := range uses {
		if _, err := os.Lstat(filepath.Join(g.dir, filepath.FromSlash(name))); errors.Is(err, fs.ErrNotExist) {
			delete(uses, name)
		}
	}
	return uses, writeFileAtomic(g.dir, usageFile, encodeUsage(uses))
}

// Pruned is what a prune did.
type Pruned struct {
	// Removed counts the entries removed, Freed their bytes.
	Removed int
	Freed   int64
	// Entries and Size are what the cache holds after it.
	Entries int
	Size    int64
}

// Prune removes entries, least recently used first, until the cache's
// entries take at most max bytes; 0 removes every entry.
func (g *Guard) Prune(bound int64) (Pruned, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pruneLocked(max(bound, 0))
}

// pruneIfGrewLocked prunes to the guard's bound when an entry was written
// since the last prune; every use recorded is flushed on the way.
func (g *Guard) pruneIfGrewLocked() {
	if !g.grew || g.max <= 0 {
		return
	}
	g.grew = false
	if p, err := g.pruneLocked(g.max); err != nil {
		g.log.Warn("compile cache not pruned", "dir", g.dir, "error", err)
	} else if p.Removed > 0 {
		g.log.Info("compile cache pruned to its bound (tools.cache_max): least recently used entries removed",
			"dir", g.dir, "removed", p.Removed, "freed", p.Freed, "size", p.Size, "max", g.max)
	}
}

func (g *Guard) pruneLocked(max int64) (Pruned, error) {
	var p Pruned
	err := g.withFileLock(func() error {
		uses, err := g.flushHeld()
		if err != nil {
			return err
		}
		all, err := Entries(g.dir)
		if err != nil {
			return err
		}
		for _, e := range all {
			p.Size += e.Size
		}
		p.Entries = len(all)
		if p.Size <= max && max > 0 {
			return nil
		}
		// Least recently used first; entries the journal does not name
		// (never used since it was kept) before all others, and ties in
		// the order of their names, so that a prune is reproducible.
		slices.SortFunc(all, func(a, b Entry) int {
			return cmp.Or(cmp.Compare(uses[a.Name], uses[b.Name]), strings.Compare(a.Name, b.Name))
		})
		for _, e := range all {
			if p.Size <= max && max > 0 {
				break
			}
			if err := os.Remove(filepath.Join(g.dir, filepath.FromSlash(e.Name))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				// In use elsewhere (Windows), or not ours to remove:
				// the next prune tries again.
				g.log.Warn("compile cache entry not pruned", "entry", e.Name, "error", err)
				continue
			}
			delete(g.known, e.Name)
			delete(uses, e.Name)
			p.Removed++
			p.Freed += e.Size
			p.Size -= e.Size
			p.Entries--
		}
		if err := writeFileAtomic(g.dir, usageFile, encodeUsage(uses)); err != nil {
			return err
		}
		return g.writeIndexHeld()
	})
	return p, err
}

// Entry is one entry of a cache dir: its name (Prunable) and size.
type Entry struct {
	Name string
	Size int64
}

// Entries lists the entries of the cache in dir, in no particular order.
// Files that are not entries (the guard's own, files being written, what
// another program left there) are not listed, and never pruned.
func Entries(dir string) ([]Entry, error) {
	var out []Entry
	tops, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for _, top := range tops {
		if !top.IsDir() {
			continue
		}
		files, err := os.ReadDir(filepath.Join(dir, top.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			name := top.Name() + "/" + f.Name()
			if !f.Type().IsRegular() || !Prunable(name) {
				continue
			}
			info, err := f.Info()
			if err != nil {
				continue // removed meanwhile
			}
			out = append(out, Entry{Name: name, Size: info.Size()})
		}
	}
	return out, nil
}

// writeFileAtomic replaces dir/name with data, never leaving half of it.
func writeFileAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, name))
}

// Used is Touch, or Wrote when wrote is set: the hook the cache's other
// stores report their entries' uses to.
func (g *Guard) Used(path string, wrote bool) {
	if wrote {
		g.Wrote(path)
	} else {
		g.Touch(path)
	}
}
