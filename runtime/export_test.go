package runtime

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/warden-run/warden/tool"
)

// PooledInstance makes sure t's module has an idle instance and returns its
// wazero module, for tests that drive a guest's memory and globals directly
// between calls. With MaxInstances 1 and IsolationShared, the next call runs
// on exactly this instance.
func PooledInstance(t *Tool) api.Module {
	p := t.module.loaded().pool
	// A spare made in the background may take the idle place and close
	// the instance released here: wait for it on both sides.
	p.warm.Wait()
	in, _, err := p.acquire(context.Background(), "")
	if err != nil {
		panic(err)
	}
	p.release(context.Background(), in, true)
	p.warm.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle[len(p.idle)-1].Mod
}

// SetLoadHooks makes r call loading as a lazy load starts and joined as a
// caller is about to wait for one, so that tests can stop either at that
// exact point.
func SetLoadHooks(r *Runtime, loading, joined func(module string)) {
	r.testHooks = testHooks{loading: loading, joined: joined}
}

// SetCompileHook makes r compile through f, which gets wazero's own compile
// to call (or not), so that a test can fail a compile at that exact point.
func SetCompileHook(r *Runtime, f func(ctx context.Context, wasm []byte, compile func() (wazero.CompiledModule, error)) (wazero.CompiledModule, error)) {
	r.testHooks.compile = func(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
		return f(ctx, wasm, func() (wazero.CompiledModule, error) { return r.wz.CompileModule(ctx, wasm) })
	}
}

// SetSpareHooks makes r call spare as a spare instance of a module starts
// being made in the background, and closeWaits as Close is about to wait
// for such spares, so that a test can close r at that exact point.
func SetSpareHooks(r *Runtime, spare func(module string), closeWaits func()) {
	r.testHooks.spare = spare
	r.testHooks.closeWaits = closeWaits
}

// WithDiskCacheOpener returns o opening wazero's disk cache through f.
func WithDiskCacheOpener(o Options, f func(dir string) (wazero.CompilationCache, error)) Options {
	o.openDiskCache = f
	return o
}

// SetPluginCompileHook makes r compile Extism plugins through f, which gets
// the SDK's compile to run (or not).
func SetPluginCompileHook(r *Runtime, f func(compile func() error) error) {
	r.testHooks.pluginCompile = f
}

// ManifestFile is the file m's manifest is stored in ("" in memory).
func ManifestFile(m *Module) string { return m.rt.manifests.Path(m.hold.key) }

// WaitSpare waits until the background making of a spare instance of m, if
// one is under way, has ended.
func WaitSpare(m *Module) { m.loaded().pool.warm.Wait() }

// ColdStarts counts the instances of m made on a call's path rather than
// ahead of it.
func ColdStarts(m *Module) int64 { return m.loaded().pool.coldStarts.Load() }

// InstrumentPasses counts the instrumentation passes r ran (a load whose
// pass output came from the disk cache runs none).
func InstrumentPasses(r *Runtime) int64 { return r.host.Passes.Load() }

// CheckFeatures runs the load-time check of a module's features
// (checkFeatureTools) on f, for a module whose tools are named tools.
func CheckFeatures(f *tool.Features, tools ...string) error {
	l := &listing{features: f}
	for _, name := range tools {
		l.tools = append(l.tools, &Tool{Descriptor: tool.Descriptor{Name: name}})
	}
	return l.checkFeatureTools()
}

// SetBackgroundCompileHook makes r call f as a tiered load's background
// compile of module starts, before it takes a compile slot: a test holds
// the compile there to keep the module on the interpreter.
func SetBackgroundCompileHook(r *Runtime, f func(module string)) {
	r.testHooks.background = f
}

// SetSwapHook makes r call f as a tiered load's background compile has
// ended: swapped in, or failed with err.
func SetSwapHook(r *Runtime, f func(module string, err error)) {
	r.testHooks.swapped = f
}

// LiveInstances counts the instances of m not yet closed.
func LiveInstances(m *Module) int64 { return m.loaded().pool.live.Load() }

// VerifiedCompiles counts the compiles r's disk cache served without
// validating the module again (codecache.CompileVerified).
func VerifiedCompiles(r *Runtime) int64 {
	if r.codeGuard == nil {
		return 0
	}
	return r.codeGuard.Verified()
}

// NewInstance makes an instance of m the way a spare is made (instantiate,
// then restore the snapshot, or run the initializers where there is none)
// and closes it, for benchmarks of what making an instance costs.
func NewInstance(ctx context.Context, m *Module) error {
	in, err := m.loaded().pool.engine.NewInstance(ctx)
	if err != nil {
		return err
	}
	in.Close(ctx)
	return nil
}
