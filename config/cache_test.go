package config

import (
	"strings"
	"testing"
)

func TestCacheMax(t *testing.T) {
	cfg, err := Load(writeConfig(t, "tools: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.CacheMax != 2<<30 {
		t.Fatalf("default tools.cache_max = %s, want 2GiB", cfg.Tools.CacheMax)
	}
	cfg, err = Load(writeConfig(t, "tools:\n  cache_max: 512MiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tools.CacheMax != 512<<20 {
		t.Fatalf("tools.cache_max = %s, want 512MiB", cfg.Tools.CacheMax)
	}
	// No "unbounded": 0 is refused like any bound below the floor.
	for _, v := range []string{"0", "1MiB"} {
		_, err := Load(writeConfig(t, "tools:\n  cache_max: "+v+"\n"))
		want := ":2: tools.cache_max: must be at least 64 MiB (the cache needs a bound; the default is 2GiB), got "
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cache_max %s: got %v, want %q", v, err, want)
		}
	}
}
