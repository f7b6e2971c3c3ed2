package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/warden-run/warden/internal/termsafe"
	"github.com/warden-run/warden/runtime/internal/codecache"
	"github.com/warden-run/warden/runtime/internal/manifest"
	"github.com/warden-run/warden/tool"
)

// ErrNotCached is Open's answer, under OpenOptions.CachedOnly, for a module
// with no valid descriptor manifest.
var ErrNotCached = errors.New("no valid descriptor manifest")

// OpenOptions tune Runtime.Open.
type OpenOptions struct {
	// Accept, if set, is given the module's sha256 before anything else is
	// done with the module (a pin check); an error refuses it, and Open
	// returns that error.
	Accept func(sha256 string) error
	// Read returns the module's bytes again when a module opened from its
	// manifest compiles, or comes back after an idle release; they must
	// hash to the sha256 the module was opened with. Nil keeps the bytes
	// given to Open in memory instead.
	Read func() ([]byte, error)
	// CachedOnly makes Open return ErrNotCached instead of loading a module
	// that has no valid manifest.
	CachedOnly bool
	// LoadFailed is called once, from the loading goroutine, when a module
	// opened from its manifest fails to load on first use. The module then
	// refuses every call with that error. A file that cannot be read (Read
	// fails) is not such a failure: the calls waiting for that load fail
	// as tool.KindUnavailable, naming the file and the reason, and the
	// next call reads it again.
	LoadFailed func(m *Module, err error)
	// Observe hears of every compile of the module: when it starts and when
	// it ends (Done), for a person watching a cold start.
	Observe func(LoadEvent)
}

// LoadEvent is the start or the end of one module's load (compile,
// instrumentation and start-up).
type LoadEvent struct {
	Module  string
	Done    bool
	Elapsed time.Duration // when Done
	Err     error         // when Done and the load failed
}

// hold is how a Module holds its body: one path for every module,
// whether its body was loaded at once (Load, or Open without a manifest)
// or is loaded on the first call (Open from a manifest, or after an idle
// release). A call takes the body (acquire) and gives it back (release);
// the first caller to find none starts a load (a flight) that the others
// join. A body is released when idle only if the module can be loaded
// again: from the bytes kept, or by OpenOptions.Read.
type hold struct {
	opts OpenOptions
	// key is the module's manifest key; "" for a module from Load, which
	// stores no manifest.
	key string
	// wasm is the module's bytes, kept by Open when opts.Read is nil.
	wasm []byte

	mu       sync.Mutex
	body     *body
	flight   *flight // the load in progress, nil when none
	active   int     // calls using body
	lastUsed time.Time
	failed   error // a failed load: every call gets it
	closed   bool
	stop     context.CancelFunc // cancels a load in progress, at Close
}

// reloadable reports whether the module's body can be loaded again after
// it is released.
func (h *hold) reloadable() bool { return h.wasm != nil || h.opts.Read != nil }

// flight is one load of a module's body; every caller that needs the body
// meanwhile waits for the same one.
type flight struct {
	done    chan struct{}
	started time.Time
	// err, set before done closes, is a failure of this load only (the
	// module's file could not be read): its waiters get it, and the next
	// call loads again.
	err error
}

// loadKey is the manifest key of a module with the given sha256 and
// limits (defaults filled in): everything that shapes a load's outcome.
func (r *Runtime) loadKey(sum string, limits Limits) string {
	var host []string
	for name, sig := range r.hostImports() {
		host = append(host, hostModuleName+"."+name+sig.String())
	}
	return manifest.Key(sum, manifest.KeyInput{
		ABIVersion: ABIVersion,
		Limits: map[string]int64{
			"memory":         int64(limits.Memory),
			"fuel":           limits.Fuel,
			"load_budget":    int64(limits.LoadBudget),
			"max_output":     int64(limits.MaxOutput),
			"compile_budget": int64(limits.CompileBudget),
		},
		HostImports: host,
	})
}

