package runtime

import (
	"context"

	"github.com/tetratelabs/wazero/api"
)

// PooledInstance makes sure t's module has an idle instance and returns its
// wazero module, for tests that drive a guest's memory and globals directly
// between calls. With MaxInstances 1 and IsolationShared, the next call runs
// on exactly this instance.
func PooledInstance(t *Tool) api.Module {
	in, err := t.module.pool.acquire(context.Background(), "")
	if err != nil {
		panic(err)
	}
	t.module.pool.release(context.Background(), in, true)
	return in.Mod
}

// SetLoadHooks makes r call loading as a lazy load starts and joined as a
// caller is about to wait for one, so that tests can stop either at that
// exact point.
func SetLoadHooks(r *Runtime, loading, joined func(module string)) {
	r.testHooks = testHooks{loading: loading, joined: joined}
}

// ManifestFile is the file m's manifest is stored in ("" in memory).
func ManifestFile(m *Module) string { return m.rt.manifests.Path(m.lazy.key) }
