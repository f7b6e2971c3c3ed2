package guest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/warden-run/warden/runtime/internal/cowmem"
	"github.com/warden-run/warden/runtime/internal/instrument"
	"github.com/warden-run/warden/tool"
)

// Instance is one instantiation of a module, used by one call at a time.
// Its fields are the host side every loader shares: the call path, the
// host functions and the snapshot read and drive them the same way
// whatever kind of module the instance runs.
type Instance struct {
	// Mod is the module the instrumentation pass rewrote: the one whose
	// memory, globals and fuel the host drives (for an Extism plugin, its
	// main module).
	Mod api.Module
	// Alloc and Call are the native ABI's warden_alloc and warden_call,
	// looked up once; nil for loaders that do not call them.
	Alloc, Call    api.Function
	Memory         *LimitedMemory
	Stdout, Stderr *BoundedBuffer
	// CallCtx is the context of the call running on this instance, so that
	// a guest asleep in poll_oneoff wakes when its call is cancelled.
	CallCtx atomic.Pointer[context.Context]
	// Globals caches the exported mutable globals a snapshot restores.
	Globals []api.MutableGlobal
	// Meter drives the instance's fuel and call-depth globals.
	Meter *instrument.Meter
	// Random is the instance's WASI random source.
	Random *Random
	// InAlloc is non-zero while the host runs warden_alloc: host functions
	// refuse to serve then (StateFrom).
	InAlloc int
	// Own is the loader's own part of the instance (an Extism plugin's
	// SDK instance); when set, Close closes it instead of Mod.
	Own interface{ Close(context.Context) error }
	// Code is the compiled code the instance was made from, for an engine
	// whose code changes under its instances (the native engine's tiers):
	// the pool retires an instance whose code is no longer the newest.
	Code any
}

// Random is an instance's WASI random source. While the guest
// initializes, it is a ChaCha8 stream seeded by the module's digest: the Go
// runtime draws its hash and scheduler seeds there, and everything they
// steer (map layout, probe lengths) then is the same on every load and both
// engines, so fuel per call is deterministic. Once initialized (Settle), it
// is crypto/rand, so a tool generating a key or token at call time gets an
// unpredictable one.
type Random struct {
	settled atomic.Bool
	mu      sync.Mutex
	stream  *mathrand.ChaCha8
}

// NewRandom returns the random source of an instance of the module with
// the given digest.
func NewRandom(moduleDigest string) *Random {
	return &Random{stream: mathrand.NewChaCha8(sha256.Sum256([]byte(moduleDigest)))}
}