// Open returns the module wasm as a Module whose body is loaded on first
// use and released when idle. When the manifest cache holds a valid entry
// for these bytes under these limits, the module's tools come from it and
// nothing is compiled until the first call. Otherwise the module is loaded at once (as by Load), its manifest
// is stored, and it is released when idle like any other.
func (r *Runtime) Open(ctx context.Context, name string, wasm []byte, limits Limits, opts OpenOptions) (*Module, error) {
	digest := sha256.Sum256(wasm)
	return r.open(ctx, name, hex.EncodeToString(digest[:]), wasm, limits, opts)
}

// OpenFile is Open for the module file at path. The file is hashed as it
// is read, a piece at a time, and read whole only when the module must be
// loaded (its bytes must then hash the same): a warm start holds no
// module's bytes in memory. opts.Read defaults to reading path.
func (r *Runtime) OpenFile(ctx context.Context, name, path string, limits Limits, opts OpenOptions) (*Module, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if opts.Read == nil {
		opts.Read = func() ([]byte, error) { return os.ReadFile(path) }
	}
	// The file is read again at the module's first call, maybe long
	// after: what then goes wrong names it.
	read := opts.Read
	opts.Read = func() ([]byte, error) {
		wasm, err := read()
		var pe *fs.PathError
		if err != nil && !errors.As(err, &pe) {
			err = &fs.PathError{Op: "read", Path: path, Err: err}
		}
		return wasm, err
	}
	return r.open(ctx, name, hex.EncodeToString(h.Sum(nil)), nil, limits, opts)
}

// open is Open for a module whose bytes hash to sum; wasm is nil when they
// are to be read by opts.Read, and then only if the module must load.
func (r *Runtime) open(ctx context.Context, name, sum string, wasm []byte, limits Limits, opts OpenOptions) (*Module, error) {
	m, err := r.newModule(name, sum, limits)
	if err != nil {
		return nil, err
	}
	if opts.Accept != nil {
		if err := opts.Accept(sum); err != nil {
			return nil, err
		}
	}
	m.hold.opts, m.hold.key = opts, r.loadKey(sum, m.limits)
	if opts.Read == nil {
		m.hold.wasm = wasm
	}
	if mf, ok := r.manifests.Get(m.hold.key, sum); ok {
		l, err := m.describe(mf.Descriptor)
		if err == nil {
			l.kind, l.imports, l.exports = mf.Kind, mf.Imports, mf.Exports
			m.listing = *l
			return m, nil
		}
		// Valid when stored, refused by this warden's descriptor rules:
		// load the module again and let the load say what is wrong.
		r.log.Warn("descriptor manifest no longer valid; the module is loaded again",
			"module", name, "file", r.manifests.Path(m.hold.key), "error", err)
		r.manifests.Delete(m.hold.key)
	}
	if opts.CachedOnly {
		return nil, ErrNotCached
	}
	var b *body
	var l *listing
	if wasm == nil {
		b, l, err = m.reload(ctx)
	} else {
		b, l, err = m.loadCounted(ctx, wasm)
	}
	if err != nil {
		return nil, err
	}
	m.listing = *l
	m.storeManifest()
	m.hold.body, m.hold.lastUsed = b, time.Now()
	return m, nil
}

// loadCounted is loadBody, reported to OpenOptions.Observe and counted.
func (m *Module) loadCounted(ctx context.Context, wasm []byte) (*body, *listing, error) {
	observe := m.hold.opts.Observe
	start := time.Now()
	if observe != nil {
		observe(LoadEvent{Module: m.name})
	}
	m.rt.bodyLoads.Add(1)
	b, l, err := m.loadBody(ctx, wasm)
	if observe != nil {
		observe(LoadEvent{Module: m.name, Done: true, Elapsed: time.Since(start), Err: err})
	}
	return b, l, err
}

