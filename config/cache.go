package config

// The compile cache's settings: tools.cache_dir (where, or off) and
// tools.cache_max (how much it may hold on disk). The cache grows by an
// entry per module version, per warden and wazero version; unbounded, it
// once filled a CI machine's disk, so there is no "unbounded": the bound
// has a default (limits.DefaultCacheMax) and a floor.

// MinCacheMax is the smallest tools.cache_max: below it the compiled code
// of one Go guest (20-40 MB) would not fit, and every start would compile
// it again.
const MinCacheMax = 64 << 20

// validateCache reports a tools.cache_max that is not a usable bound.
func (t Tools) validateCache(fail func(key, format string, args ...any)) {
	if t.CacheMax < MinCacheMax {
		fail("tools.cache_max", "must be at least %s (the cache needs a bound; the default is 2GiB), got %s",
			ByteSize(MinCacheMax), t.CacheMax)
	}
}
