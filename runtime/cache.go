package runtime

import (
	"fmt"
	"log/slog"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/runtime/internal/codecache"
)

// The disk cache's bound (Options.CacheMax, tools.cache_max). Its
// entries are wazero's compiled code, the instrumented modules, the
// descriptor manifests and the tier marks; each is whole on its own, so
// removing one costs only its own recompile. After a load that wrote an
// entry, the least recently used ones are removed, under the cache's
// cross-process lock, until the cache fits (runtime/internal/codecache,
// prune.go); every use of an entry (wazero reading compiled code, a hit
// in the instrumented modules or manifests) counts.

// DefaultCacheMax is the disk cache's bound when Options.CacheMax is 0.
const DefaultCacheMax = limits.DefaultCacheMax

// boundCache has the guard hear of every use of the cache's entries and
// keep it under max bytes (0: DefaultCacheMax).
func (r *Runtime) boundCache(max uint64) {
	if max == 0 {
		max = DefaultCacheMax
	}
	r.codeGuard.SetMax(int64(min(max, 1<<62)))
	if err := r.codeGuard.Observe(r.cache); err != nil {
		// Pruning still bounds the cache; compiled code then ages by
		// when it was written, not by when it was last read.
		r.log.Warn("compile cache: reads of compiled code are not tracked; pruning removes the oldest first", "error", err)
	}
	r.instrumented.Observe(r.codeGuard.Used)
	r.manifests.Observe(r.codeGuard.Used)
}

// cacheUsed is the hook the cache's stores report their entries' uses to,
// nil without a disk cache.
func (r *Runtime) cacheUsed() func(path string, wrote bool) {
	if r.codeGuard == nil {
		return nil
	}
	return r.codeGuard.Used
}

// CacheSize is what a disk cache holds: its entries, and their bytes.
type CacheSize struct {
	Entries int
	Bytes   int64
}

// CacheSizeOf returns what the disk cache in dir holds; a dir that does
// not exist holds nothing.
func CacheSizeOf(dir string) (CacheSize, error) {
	entries, err := codecache.Entries(dir)
	if err != nil {
		return CacheSize{}, fmt.Errorf("compile cache %s: %w", dir, err)
	}
	var s CacheSize
	for _, e := range entries {
		s.Entries++
		s.Bytes += e.Size
	}
	return s, nil
}

// Pruned is what PruneCache did: the entries it removed and their bytes,
// and what the cache holds after it.
type Pruned struct {
	Removed int
	Freed   int64
	After   CacheSize
}

// PruneCache removes entries of the disk cache in dir, least recently
// used first, until they hold at most max bytes (0 removes them all). It
// checks the dir as a start does (codecache.Open: a dir others may write
// is refused, entries not in its index are removed) and holds the cache's
// lock while it prunes, so a warden running on the same cache meanwhile
// only recompiles what it finds gone.
func PruneCache(dir string, max uint64, log *slog.Logger) (Pruned, error) {
	g, err := codecache.Open(dir, log)
	if err != nil {
		return Pruned{}, err
	}
	p, err := g.Prune(int64(min(max, 1<<62)))
	if err != nil {
		return Pruned{}, fmt.Errorf("compile cache %s: %w", dir, err)
	}
	return Pruned{Removed: p.Removed, Freed: p.Freed, After: CacheSize{Entries: p.Entries, Bytes: p.Size}}, nil
}
