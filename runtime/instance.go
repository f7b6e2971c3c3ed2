package runtime

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/tool"
)

// instance is one instantiation of a Module, used by one call at a time.
type instance struct {
	mod            api.Module
	alloc, call    api.Function
	memory         *limitedMemory
	stdout, stderr *boundedBuffer
	// callCtx is the context of the call running on this instance, so that
	// a guest asleep in poll_oneoff wakes when its call is cancelled.
	callCtx atomic.Pointer[context.Context]
	// owner is the session this instance is bound to (IsolationSession).
	owner *sessionInstance
	// globals caches the exported mutable globals a snapshot restores.
	globals []api.MutableGlobal
	// meter drives the instance's fuel and call-depth globals.
	meter *instrument.Meter
	// ext is the Extism side of a plugin's instance (nil for a native
	// module); mod is then the plugin's main module.
	ext *extismInstance
	// pool counts the instance among its module's live ones.
	pool *pool
	// random is the instance's WASI random source.
	random *guestRandom
	// inAlloc is non-zero while the host runs warden_alloc: host functions
	// refuse to serve then (callStateFrom).
	inAlloc int
}

// guestRandom is an instance's WASI random source. While the guest
// initializes, it is a ChaCha8 stream seeded by the module's digest: the Go
// runtime draws its hash and scheduler seeds there, and everything they
// steer (map layout, probe lengths) then is the same on every load and both
// engines, so fuel per call is deterministic. Once initialized (settle), it
// is crypto/rand, so a tool generating a key or token at call time gets an
// unpredictable one.
type guestRandom struct {
	settled atomic.Bool
	mu      sync.Mutex
	stream  *mathrand.ChaCha8
}

func newGuestRandom(moduleDigest string) *guestRandom {
	return &guestRandom{stream: mathrand.NewChaCha8(sha256.Sum256([]byte(moduleDigest)))}
}

