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
	in, _, err := t.module.pool.acquire(context.Background(), "")
	if err != nil {
		panic(err)
	}
	t.module.pool.release(context.Background(), in, true)
	return in.mod
}

// WaitSpare waits until the background making of a spare instance of m, if
// one is under way, has ended.
func WaitSpare(m *Module) { m.pool.warm.Wait() }

// ColdStarts counts the instances of m made on a call's path rather than
// ahead of it.
func ColdStarts(m *Module) int64 { return m.pool.coldStarts.Load() }
