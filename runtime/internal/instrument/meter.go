package instrument

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// MaxBudget is the largest budget Start honours; larger ones are clamped.
// It leaves room below zero for the watchdog's offset and for overdraft.
const MaxBudget int64 = 1 << 60

// interruptOffset is what the watchdog subtracts from the fuel global: far
// more than any budget, so the guest traps at its next check and the host
// can still recover how much was consumed by adding it back.
const interruptOffset int64 = 1 << 62

// StopReason tells why a call under a Meter stopped early. It describes
// the state after the call; it explains a trap, and is informational if
// the call returned normally (a call may overdraw its fuel by the cost of
// its last straight-line segment and still return).
type StopReason int

const (
	// StopNone: neither fuel, depth nor the watchdog stopped the guest.
	StopNone StopReason = iota
	// StopFuel: the budget was exhausted.
	StopFuel
	// StopDeadline: the context's deadline passed.
	StopDeadline
	// StopCanceled: the context was canceled.
	StopCanceled
	// StopStackOverflow: the call depth exceeded Result.MaxCallDepth.
	StopStackOverflow
)

func (r StopReason) String() string {
	switch r {
	case StopNone:
		return "none"
	case StopFuel:
		return "out of fuel"
	case StopDeadline:
		return "deadline exceeded"
	case StopCanceled:
		return "canceled"
	case StopStackOverflow:
		return "stack overflow"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// Meter drives the globals of one instrumented instance. Start and Charge
// are for the goroutine that calls into the instance; only the watchdog
// Start arms touches the instance from another goroutine.
type Meter struct {
	fuel     api.MutableGlobal
	reserve  api.MutableGlobal
	depth    api.MutableGlobal // nil without a depth bound
	maxDepth uint32
	budget   int64

	// afterFunc arms the watchdog; nil means context.AfterFunc. A test
	// wraps it to see whether stop disarmed the watchdog, which a late
	// cancellation cannot show deterministically.
	afterFunc func(context.Context, func()) (stop func() bool)
	// engineStops is set when the engine itself stops the guest once the
	// context is done (EngineStopsOnDone): Start then arms no watchdog.
	engineStops bool
}

// EngineStopsOnDone tells m that the engine running its instance stops the
// guest itself when a call's context is done (wazero's
// WithCloseOnContextDone, which wazero's interpreter checks with atomics),
// so Start arms no watchdog. On the interpreter the watchdog's stores to
// the fuel globals race, in the Go memory model, with the interpreter's
// own reads and writes of them, which are Go code there; compiled code
// reads them in machine code, where the watchdog's repeated stores are
// the designed interrupt.
func (m *Meter) EngineStopsOnDone() { m.engineStops = true }

// NewMeter binds a Meter to an instance of r.Wasm. The module must have
// been instrumented with Config.Fuel.
func NewMeter(mod api.Module, r *Result) (*Meter, error) {
	if r.FuelGlobal == "" {
		return nil, errors.New("meter: module was instrumented without fuel")
	}
	m := &Meter{maxDepth: r.MaxCallDepth}
	var err error
	if m.fuel, err = mutable(mod, r.FuelGlobal, api.ValueTypeI64); err != nil {
		return nil, err
	}
	if m.reserve, err = mutable(mod, r.ReserveGlobal, api.ValueTypeI64); err != nil {
		return nil, err
	}
	if r.DepthGlobal != "" {
		if m.depth, err = mutable(mod, r.DepthGlobal, api.ValueTypeI32); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func mutable(mod api.Module, name string, t api.ValueType) (api.MutableGlobal, error) {
	g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
	if !ok || g.Type() != t {
		return nil, fmt.Errorf("meter: module %q has no mutable %s global %q", mod.Name(), api.ValueTypeName(t), name)
	}
	return g, nil
}

// Start sets the fuel to budget (clamped to [0, MaxBudget]), resets the
// call depth and, if ctx can end (and EngineStopsOnDone was not set: the
// interpreter then stops the call itself), arms a watchdog: when ctx is done it
// drives the fuel and the reserve far negative so the guest traps at its
// next function entry or, in a loop, at its next refill (within
// FuelSlice units). Call stop exactly once, after the guest
// call returned; it disarms the watchdog (waiting for it if it is
// running) and reports the fuel consumed and the reason the guest stopped.
func (m *Meter) Start(ctx context.Context, budget int64) (stop func() (consumed int64, reason StopReason)) {
	budget = min(max(budget, 0), MaxBudget)
	m.budget = budget
	slice := min(budget, FuelSlice)
	m.fuel.Set(uint64(slice))
	m.reserve.Set(uint64(budget - slice))
	if m.depth != nil {
		m.depth.Set(0)
	}
	var w *watchdog
	if ctx.Done() != nil && !m.engineStops {
		w = &watchdog{globals: [2]api.MutableGlobal{m.reserve, m.fuel}, done: make(chan struct{}), exited: make(chan struct{})}
		arm := m.afterFunc
		if arm == nil {
			arm = context.AfterFunc
		}
		w.disarm = arm(ctx, w.run)
	}
	return func() (int64, StopReason) {
		fired := false
		if w != nil {
			if !w.disarm() { // run started (or is about to): stop it and wait
				close(w.done)
				<-w.exited
			}
			fired = w.fired.Load()
		}
		left := unoffset(m.fuel) + unoffset(m.reserve)
		consumed := budget - left
		switch {
		case fired && errors.Is(ctx.Err(), context.DeadlineExceeded):
			return consumed, StopDeadline
		case fired:
			return consumed, StopCanceled
		case left < 0:
			return consumed, StopFuel
		case m.depth != nil && uint32(m.depth.Get()) > m.maxDepth:
			return consumed, StopStackOverflow
		}
		return consumed, StopNone
	}
}

// unoffset reads g, removing the watchdog's offset if it was applied.
func unoffset(g api.MutableGlobal) int64 {
	v := int64(g.Get())
	if v < -interruptOffset/2 {
		v += interruptOffset
	}
	return v
}

// Charge takes n units of fuel on behalf of a host function. It does not
// trap: the guest does, at its next check, if fuel plus reserve went
// negative.
func (m *Meter) Charge(n int64) {
	m.fuel.Set(uint64(int64(m.fuel.Get()) - n))
}

// Remaining is the fuel left (negative when exhausted or interrupted).
func (m *Meter) Remaining() int64 { return int64(m.fuel.Get()) + int64(m.reserve.Get()) }

type watchdog struct {
	globals [2]api.MutableGlobal // reserve, fuel
	disarm  func() bool
	done    chan struct{}
	exited  chan struct{}
	fired   atomic.Bool
}

// run interrupts the guest by driving fuel and reserve far negative. The
// reserve changes only when the guest refills, so that store sticks and
// the guest traps at its next refill, within FuelSlice. The fuel makes it
// trap at its next check, but the guest updates it with a plain
// read-modify-write, so a store landing between its read and its write is
// lost: run repeats the stores until stop, with a short backoff, and only
// where the value is not already interrupted.
func (w *watchdog) run() {
	defer close(w.exited)
	w.fired.Store(true)
	wait := 50 * time.Microsecond
	for {
		for _, g := range w.globals {
			if v := int64(g.Get()); v > -interruptOffset/2 {
				g.Set(uint64(v - interruptOffset))
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-w.done:
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, 10*time.Millisecond)
	}
}