func (r *Random) Read(p []byte) (int, error) {
	if r.settled.Load() {
		return rand.Read(p)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stream.Read(p)
}

// Settle switches to crypto/rand for good.
func (r *Random) Settle() { r.settled.Store(true) }

// NewShell returns an instance's host side (memory allocator, captured
// output, random source, interruptible sleep) for a module of the given
// digest and limits, and the WASI module config that wires it in. Every
// loader instantiates with it.
func NewShell(ctx context.Context, digest string, limits Limits) (*Instance, wazero.ModuleConfig) {
	in := &Instance{
		Random: NewRandom(digest),
		Memory: &LimitedMemory{Limit: limits.Memory, Account: AccountFrom(ctx)},
		Stdout: &BoundedBuffer{limit: limits.CaptureBytes},
		Stderr: &BoundedBuffer{limit: limits.CaptureBytes},
	}
	background := context.Background()
	in.CallCtx.Store(&background)
	config := wazero.NewModuleConfig().
		WithStdout(in.Stdout).
		WithStderr(in.Stderr).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(in.nanosleep).
		WithRandSource(in.Random)
	return in, config
}

// Bind binds in's meter to the globals the instrumentation pass added; on
// failure in is closed.
func (in *Instance) Bind(ctx context.Context, instrumented *instrument.Result) error {
	var err error
	if in.Meter, err = instrument.NewMeter(in.Mod, instrumented); err != nil {
		in.Close(ctx)
		return err
	}
	return nil
}

// nanosleep is the instance's WASI sleep (poll_oneoff's clock events). It
// ends early when the call's context does, and then does not return to the
// guest: a guest woken by its deadline would otherwise run on, and could
// answer, as if it had slept (StopIfDone).
func (in *Instance) nanosleep(ns int64) {
	ctx := *in.CallCtx.Load()
	timer := time.NewTimer(time.Duration(ns))
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	StopIfDone(ctx, "poll_oneoff (a sleep)")
}

// Close closes the instance's modules and frees its linear memory.
//
// The memory is freed here, not only by wazero: on the interpreter tier a
// call whose context ends is stopped by a goroutine of wazero's
// (WithCloseOnContextDone), which marks the module closed and leaves its
// resources to the module's next call. When that goroutine marks it after
// the call's last check, Mod.Close finds the module closed already and
// releases nothing, and the memory (a mapping of the snapshot, or a Go
// slice of up to the tool's limit) would wait for a garbage collection.
// Free is idempotent, so the usual path, where wazero freed it, costs
// nothing more (TestCloseFreesMemoryAfterEngineClosed).
func (in *Instance) Close(ctx context.Context) {
	if in.Own != nil {
		_ = in.Own.Close(ctx)
	} else {
		_ = in.Mod.Close(ctx)
	}
	in.Memory.Free()
}

// CallAlloc calls warden_alloc, marking the instance as inside it so that
// host functions refuse to serve it meanwhile; the mark is undone however
// the call ends.
func (in *Instance) CallAlloc(ctx context.Context, size uint64) ([]uint64, error) {
	in.InAlloc++
	defer func() { in.InAlloc-- }()
	return in.Alloc.Call(ctx, size)
}

// WriteGuest copies data into memory the guest allocates for it and returns
// the packed range. It is used for requests and for host replies; a guest
// that cannot allocate fails the call.
func (in *Instance) WriteGuest(ctx context.Context, data []byte) uint64 {
	if len(data) == 0 {
		return 0
	}
	results, err := in.CallAlloc(ctx, uint64(len(data)))
	if err != nil {
		panic(err) // a trap inside warden_alloc: classified like any other
	}
	ptr := uint32(results[0])
	if ptr == 0 {
		panic(tool.Errorf(tool.KindBadOutput, "warden_alloc(%d) returned 0", len(data)))
	}
	if !in.Mod.Memory().Write(ptr, data) {
		panic(tool.Errorf(tool.KindBadOutput, "warden_alloc(%d) returned %d, outside guest memory (%d bytes)",
			len(data), ptr, in.Mod.Memory().Size()))
	}
	return uint64(ptr)<<32 | uint64(len(data))
}

// Account is charged with the bytes of an instance's linear memories: the
// runtime's instance memory budget, which the loaders do not know.
type Account interface {
	// Force charges n bytes that cannot be refused.
	Force(n uint64)
	// Grow charges delta more bytes, or reports false to refuse them.
	Grow(delta uint64) bool
	// Free returns n bytes.
	Free(n uint64)
}

type accountKey struct{}

// WithAccount returns ctx carrying the account the instance made with it
// is charged to (see NewShell).
func WithAccount(ctx context.Context, a Account) context.Context {
	return context.WithValue(ctx, accountKey{}, a)
}

// AccountFrom returns the account ctx carries, or nil.
func AccountFrom(ctx context.Context) Account {
	a, _ := ctx.Value(accountKey{}).(Account)
	return a
}

// LimitedMemory backs a guest's linear memory and refuses to grow it past the
// tool's limit, remembering that it did: that is how a call is known to have
// run out of memory, whatever the guest did next.
type LimitedMemory struct {
	buf   []byte
	Limit uint64
	// Account, if set, is charged with the memory's length (the runtime's
	// instance memory budget): growth it refuses is refused.
	Account Account
	// Refused is set when a growth was refused; the call path clears it
	// before each call.
	Refused atomic.Bool
	// Cow, when set before instantiation, is the memory instead of a Go
	// slice: a copy-on-write mapping of the module's snapshot
	// (Snapshot.NewMemory), which Snapshot.Restore resets.
	Cow *cowmem.Memory
	// freed is set by the first Free: wazero's and Instance.Close's.
	freed atomic.Bool
}

var _ experimental.MemoryAllocator = (*LimitedMemory)(nil)

func (lm *LimitedMemory) Allocate(capacity, _ uint64) experimental.LinearMemory {
	if lm.Cow == nil {
		lm.buf = make([]byte, 0, min(capacity, lm.Limit))
	}
	return lm
}

func (lm *LimitedMemory) Reallocate(size uint64) []byte {
	if size > lm.Limit {
		lm.Refused.Store(true)
		return nil
	}
	if lm.Account != nil {
		if n := lm.Size(); size > n {
			if n == 0 {
				// The declared minimum, at instantiation: wazero cannot be
				// told it is refused.
				lm.Account.Force(size)
			} else if !lm.Account.Grow(size - n) {
				return nil
			}
		}
	}
	if lm.Cow != nil {
		return lm.Cow.Reallocate(size)
	}
	if size <= uint64(cap(lm.buf)) {
		// Capacity past the old length was never handed out, so it is zero.
		lm.buf = lm.buf[:size]
		return lm.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(lm.buf))), lm.Limit))
	copy(grown, lm.buf)
	lm.buf = grown
	return lm.buf
}

func (lm *LimitedMemory) Free() {
	if !lm.freed.CompareAndSwap(false, true) {
		return
	}
	if lm.Account != nil {
		lm.Account.Free(lm.Size())
	}
	lm.buf = nil
	if lm.Cow != nil {
		lm.Cow.Free()
	}
}

// Size is the linear memory's length in bytes: what the instance holds.
func (lm *LimitedMemory) Size() uint64 {
	if lm.Cow != nil {
		return lm.Cow.Size()
	}
	return uint64(len(lm.buf))
}

// BoundedBuffer keeps the first limit bytes written to it and counts the rest.
type BoundedBuffer struct {
	mu      sync.Mutex
	buf     []byte
	limit   int
	dropped int64
}

func (b *BoundedBuffer) Write(p []byte) (int, error) {
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

// Take returns what was captured and empties the buffer.
func (b *BoundedBuffer) Take() (string, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, dropped := string(b.buf), b.dropped
	b.buf, b.dropped = b.buf[:0], 0
	return s, dropped
}
