package runtime

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dustin/go-humanize"

	"github.com/warden-run/warden/internal/limits"
	"github.com/warden-run/warden/runtime/internal/guest"
)

// DefaultMaxInstanceMemory is the default of Options.MaxInstanceMemory.
const DefaultMaxInstanceMemory = limits.DefaultMaxInstanceMemory

// freshStateEvicted is tool.Outcome.FreshState (tool.MetaFreshState on the
// wire) when the session's instance was evicted to keep all instances within
// the memory budget.
const freshStateEvicted = "evicted: server.max_instance_memory"

// InstanceMemory reports the instance memory budget (Runtime.InstanceMemory).
type InstanceMemory struct {
	// Limit is the budget, Options.MaxInstanceMemory.
	Limit uint64 `json:"limit"`
	// Used is what all instances are charged now: their linear memory, and
	// what instances being made have reserved.
	Used uint64 `json:"used"`
	// Peak is the most Used has been.
	Peak uint64 `json:"peak"`
	// Idle and Parked count the instances that may be evicted: idle pooled
	// ones, and those kept by a session between its calls.
	Idle   int `json:"idle"`
	Parked int `json:"parked"`
	// Evictions counts the instances closed to make room; Refusals counts
	// the calls' requests (new instances or growth) refused because nothing
	// could be evicted.
	Evictions uint64 `json:"evictions"`
	Refusals  uint64 `json:"refusals"`
}

// InstanceMemory reports what the instances of every module loaded by r are
// charged against the budget.
func (r *Runtime) InstanceMemory() InstanceMemory { return r.budget.stats() }

// budget bounds the linear memory of every instance of a Runtime, all
// modules together. Each instance has a memAccount, charged as its memories
// grow (limitedMemory.Reallocate). When a charge would pass the limit, the
// budget evicts: idle pooled instances first (least recently idled first),
// then instances sessions keep between calls (least recently used first).
// An instance running a call is never evicted. Both lists are
// container/lists, so every step is O(1).
//
// Lock order: a pool's mu may be held when the budget's mu is taken, never
// the other way round; the evictor drops the budget's mu before it touches
// the victim's pool.
type budget struct {
	limit uint64

	mu        sync.Mutex
	used      uint64
	peak      uint64
	evictable uint64    // sum of the charges of the accounts in idle and parked
	idle      list.List // of *memAccount, least recently idled first
	parked    list.List // of *memAccount, least recently used first
	evictions uint64
	refusals  uint64
	// preparing counts the bytes reserved by spares being made: a call
	// that finds no room waits for them to become idle (and evictable)
	// rather than fail; spareDone is closed and replaced whenever one is.
	preparing uint64
	spareDone chan struct{}
	// claimed is the memory of victims being evicted, until their evictor
	// retakes mu: a spare, which must never cause an eviction, does not
	// get that room; without this it could take what an eviction freed
	// while mu was dropped, and the evictor would evict one more session
	// to replace it. Calls may take it, as before: every call needing
	// room may evict.
	claimed uint64
	// evict closes a victim the evictor claimed (with mu not held); a
	// test seam, instance.evict otherwise.
	evict func(*memAccount)
}

func newBudget(limit uint64) *budget {
	if limit == 0 {
		limit = DefaultMaxInstanceMemory
	}
	return &budget{limit: limit, spareDone: make(chan struct{}), evict: func(a *memAccount) { a.in.evict() }}
}

type acctState uint8

const (
	// acctBusy: owned by whoever holds the instance (a call, its maker,
	// a reset). Not evictable.
	acctBusy acctState = iota
	// acctIdle: in its pool's idle list.
	acctIdle
	// acctParked: kept by a session between its calls.
	acctParked
	// acctGone: closed, or claimed by the evictor to be closed.
	acctGone
)

// memAccount is what one instance is charged. Every field but refused is
// guarded by budget.mu.
type memAccount struct {
	b *budget
	// in is the instance, once instantiated; the evictor closes it.
	in *instance
	// charged is what the budget counts for the instance: at least held,
	// and before instantiation the reservation.
	charged uint64
	// held is the linear memory the instance's memories hold.
	held  uint64
	state acctState
	elem  *list.Element
	// spare is set while the instance is made ahead of any call: it never
	// evicts anything, for the sake of a call that may never come.
	spare bool
	// prepared is what the spare counts in budget.preparing until it is
	// parked or closed.
	prepared uint64
	// refused is set when a growth was refused for the budget, so that
	// the call fails as unavailable rather than out of memory.
	refused atomic.Bool
}

// budgetError is a refusal: nothing could be evicted to make room.
type budgetError struct {
	need, limit, busy uint64
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("%s more instance memory needed, but the budget of %s (server.max_instance_memory) is held by instances running calls (%s); raise server.max_instance_memory in the config to allow more",
		humanize.IBytes(e.need), humanize.IBytes(e.limit), humanize.IBytes(e.busy))
}

// open returns an account with need bytes reserved, evicting to make room
// (a spare evicts nothing). A call that finds no room while spares are
// being made waits for them, as long as ctx allows.
func (b *budget) open(ctx context.Context, need uint64, spare bool) (*memAccount, error) {
	a := &memAccount{b: b, spare: spare}
	for {
		b.mu.Lock()
		wait, err := b.makeRoom(need, !spare)
		if err == nil {
			a.charged = need
			if spare {
				a.prepared = need
				b.preparing += need
			}
			b.mu.Unlock()
			return a, nil
		}
		b.mu.Unlock()
		if wait == nil {
			return nil, err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, err
		}
	}
}