// storeManifest stores what m lists, for the next start to list it
// without loading it.
func (m *Module) storeManifest() {
	mf := &manifest.Manifest{
		ModuleSHA256: m.sha256, Key: m.hold.key, Kind: m.kind,
		Descriptor: m.descriptor, Imports: m.imports, Exports: m.exports,
	}
	for _, rej := range m.rejected {
		mf.Rejected = append(mf.Rejected, manifest.Rejection{Name: rej.Name, Reason: rej.Reason.Error()})
	}
	if err := m.rt.manifests.Put(mf); err != nil {
		// The module still serves; the next start compiles it again.
		m.rt.log.Warn("descriptor manifest not stored", "module", m.name, "error", err)
	}
}

// Loaded reports whether the module's code is compiled and instantiated
// now (false for a module listed from its manifest and not called yet, or
// released when idle).
func (m *Module) Loaded() bool { return m.loaded() != nil }

// loaded returns the module's body if it is loaded now, for what needs no
// load (EndSession, Live).
func (m *Module) loaded() *body {
	m.hold.mu.Lock()
	defer m.hold.mu.Unlock()
	return m.hold.body
}

// Preload loads the module's body now, if it is not loaded, and waits for
// it; a call racing it joins the same load.
func (m *Module) Preload(ctx context.Context) error {
	if _, err := m.acquire(ctx, nil); err != nil {
		return err
	}
	m.release()
	return nil
}

// ReleaseIdle releases the module's instances and compiled code when no
// call has used them for ttl as of now, and reports whether it did. The
// next call loads them again (from the compilation cache). Instances kept
// for sessions go too: those sessions' next calls start from fresh state.
// A module from Load, which could not load again, is never released.
func (m *Module) ReleaseIdle(now time.Time, ttl time.Duration) bool {
	h := &m.hold
	if !h.reloadable() || ttl <= 0 {
		return false
	}
	h.mu.Lock()
	b := h.body
	if b == nil || h.active > 0 || now.Sub(h.lastUsed) < ttl {
		h.mu.Unlock()
		return false
	}
	h.body = nil
	h.mu.Unlock()
	b.close(context.Background())
	m.rt.log.Debug("idle module released", "module", m.name, "idle", now.Sub(h.lastUsed).Round(time.Second))
	return true
}

// acquire returns the module's body for one use, loading it if needed;
// m.release must follow. While it waits for a load, observer (if any) hears
// progress every second. A loaded body costs a lock, and no allocation.
func (m *Module) acquire(ctx context.Context, observer tool.Observer) (*body, error) {
	h := &m.hold
	reported := false
	for {
		h.mu.Lock()
		switch {
		case h.closed:
			h.mu.Unlock()
			return nil, fmt.Errorf("module %s is closed (unloaded or replaced)", m.name)
		case h.failed != nil:
			err := h.failed
			h.mu.Unlock()
			return nil, err
		case h.body != nil:
			// lastUsed is set as the use ends (release): while it lasts,
			// active keeps the body from being released.
			b := h.body
			h.active++
			h.mu.Unlock()
			return b, nil
		}
		f := h.flight
		if f == nil {
			if !m.rt.startLoad() {
				h.mu.Unlock()
				return nil, fmt.Errorf("module %s: the runtime is closed", m.name)
			}
			f = &flight{done: make(chan struct{}), started: time.Now()}
			h.flight = f
			loadCtx, cancel := context.WithCancel(context.Background())
			h.stop = cancel
			go m.load(loadCtx, cancel, f)
		}
		h.mu.Unlock()
		if hook := m.rt.testHooks.joined; hook != nil {
			hook(m.name)
		}
		if err := m.wait(ctx, f, observer, &reported); err != nil {
			return nil, err
		}
		if f.err != nil {
			return nil, f.err
		}
	}
}

// release ends a use of the body acquire returned.
func (m *Module) release() {
	h := &m.hold
	h.mu.Lock()
	h.active--
	if h.reloadable() {
		// Only a body that can be released when idle needs to know when it
		// was last used; a module from Load skips the clock read.
		h.lastUsed = time.Now()
	}
	h.mu.Unlock()
}

