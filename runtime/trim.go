package runtime

import (
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTrimDelay is how long after instances close the Runtime gives
// their memory back to the OS (Options.TrimDelay).
const DefaultTrimDelay = 2 * time.Second

// trimmer gives the memory of closed instances back to the OS. A closed
// instance's linear memory is unmapped at once (cowmem), but everything
// else it held (wazero's module instance, its tables and globals, a Go
// slice memory, the session's buffers) is Go heap, and the Go runtime
// returns freed heap to the OS only as its heap goal falls, which needs a
// garbage collection: after a burst of sessions a server that then idles
// allocates nothing, runs no collection, and keeps the burst's peak
// resident for minutes (measured: +228 MB after 200 sessions, 30 s later;
// docs/performance.md). So once no instance has closed for the delay,
// freeOS (debug.FreeOSMemory: a collection, then returning what is free)
// runs once. Every close restarts the delay: under steady load, when the
// heap is in use and collections run anyway, it does not run at all
// (running it every few seconds under load cost the load a third more
// time, as the heap it gave back was faulted in again).
type trimmer struct {
	delay  time.Duration
	freeOS func()
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	trims  atomic.Int64
}

func newTrimmer(delay time.Duration, freeOS func()) *trimmer {
	if freeOS == nil {
		freeOS = debug.FreeOSMemory
	}
	if delay == 0 {
		delay = DefaultTrimDelay
	}
	t := &trimmer{delay: delay, freeOS: freeOS, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	if delay < 0 {
		close(t.done) // never trims
		return t
	}
	go t.run()
	return t
}

// closed notes that an instance closed.
func (t *trimmer) closed() {
	select {
	case t.kick <- struct{}{}:
	default: // a trim is already due
	}
}

func (t *trimmer) run() {
	defer close(t.done)
	for {
		select {
		case <-t.stop:
			return
		case <-t.kick:
		}
		// Wait for the burst to end: every close restarts the delay.
		timer := time.NewTimer(t.delay)
	quiet:
		for {
			select {
			case <-t.stop:
				timer.Stop()
				return
			case <-t.kick:
				timer.Reset(t.delay)
			case <-timer.C:
				break quiet
			}
		}
		t.freeOS()
		t.trims.Add(1)
	}
}

// close stops the trimmer and waits for a trim under way.
func (t *trimmer) close() {
	t.once.Do(func() { close(t.stop) })
	<-t.done
}