// makeRoom charges need bytes to the budget, evicting if allowed. Called
// with b.mu held; it drops and retakes it around each eviction. On a
// refusal, wait is non-nil when spares being made may free room soon.
func (b *budget) makeRoom(need uint64, evict bool) (wait <-chan struct{}, err error) {
	for {
		// A spare (evict false) must also leave alone the room evictions
		// under way are freeing for their calls; a call may take it, as
		// the call that evicted for it would have.
		if b.used+need <= b.limit && (evict || b.used+b.claimed+need <= b.limit) {
			b.used += need
			b.peak = max(b.peak, b.used)
			return nil, nil
		}
		if !evict || b.used-b.evictable+need > b.limit {
			// Evicting everything would not be enough: evict nothing.
			// (A spare that does not fit is simply not made.)
			if evict {
				b.refusals++
			}
			err := &budgetError{need: need, limit: b.limit, busy: b.used - b.evictable}
			if evict && b.preparing > 0 {
				return b.spareDone, err
			}
			return nil, err
		}
		victim := b.pop()
		freed := victim.charged
		b.claimed += freed
		b.mu.Unlock()
		b.evict(victim)
		b.mu.Lock()
		b.claimed -= freed
	}
}

// pop claims the next victim: the least recently idled instance, else the
// least recently used session instance. Called with b.mu held.
func (b *budget) pop() *memAccount {
	l := &b.idle
	if l.Len() == 0 {
		l = &b.parked
	}
	a := l.Remove(l.Front()).(*memAccount)
	a.elem = nil
	a.state = acctGone
	b.evictable -= a.charged
	b.evictions++
	return a
}

// grow charges delta more bytes of linear memory. It reports false when
// the budget refuses them.
func (a *memAccount) grow(delta uint64) bool {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a.held += delta
	if a.held <= a.charged {
		return true // within the reservation
	}
	extra := a.held - a.charged
	if _, err := b.makeRoom(extra, !a.spare); err != nil {
		a.held -= delta
		a.refused.Store(true)
		return false
	}
	a.charged += extra
	return true
}

// force charges delta bytes whatever the budget: for a memory's declared
// minimum at instantiation, which wazero cannot be told is refused (the
// reservation made before instantiating covers it in practice).
func (a *memAccount) force(delta uint64) {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a.held += delta
	if a.held > a.charged {
		b.used += a.held - a.charged
		b.peak = max(b.peak, b.used)
		a.charged = a.held
	}
}

// free uncharges a memory's bytes when it is freed.
func (a *memAccount) free(n uint64) {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	a.held -= min(n, a.held)
}

// settle ends the reservation of a ready instance: from now on it is
// charged what it holds.
func (a *memAccount) settle() {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.state != acctGone && a.charged > a.held {
		b.used -= a.charged - a.held
		a.charged = a.held
	}
}

// park makes the instance evictable: idle in its pool, or kept by a session
// between calls. It reports false when the account is gone.
func (a *memAccount) park(state acctState) bool {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.state != acctBusy {
		return false
	}
	a.state = state
	if state == acctIdle {
		a.elem = b.idle.PushBack(a)
	} else {
		a.elem = b.parked.PushBack(a)
	}
	b.evictable += a.charged
	if a.spare {
		// A spare is ready: a call waiting for room may evict it now.
		a.spare = false
		b.unprepare(a)
	}
	return true
}

// take claims an idle or parked instance for a call. It reports false when
// the evictor claimed it first (or it is already busy).
func (a *memAccount) take() bool {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.state != acctIdle && a.state != acctParked {
		return false
	}
	if a.state == acctIdle {
		b.idle.Remove(a.elem)
	} else {
		b.parked.Remove(a.elem)
	}
	a.elem = nil
	a.state = acctBusy
	b.evictable -= a.charged
	a.spare = false
	return true
}

// close uncharges the account for good. It may be called more than once.
func (a *memAccount) close() {
	b := a.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if a.elem != nil {
		if a.state == acctIdle {
			b.idle.Remove(a.elem)
		} else {
			b.parked.Remove(a.elem)
		}
		a.elem = nil
		b.evictable -= a.charged
	}
	if a.prepared > 0 {
		b.unprepare(a) // a spare that failed before it was ready
	}
	a.state = acctGone
	b.used -= a.charged
	a.charged, a.held = 0, 0
}

// unprepare ends a spare's preparation and wakes the calls waiting for it.
// Called with b.mu held.
func (b *budget) unprepare(a *memAccount) {
	b.preparing -= a.prepared
	a.prepared = 0
	close(b.spareDone)
	b.spareDone = make(chan struct{})
}

func (b *budget) stats() InstanceMemory {
	b.mu.Lock()
	defer b.mu.Unlock()
	return InstanceMemory{Limit: b.limit, Used: b.used, Peak: b.peak, Idle: b.idle.Len(), Parked: b.parked.Len(),
		Evictions: b.evictions, Refusals: b.refusals}
}

// withAccount returns ctx carrying a, for the loader that makes an
// instance with it (guest.NewShell).
func withAccount(ctx context.Context, a *memAccount) context.Context {
	return guest.WithAccount(ctx, a)
}

// memAccount is the loaders' guest.Account.
var _ guest.Account = (*memAccount)(nil)

func (a *memAccount) Force(n uint64)         { a.force(n) }
func (a *memAccount) Grow(delta uint64) bool { return a.grow(delta) }
func (a *memAccount) Free(n uint64)          { a.free(n) }