func (r *guestRandom) Read(p []byte) (int, error) {
	if r.settled.Load() {
		return rand.Read(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream.Read(p)
}

// settle switches to crypto/rand for good.
func (r *guestRandom) settle() { r.settled.Store(true) }

// newInstance instantiates m's compiled code. It runs no guest code: the
// caller either runs _initialize or restores a snapshot.
func (m *Module) newInstance(ctx context.Context) (*instance, error) {
	in, config := m.newShell(ctx)
	mod, err := m.rt.wz.InstantiateModule(experimental.WithMemoryAllocator(ctx, in.memory), m.compiled,
		config.WithName("").WithStartFunctions())
	if err != nil {
		in.memory.acct.close()
		return nil, fmt.Errorf("instantiate: %w", err)
	}
	in.mod = mod
	in.alloc = mod.ExportedFunction(exportAlloc)
	in.call = mod.ExportedFunction(exportCall)
	if err := m.adopt(ctx, in); err != nil {
		return nil, err
	}
	return in, nil
}

// newShell returns an instance's host side (memory allocator, captured
// output, random source, interruptible sleep) and the WASI module config
// that wires it in. Both loaders instantiate with it. The instance's
// memories are charged to the account ctx carries (the pool reserves one
// before it makes an instance), or to a new one.
func (m *Module) newShell(ctx context.Context) (*instance, wazero.ModuleConfig) {
	acct := m.rt.budget.accountFor(ctx)
	in := &instance{
		random: newGuestRandom(m.sha256),
		memory: &limitedMemory{limit: m.limits.Memory, acct: acct},
		stdout: &boundedBuffer{limit: m.limits.CaptureBytes},
		stderr: &boundedBuffer{limit: m.limits.CaptureBytes},
	}
	background := context.Background()
	in.callCtx.Store(&background)
	acct.in = in
	config := wazero.NewModuleConfig().
		WithStdout(in.stdout).
		WithStderr(in.stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(in.nanosleep).
		WithRandSource(in.random)
	return in, config
}

// adopt counts an instantiated in among the module's live instances and
// binds its meter; on failure in is closed.
func (m *Module) adopt(ctx context.Context, in *instance) error {
	in.pool = m.pool
	m.pool.live.Add(1)
	var err error
	if in.meter, err = instrument.NewMeter(in.mod, m.instrumented); err != nil {
		in.close(ctx)
		return err
	}
	return nil
}

func (in *instance) nanosleep(ns int64) {
	ctx := *in.callCtx.Load()
	timer := time.NewTimer(time.Duration(ns))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

func (in *instance) close(ctx context.Context) {
	if in.pool != nil {
		in.pool.live.Add(-1)
	}
	if in.ext != nil {
		in.ext.close(ctx)
	} else {
		_ = in.mod.Close(ctx)
	}
	in.memory.acct.close()
}

// evict closes an instance the budget claimed (see budget.pop): it leaves
// its pool's idle list, if it is there; a session that kept it finds its
// account gone at its next call.
func (in *instance) evict() {
	if in.pool != nil {
		in.pool.forget(in)
	}
	in.close(context.Background())
	// A session may hold the instance until its next call or its end (an
	// hour, for an idle HTTP session): drop everything that would pin
	// memory meanwhile. wazero's closed module still references its
	// memory's buffer, so the module goes too.
	in.mod, in.ext, in.globals, in.meter = nil, nil, nil, nil
	in.alloc, in.call = nil, nil
	in.stdout.drop()
	in.stderr.drop()
}

// callAlloc calls warden_alloc, marking the instance as inside it so that
// host functions refuse to serve it meanwhile; the mark is undone however
// the call ends.
func (in *instance) callAlloc(ctx context.Context, size uint64) ([]uint64, error) {
	in.inAlloc++
	defer func() { in.inAlloc-- }()
	return in.alloc.Call(ctx, size)
}

// writeGuest copies data into memory the guest allocates for it and returns
// the packed range. It is used for requests and for host replies; a guest
// that cannot allocate fails the call.
func (in *instance) writeGuest(ctx context.Context, data []byte) uint64 {
	if len(data) == 0 {
		return 0
	}
	results, err := in.callAlloc(ctx, uint64(len(data)))
	if err != nil {
		panic(err) // a trap inside warden_alloc: classified like any other
	}
	ptr := uint32(results[0])
	if ptr == 0 {
		panic(tool.Errorf(tool.KindBadOutput, "warden_alloc(%d) returned 0", len(data)))
	}
	if !in.mod.Memory().Write(ptr, data) {
		panic(tool.Errorf(tool.KindBadOutput, "warden_alloc(%d) returned %d, outside guest memory (%d bytes)",
			len(data), ptr, in.mod.Memory().Size()))
	}
	return uint64(ptr)<<32 | uint64(len(data))
}

// limitedMemory backs a guest's linear memory and refuses to grow it past the
// tool's limit, remembering that it did: that is how a call is known to have
// run out of memory, whatever the guest did next.
type limitedMemory struct {
	buf     []byte
	limit   uint64
	refused atomic.Bool
	// acct is the instance's account with the Runtime's memory budget: the
	// memory's length is charged to it.
	acct *memAccount
}

var _ experimental.MemoryAllocator = (*limitedMemory)(nil)

func (lm *limitedMemory) Allocate(capacity, _ uint64) experimental.LinearMemory {
	lm.buf = make([]byte, 0, min(capacity, lm.limit))
	return lm
}

func (lm *limitedMemory) Reallocate(size uint64) []byte {
	if size > lm.limit {
		lm.refused.Store(true)
		return nil
	}
	if n := uint64(len(lm.buf)); size > n {
		if n == 0 {
			// The declared minimum, at instantiation: wazero cannot be
			// told it is refused (see memAccount.force).
			lm.acct.force(size)
		} else if !lm.acct.grow(size - n) {
			return nil
		}
	}
	if size <= uint64(cap(lm.buf)) {
		// Capacity past the old length was never handed out, so it is zero.
		lm.buf = lm.buf[:size]
		return lm.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(lm.buf))), lm.limit))
	copy(grown, lm.buf)
	lm.buf = grown
	return lm.buf
}

func (lm *limitedMemory) Free() {
	lm.acct.free(uint64(len(lm.buf)))
	lm.buf = nil
}

// boundedBuffer keeps the first limit bytes written to it and counts the rest.
type boundedBuffer struct {
	mu      sync.Mutex
	buf     []byte
	limit   int
	dropped int64
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.limit - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
	} else {
		b.buf = append(b.buf, p[:max(room, 0)]...)
		b.dropped += int64(len(p) - max(room, 0))
	}
	return len(p), nil
}

// drop frees the buffer's memory.
func (b *boundedBuffer) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf, b.dropped = nil, 0
}

// take returns what was captured and empties the buffer.
func (b *boundedBuffer) take() (string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, dropped := string(b.buf), b.dropped
	b.buf, b.dropped = b.buf[:0], 0
	return s, dropped
}