// wait waits for f to end, reporting progress to observer.
func (m *Module) wait(ctx context.Context, f *flight, observer tool.Observer, reported *bool) error {
	var tick <-chan time.Time
	if observer != nil {
		if !*reported {
			*reported = true
			observer.Progress(tool.Progress{Progress: 0, Message: fmt.Sprintf("loading module %s (first use)", m.name)})
		}
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	for ticks := 1; ; {
		select {
		case <-f.done:
			return nil
		case now := <-tick:
			// Progress must increase with every report, and so must the
			// tool's own reports after these: the wait counts up below
			// 0.001, under anything a tool counting from 0 or 1 reports.
			p := 0.001 * float64(ticks) / float64(ticks+1)
			ticks++
			observer.Progress(tool.Progress{Progress: p,
				Message: fmt.Sprintf("loading module %s: %s", m.name, now.Sub(f.started).Round(time.Second))})
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// load loads the body for flight f. The load is bounded by the module's
// compile and load budgets, not by any one caller: a caller that gives up
// leaves it to the others (and to the next call).
func (m *Module) load(ctx context.Context, cancel context.CancelFunc, f *flight) {
	defer m.rt.loads.Done()
	defer cancel()
	h := &m.hold
	if hook := m.rt.testHooks.loading; hook != nil {
		hook(m.name)
	}
	b, _, err := m.reload(ctx)
	var unreadable *unreadableError
	h.mu.Lock()
	h.flight = nil
	switch {
	case h.closed:
		h.mu.Unlock()
		close(f.done)
		if b != nil {
			b.close(context.Background())
		}
		return
	case errors.As(err, &unreadable):
		// Nothing is known to be wrong with the module, only with its
		// file now (permissions, a mount, a file being replaced): the
		// module stays listed and the next call reads the file again.
		h.mu.Unlock()
		m.rt.log.Warn("module file unreadable at first use; the next call tries again", "module", m.name, "error", err)
		f.err = unreadable.toolError(m.name)
		close(f.done)
		return
	case err != nil:
		h.failed = fmt.Errorf("module %s failed to load: %w", m.name, err)
		err = h.failed
	default:
		h.body, h.lastUsed = b, time.Now()
	}
	h.mu.Unlock()
	if err != nil {
		// The manifest promised tools this load cannot serve: the next start
		// loads the module afresh instead of listing them again. LoadFailed
		// runs before the waiting callers hear of the failure, so that what
		// it does (the app unlisting the module) is done when they answer.
		m.rt.manifests.Delete(h.key)
		m.rt.log.Error("module failed to load on first use", "module", m.name, "error", err)
		if h.opts.LoadFailed != nil {
			h.opts.LoadFailed(m, err)
		}
	}
	close(f.done)
}

// reload loads m's body again from the bytes kept or read (opts.Read),
// which must hash as they did when m was opened. Once m lists tools, the
// body must describe itself exactly as listed: the listing's tools are the
// ones its calls run.
func (m *Module) reload(ctx context.Context) (*body, *listing, error) {
	h := &m.hold
	wasm := h.wasm
	if h.opts.Read != nil {
		var err error
		if wasm, err = h.opts.Read(); err != nil {
			return nil, nil, &unreadableError{err}
		}
	}
	if digest := sha256.Sum256(wasm); hex.EncodeToString(digest[:]) != m.sha256 {
		return nil, nil, fmt.Errorf("its file changed since it was hashed and listed (sha256 %s…, now %s…)",
			m.sha256[:12], hex.EncodeToString(digest[:6]))
	}
	b, l, err := m.loadCounted(ctx, wasm)
	if err != nil {
		return nil, nil, err
	}
	if m.descriptor != nil && !bytes.Equal(l.descriptor, m.descriptor) {
		// Same bytes, same limits, another descriptor: the manifest was
		// written by someone else than this loader (its checksum only
		// catches damage), or the module's describe is not deterministic.
		// Either way what was listed is not what would run.
		b.close(context.Background())
		return nil, nil, fmt.Errorf("it describes itself differently than its cached descriptor manifest %s says (the cache was altered, or its describe is not deterministic); it is loaded afresh at the next start",
			m.rt.manifests.Path(h.key))
	}
	return b, l, nil
}

// unreadableError is a module file that could not be read when its body
// was to be loaded: an operational condition (a permission, a mount, a
// file being replaced), not a fault of the module or of warden.
type unreadableError struct{ err error }

func (e *unreadableError) Error() string { return e.err.Error() }
func (e *unreadableError) Unwrap() error { return e.err }

// toolError is the unavailable error a call gets: the file and the
// operating system's reason, and that a later call tries again.
func (e *unreadableError) toolError(module string) *tool.Error {
	file, reason := "", e.err.Error()
	var pe *fs.PathError
	if errors.As(e.err, &pe) {
		file, reason = " "+pe.Path, pe.Op+": "+pe.Err.Error()
	}
	return tool.Errorf(tool.KindUnavailable, "module %s cannot load: its file%s cannot be read (%s); the next call reads it again, so making it readable needs no restart",
		module, termsafe.Line(file), reason)
}

// bodyError is the error of a call or an op of m that could not get m's
// body: its caller gave up waiting, the body could not be read for now
// (unavailable, unreadableError), the module failed to load, or it is
// closed.
func (m *Module) bodyError(ctx context.Context, name string, err error) *tool.Error {
	if ctx.Err() != nil {
		return contextError(ctx, name, 0, fmt.Sprintf("waiting for module %s to load", m.name), "")
	}
	// Only a flight's own error is a *tool.Error as it is; a failed load
	// wraps what went wrong (which may carry a guest's kind) in its own
	// message.
	if te, ok := err.(*tool.Error); ok {
		return tool.Errorf(te.Kind, "%s: %s", name, te.Message)
	}
	return tool.Errorf(tool.KindInternal, "%s: %v", name, err)
}

// Close releases the module's instances and compiled code, or the load in
// progress once it ends. Calls after it fail.
func (m *Module) Close(ctx context.Context) error {
	h := &m.hold
	h.mu.Lock()
	h.closed = true
	b := h.body
	h.body = nil
	if h.stop != nil {
		h.stop()
	}
	h.mu.Unlock()
	if b != nil {
		return b.close(ctx)
	}
	return nil
}

// startLoad counts a lazy load in, unless the runtime is closing (Close
// then waits for the loads counted in).
func (r *Runtime) startLoad() bool {
	r.loadsMu.Lock()
	defer r.loadsMu.Unlock()
	if r.closing {
		return false
	}
	r.loads.Add(1)
	return true
}

// BodyLoads counts the module loads (compile, checks, start-up) the
// Modules this runtime opened have done (Open's, at once or at a first
// call; Load's are not counted): a warm start that lists tools from
// manifests does none.
func (r *Runtime) BodyLoads() int64 { return r.bodyLoads.Load() }

// testHooks let tests stop a load or a waiting call at an exact point.
type testHooks struct {
	loading func(module string) // a lazy load is about to start
	joined  func(module string) // a caller is about to wait for a load
	// compile stands in for wazero's CompileModule (fault injection).
	compile func(ctx context.Context, wasm []byte) (wazero.CompiledModule, error)
	// pluginCompile stands around an Extism plugin's compile in the SDK
	// (fault injection): it gets the compile to run, or not.
	pluginCompile func(compile func() error) error
	// spare is called as a spare instance starts being made; closeWaits
	// as Close finds spares being made and is about to wait for them
	// (with the Runtime's loadsMu held).
	spare      func(module string)
	closeWaits func()
	// background is called as a tiered load's background compile starts,
	// before it takes a compile slot.
	background func(module string)
	// swapped is called as a background compile has ended, swapped in or
	// failed (err).
	swapped func(module string, err error)
}

// newManifestStore keeps manifests beside the compilation cache, in
// <cache dir>/manifests, or in memory when the cache is off.
func newManifestStore(cacheDir string, log *slog.Logger) *manifest.Store {
	switch cacheDir {
	case "off":
		return manifest.NewStore("", log)
	case "":
		dir, err := DefaultCacheDir()
		if err != nil {
			return manifest.NewStore("", log)
		}
		cacheDir = dir
	}
	return manifest.NewStore(filepath.Join(cacheDir, codecache.PartManifests), log)
}
